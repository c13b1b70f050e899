// A #[uniform_ptr] is read on the device, after every launch check: no domain.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(
    #[param] p: f32,
    #[input] g: f32,
    #[uniform_ptr(default = 1.0)]
    #[domain(ge = 0.0)]
    scale: f32,
) -> f32 {
    p - scale * g
}

fn main() {}
