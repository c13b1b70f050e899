// `step_state` is the stepped entries' own last parameter (the record the bound is read from).
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] step_state: f32) -> f32 {
    p - step_state * g
}

fn main() {}
