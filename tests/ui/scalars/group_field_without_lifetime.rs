// A group's field is a kernel's scalar, so it declares how long it lives, as every scalar does:
// the error is at the group's definition, once, not in every kernel that takes it.
use adamant_device::scalar_group;

#[scalar_group]
pub struct Momentum {
    #[hyper]
    #[domain(ge = 0.0, lt = 1.0)]
    momentum: f32,
    #[domain(ge = 0.0)]
    dampening: f32,
}

fn main() {}
