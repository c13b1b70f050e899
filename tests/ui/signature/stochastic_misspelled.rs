// The only rounding a kernel writes is `stochastic` (to nearest is the default).
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param(bf16, nearest_even)] p: f32, #[grad] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
