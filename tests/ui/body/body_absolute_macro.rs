// Even an absolute path to a standard macro is refused: the allow-list (ALLOWED_MACROS) is
// empty.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    if ::core::matches!(g, x if x.is_nan()) {
        return p;
    }
    p - lr * g
}

fn main() {}
