// `r#n_chunks` is the same identifier as `n_chunks`, reserved however it is spelled or declared.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn scale(#[param] p: f32, #[uniform_ptr(default = 1.0)] r#n_chunks: f32) -> f32 {
    p * r#n_chunks
}

fn main() {}
