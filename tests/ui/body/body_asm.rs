// Inline assembly can store to any address.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    asm!("st.global.f32 [%rd1], %f1;");
    p - lr * g
}

fn main() {}
