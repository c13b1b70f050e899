// `#[param(bf16, remainder)] p` adds the buffer `p_remainder`: an argument of that name clashes.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn momentum(
    #[param(bf16, remainder)] p: f32,
    #[grad] g: f32,
    #[state] p_remainder: &mut f32,
    #[hyper] lr: f32,
) -> f32 {
    *p_remainder = 0.9 * *p_remainder + g;
    p - lr * *p_remainder
}

fn main() {}
