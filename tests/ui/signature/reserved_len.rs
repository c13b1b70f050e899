// `len` is the entry's element count.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] len: u32) -> f32 {
    p - g / len as f32
}

fn main() {}
