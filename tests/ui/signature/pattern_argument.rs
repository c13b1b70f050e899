// Arguments are plain names (the macro forwards them by name).
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, (lr, wd): (f32, f32)) -> f32 {
    p - lr * (g + wd * p)
}

fn main() {}
