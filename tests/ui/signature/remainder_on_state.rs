// A remainder is the parameter's companion: a state has none.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn momentum(
    #[param] p: f32,
    #[grad] g: f32,
    #[state(bf16, remainder)] buf: &mut f32,
    #[hyper] lr: f32,
) -> f32 {
    *buf = 0.9 * *buf + g;
    p - lr * *buf
}

fn main() {}
