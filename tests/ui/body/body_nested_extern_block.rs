// An extern block in the body would import a symbol into the PTX module (`.extern .func`).
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    extern "C" {
        fn unclamped_store(p: f32);
    }
    p - lr * g
}

fn main() {}
