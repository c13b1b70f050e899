// Each rule is one branch: naming one twice is refused, at the second.
use adamant_device::{fused_optimizer, optimizer_kernel};

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fused_optimizer! {
    pub my_set = [sgd, sgd];
}

fn main() {}
