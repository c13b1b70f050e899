// `r#weight_clamp_max_abs` is the same identifier as the bound.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] r#weight_clamp_max_abs: f32) -> f32 {
    p - g
}

fn main() {}
