// Module-level assembly in the body could declare an unclamped `.entry` of its own.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    core::arch::global_asm!("");
    p - lr * g
}

fn main() {}
