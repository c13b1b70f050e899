// `__adamant*` names are the generated entry's locals.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] __adamant_new: f32) -> f32 {
    p - g * __adamant_new
}

fn main() {}
