// An exported item nested in the body would be a second, unclamped entry.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    #[no_mangle]
    pub fn sgd_unclamped(p: f32) -> f32 {
        p
    }
    p - lr * g
}

fn main() {}
