// An export hidden in cfg_attr on a nested item is found too.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    #[cfg_attr(all(), no_mangle)]
    pub fn sgd_unclamped(p: f32) -> f32 {
        p
    }
    p - lr * g
}

fn main() {}
