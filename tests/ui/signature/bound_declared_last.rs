// The author cannot declare the bound (last, where the macro puts it).
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32, #[hyper] weight_clamp_max_abs: f32) -> f32 {
    p.clamp(-weight_clamp_max_abs, weight_clamp_max_abs) - lr * g
}

fn main() {}
