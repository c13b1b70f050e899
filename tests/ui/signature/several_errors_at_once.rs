// Every independent error of a kernel is reported in one pass: the attribute, the argument and
// the body each get their own error.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
#[inline(never)]
pub fn sgd(#[param] p: f32, #[input] g: f64, #[hyper] lr: f32) -> f32 {
    let step = core::hint::black_box(lr);
    if core::matches!(p, x if x.is_nan()) {
        return p;
    }
    p - step * g as f32
}

fn main() {}
