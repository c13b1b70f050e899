// The author cannot give the bound a default.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(
    #[param] p: f32,
    #[input] g: f32,
    #[hyper] lr: f32,
    #[hyper] #[default(f32::INFINITY)] weight_clamp_max_abs: f32,
) -> f32 {
    p - lr * g
}

fn main() {}
