// A kernel names each scalar once (its descriptor and record do): a scalar of its own named
// like a field of its group is an error at that scalar, and so is a second group with a field
// of the first, at the second group.
use adamant_device::prelude::*;

#[scalar_group]
pub struct Rates {
    #[step]
    #[domain(ge = 0.0)]
    lr: f32,
    #[hyper]
    #[domain(gt = 0.0)]
    eps: f32,
}

#[optimizer_kernel]
pub fn sgd(
    #[param] p: f32,
    #[input] g: f32,
    #[group] adam: Adam,
    #[step] lr: f32,
    #[group] rates: Rates,
) -> f32 {
    p - adam.lr * lr * rates.lr * g
}

fn main() {}
