// A downstream crate's own fused set: its rules are its kernels, in order, and its records hold
// the most buffers of any rule. A rule may store its buffers in 16 bits beside f32 rules.
use adamant_device::abi::fused::FusedEntry;
use adamant_device::{fused_optimizer, optimizer_kernel};

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

#[optimizer_kernel]
pub fn momentum(
    #[param] p: f32,
    #[input] g: f32,
    #[state] buf: &mut f32,
    #[hyper] lr: f32,
    #[hyper] mu: f32,
) -> f32 {
    *buf = mu * *buf + g;
    p - lr * *buf
}

/// SGD on bf16 weights and gradients, rounded stochastically.
#[optimizer_kernel]
pub fn sgd_bf16(
    #[param(bf16, stochastic)] p: f32,
    #[grad(bf16)] g: f32,
    #[hyper] lr: f32,
    #[group] _rounding: adamant_device::scalar_groups::StochasticRounding,
) -> f32 {
    p - lr * g
}

fused_optimizer! {
    /// Every rule in one launch.
    pub my_set = [sgd, momentum, sgd_bf16];
}

fn main() {
    let names: Vec<&str> = my_set::Entry::RULES.iter().map(|r| r.name).collect();
    assert_eq!(names, ["sgd_stepped", "momentum_stepped", "sgd_bf16_stepped"]);
    assert_eq!(my_set::Entry::RECORD_BUFFERS, 3);
    assert_eq!(my_set::Entry::DESCRIPTOR.name, "my_set");
    assert!(my_set::Entry::DESCRIPTOR.is_fused());
    assert!(sgd::FUSABLE && momentum::FUSABLE && sgd_bf16::FUSABLE);
}
