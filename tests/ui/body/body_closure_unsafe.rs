// An `unsafe` block inside a closure is found too.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    let poke = |v: f32| unsafe { *(0x1000 as *mut f32) = v };
    poke(p);
    p - lr * g
}

fn main() {}
