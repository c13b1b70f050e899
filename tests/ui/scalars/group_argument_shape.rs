// A #[group] argument is `#[group] name: Group`: its fields bring their own lifetimes and
// domains, and a scalar type is no group. Both errors are reported in one pass.
use adamant_device::prelude::*;

#[optimizer_kernel]
pub fn sgd(
    #[param] p: f32,
    #[input] g: f32,
    #[group] #[hyper] adam: Adam,
    #[group] lr: f32,
) -> f32 {
    p - adam.lr * lr * g
}

fn main() {}
