// A read-write buffer must be declared #[state].
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn momentum(#[param] p: f32, #[input] g: f32, m: &mut f32, #[hyper] lr: f32) -> f32 {
    *m = 0.9 * *m + g;
    p - lr * *m
}

fn main() {}
