// A module nested in the body is compiled into the PTX module unchecked.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    mod helpers {
        pub fn step(g: f32, lr: f32) -> f32 {
            lr * g
        }
    }
    p - helpers::step(g, lr)
}

fn main() {}
