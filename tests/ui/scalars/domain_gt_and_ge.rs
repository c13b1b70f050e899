// `gt` and `ge` both bound the value from below: one lower bound per scalar.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] #[domain(gt = 0.0, ge = 0.0)] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
