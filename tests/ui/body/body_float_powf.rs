// `f32::powf` is std-only: it compiles on the host and fails in the PTX build. The error names
// the prelude's `pow` and covers `.powf(..)`, not the receiver.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * (g * 2.0).powf(1.5)
}

fn main() {}
