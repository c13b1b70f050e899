// A std-only method called as a path (`f32::exp(x)`): the error names the prelude's `exp` and
// covers the call.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p * f32::exp(-lr * g)
}

fn main() {}
