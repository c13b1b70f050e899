// The default is a literal (it is also written into the descriptor).
use adamant_device::optimizer_kernel;

const ONE: f32 = 1.0;

#[optimizer_kernel]
pub fn sgd(
    #[param] p: f32,
    #[input] g: f32,
    #[uniform_ptr(default = ONE)] scale: f32,
    #[hyper] lr: f32,
) -> f32 {
    p - lr * g * scale
}

fn main() {}
