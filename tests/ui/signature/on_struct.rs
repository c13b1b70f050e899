// The macro applies to a fn only.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub struct Sgd {
    pub lr: f32,
}

fn main() {}
