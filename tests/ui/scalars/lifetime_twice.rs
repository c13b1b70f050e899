// A scalar has one lifetime: `#[hyper]` (the host's, between steps) and `#[step]` (a shared
// record field) at once would leave the entries two places to read it from.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] #[step] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
