// 16-bit moments rounded to nearest lose every update smaller than half their step: bf16 state
// must be stochastic.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn momentum(#[param] p: f32, #[grad] g: f32, #[state(bf16)] m: &mut f32, #[hyper] lr: f32) -> f32 {
    *m = 0.9 * *m + g;
    p - lr * *m
}

fn main() {}
