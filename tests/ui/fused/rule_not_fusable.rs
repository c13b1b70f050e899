// A kernel with more #[input]s than a fused entry has input tables is a valid kernel, but not a
// rule of a fused set: the set does not compile.
use adamant_device::{fused_optimizer, optimizer_kernel};

#[optimizer_kernel]
pub fn three_inputs(
    #[param] p: f32,
    #[input] a: f32,
    #[input] b: f32,
    #[input] c: f32,
    #[hyper] lr: f32,
) -> f32 {
    p - lr * (a + b + c)
}

fused_optimizer! {
    pub my_set = [three_inputs];
}

fn main() {}
