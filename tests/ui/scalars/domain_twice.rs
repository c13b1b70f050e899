// One #[domain] per argument, with every bound in it.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(
    #[param] p: f32,
    #[input] g: f32,
    #[hyper] #[domain(ge = 0.0)]
    #[domain(lt = 1.0)]
    lr: f32,
) -> f32 {
    p - lr * g
}

fn main() {}
