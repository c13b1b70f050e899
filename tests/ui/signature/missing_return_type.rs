// The kernel returns the new value; the macro stores it.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) {
    let _ = p - lr * g;
}

fn main() {}
