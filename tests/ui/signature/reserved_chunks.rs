// `chunks` is the multi-tensor entry's chunk table.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] chunks: f32) -> f32 {
    p - chunks
}

fn main() {}
