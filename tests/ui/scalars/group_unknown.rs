// A #[group] names a scalar group; a path that names nothing is an error at the path.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[group] s: NoSuchGroup) -> f32 {
    p - s.lr * g
}

fn main() {}
