// A kernel whose parameter has a companion buffer (an f32 master beside the bf16 weights) is a
// valid kernel, but not a rule of a fused set (a fused entry has one parameter table and no
// table for a companion): the set does not compile.
use adamant_device::{fused_optimizer, optimizer_kernel};

#[optimizer_kernel]
pub fn sgd_bf16_master(#[param(bf16, master)] p: f32, #[grad] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fused_optimizer! {
    pub my_set = [sgd_bf16_master];
}

fn main() {}
