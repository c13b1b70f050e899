// A u32 scalar takes any value (Domain::ANY); f32 bounds do not apply to it.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] #[domain(ge = 1.0)] step: u32) -> f32 {
    p - g / step as f32
}

fn main() {}
