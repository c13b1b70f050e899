// A nested `unsafe fn` could write through a raw pointer; calling it needs `unsafe`, but
// defining it is rejected already.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    #[allow(dead_code)]
    unsafe fn poke(at: usize, v: f32) {
        *(at as *mut f32) = v;
    }
    p - lr * g
}

fn main() {}
