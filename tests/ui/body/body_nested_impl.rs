// An impl block in the body (here on a type defined outside) is an item, rejected like any.
use adamant_device::optimizer_kernel;

pub struct Step(pub f32);

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    impl Step {
        fn apply(&self, p: f32) -> f32 {
            p - self.0
        }
    }
    Step(lr * g).apply(p)
}

fn main() {}
