// A `cfg` in the body would make the device math differ from the host build the CPU tests run.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    let g = g * 1.0e30;
    p - lr * g
}

fn main() {}
