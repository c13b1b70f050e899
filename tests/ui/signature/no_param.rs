// Every optimizer kernel updates exactly one parameter buffer.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn momentum_only(#[input] g: f32, #[state] m: &mut f32) -> f32 {
    *m = 0.9 * *m + g;
    *m
}

fn main() {}
