// `asm!` reached by its full path is refused like the bare name.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    core::arch::asm!("st.global.f32 [%rd1], %f1;");
    p - lr * g
}

fn main() {}
