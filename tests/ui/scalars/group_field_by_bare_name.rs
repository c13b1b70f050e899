// A group's fields are the kernel's scalars, but the body reads them through the group
// (`decay.weight_decay`): by their bare names they are not in scope, so a body cannot take a
// field for a scalar of its own.
use adamant_device::prelude::*;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[group] decay: WeightDecay) -> f32 {
    p - (g + weight_decay * p)
}

fn main() {}
