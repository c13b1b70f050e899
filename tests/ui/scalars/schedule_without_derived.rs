// A schedule computes the kernel's `#[derived]` scalars; a kernel with none has nothing for it
// to compute (a schedule that silently did nothing would read as if it applied).
use adamant_device::optimizer_kernel;

fn schedule(_t: u32, _h: &sgd::Hyper, _d: &sgd::Derived) -> sgd::Derived {
    sgd::Derived {}
}

#[optimizer_kernel(schedule = schedule)]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {}
