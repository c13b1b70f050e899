// `f32::clamp` asserts `lo <= hi` (a NaN bound fails it): on the device, a trap that ends the
// launch. The error names the prelude's `min` and `max`.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32, #[hyper] bound: f32) -> f32 {
    (p - lr * g).clamp(-bound, bound)
}

fn main() {}
