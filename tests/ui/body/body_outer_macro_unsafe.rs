// A macro defined outside the kernel expands to an `unsafe` block that writes memory; the body
// only shows the invocation, so every invocation is rejected.
use adamant_device::optimizer_kernel;

#[allow(unused_macros)]
macro_rules! poke {
    ($v:expr) => {
        unsafe { *(0x1000 as *mut f32) = $v }
    };
}

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    poke!(p);
    p - lr * g
}

fn main() {}
