// An `unsafe(..)` attribute on a statement.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    #[unsafe(link_section = ".text")]
    let step = lr * g;
    p - step
}

fn main() {}
