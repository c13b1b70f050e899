// A where clause makes the kernel generic too (the error must not point at the attribute).
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32
where
    f32: Copy,
{
    p - lr * g
}

fn main() {}
