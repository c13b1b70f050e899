// An export attribute above the macro is seen too.
use adamant_device::optimizer_kernel;

#[no_mangle]
#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
