// A macro in type position expands to tokens the check cannot see, like any other macro.
use adamant_device::optimizer_kernel;

#[allow(unused_macros)]
macro_rules! scalar {
    () => {
        f32
    };
}

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    let step: scalar!() = lr * g;
    p - step
}

fn main() {}
