// A uniform pointer is read as one f32.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(
    #[param] p: f32,
    #[input] g: f32,
    #[uniform_ptr(default = 1.0)] scale: u32,
    #[hyper] lr: f32,
) -> f32 {
    p - lr * g * scale as f32
}

fn main() {}
