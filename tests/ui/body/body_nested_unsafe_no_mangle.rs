// `#[unsafe(no_mangle)]` on a nested item: an unsafe attribute, and an export.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    #[unsafe(no_mangle)]
    pub fn sgd_unclamped(p: f32) -> f32 {
        p
    }
    p - lr * g
}

fn main() {}
