// `f32::max` exists on the device but drops a NaN operand (PTX `max.f32`): a NaN weight would
// come out as the other operand. The error names the prelude's NaN-keeping `max`.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    (p - lr * g).max(0.0)
}

fn main() {}
