// The ABI written as a raw string is still "gpu-kernel": the check reads the string's value.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    #[allow(dead_code)]
    unsafe extern r"gpu-kernel" fn raw_sgd(p: *mut f32, g: *const f32, lr: f32) {
        *p -= lr * *g;
    }
    p - lr * g
}

fn main() {}
