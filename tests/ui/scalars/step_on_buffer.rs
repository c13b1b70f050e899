// `#[step]` marks a uniform f32 scalar; a buffer element cannot come from the step-state record.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[step] #[input] lr: f32) -> f32 {
    p - lr
}

fn main() {}
