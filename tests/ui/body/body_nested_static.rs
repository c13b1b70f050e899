// A static in the body is memory outside every declared buffer.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    static SCALE: f32 = 1.0;
    p - SCALE * lr * g
}

fn main() {}
