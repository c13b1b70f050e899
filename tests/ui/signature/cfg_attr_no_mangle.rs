// An export hidden in cfg_attr is rejected like the attribute itself.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
#[cfg_attr(all(), no_mangle)]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
