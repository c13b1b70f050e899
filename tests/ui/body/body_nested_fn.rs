// A plain helper fn in the body: define it next to the kernel instead.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    fn step(g: f32, lr: f32) -> f32 {
        lr * g
    }
    p - step(g, lr)
}

fn main() {}
