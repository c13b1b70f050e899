// An exported item nested deep in the body is found too.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    let step = {
        #[unsafe(export_name = "sgd_unclamped")]
        fn step(g: f32, lr: f32) -> f32 {
            lr * g
        }
        step(g, lr)
    };
    p - step
}

fn main() {}
