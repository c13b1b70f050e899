// #[state] is `&mut f32`: the macro writes it back.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn momentum(#[param] p: f32, #[input] g: f32, #[state] m: f32, #[hyper] lr: f32) -> f32 {
    p - lr * (0.9 * m + g)
}

fn main() {}
