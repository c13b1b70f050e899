// A `#[derived]` scalar is computed on the device from the step number by the kernel's
// schedule: without one, nothing would ever compute it.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn decayed(
    #[param] p: f32,
    #[input] g: f32,
    #[hyper] lr: f32,
    #[derived(init = 1.0)] decay: f32,
) -> f32 {
    p - lr * decay * g
}

fn main() {}
