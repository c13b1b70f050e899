// A macro in pattern position.
use adamant_device::optimizer_kernel;

#[allow(unused_macros)]
macro_rules! zero {
    () => {
        0
    };
}

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] step: u32) -> f32 {
    match step {
        zero!() => p,
        _ => p - g,
    }
}

fn main() {}
