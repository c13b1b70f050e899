// `gt = 1.0, le = 1.0` excludes the only value it would allow.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] #[domain(gt = 1.0, le = 1.0)] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
