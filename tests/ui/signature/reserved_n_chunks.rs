// `n_chunks` is the multi-tensor entry's chunk count.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] n_chunks: u32) -> f32 {
    p - g / n_chunks as f32
}

fn main() {}
