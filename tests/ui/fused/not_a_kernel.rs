// A rule must be an #[optimizer_kernel]: a plain module with the same name has none of what the
// kernel macro generates.
use adamant_device::fused_optimizer;

pub mod sgd {
    pub fn update(p: f32, g: f32) -> f32 {
        p - g
    }
}

fused_optimizer! {
    pub my_set = [sgd];
}

fn main() {}
