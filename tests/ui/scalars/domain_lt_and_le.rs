// `lt` and `le` both bound the value from above.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] #[domain(lt = 1.0, le = 1.0)] beta: f32) -> f32 {
    p - beta * g
}

fn main() {}
