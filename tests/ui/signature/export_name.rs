// Exporting the update under another name would make a second, unclamped entry.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
#[export_name = "sgd_unclamped"]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
