// The author cannot turn the bound into a defaulted uniform pointer.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(
    #[param] p: f32,
    #[input] g: f32,
    #[hyper] lr: f32,
    #[uniform_ptr(default = 0.0)] weight_clamp_max_abs: f32,
) -> f32 {
    p - lr * g
}

fn main() {}
