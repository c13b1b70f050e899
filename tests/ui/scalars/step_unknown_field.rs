// `#[step]` reads the record field of the same name: a scalar that is not one is refused (a typo
// would otherwise bake a learning rate into a captured graph).
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[step] learning_rate: f32) -> f32 {
    p - learning_rate * g
}

fn main() {}
