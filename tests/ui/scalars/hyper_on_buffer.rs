// A lifetime is a scalar's: a buffer is device memory, read where it is at every launch.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[hyper] #[input] g: f32) -> f32 {
    p - g
}

fn main() {}
