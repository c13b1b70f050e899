//! Scalar groups: scalars that several kernels take, declared once with their lifetimes and
//! domains ([`scalar_group`]), and the groups adamant's Adam kernels share.
//! A kernel takes a group as one argument, `#[group] adam: Adam`, and reads `adam.lr`; its
//! entries, descriptors and record are those of the fields written out in its place.
use crate::adam::AdamScalars;
use crate::scalar_group;

/// Implemented by every `#[scalar_group]` struct: what a `#[group]` argument's type must be.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a scalar group",
    label = "a #[group] argument's type is a struct declared with #[scalar_group]"
)]
pub trait ScalarGroup {
    /// The names of the group's scalars, in declared order (the kernel's, in its descriptor).
    const FIELDS: &'static [&'static str];
}

/// Adam's learning rate, betas and epsilon, as `torch.optim.Adam(lr, betas, eps)`: the rate and
/// the betas are the step record's shared fields (a schedule sets the rate between steps; the
/// advance computes the bias corrections from the betas), `eps` the kernel's own.
#[scalar_group]
#[derive(Clone, Copy, Debug)]
pub struct Adam {
    #[step]
    #[domain(ge = 0.0)]
    lr: f32,
    #[step]
    #[domain(ge = 0.0, lt = 1.0)]
    beta1: f32,
    #[step]
    #[domain(ge = 0.0, lt = 1.0)]
    beta2: f32,
    #[hyper]
    #[domain(gt = 0.0)]
    eps: f32,
}

/// `1 - beta^t` for both moments, advanced by the record every step. Never 0: a step of 0 would
/// divide by zero and write NaN weights. The second is at least 2^-126 (`f32::MIN_POSITIVE`,
/// [`crate::math::MIN_DIVISOR`]), where Adam's division by its root is proven exact without a
/// division per element ([`crate::math::RootDivisor`]); any `beta2 < 1` at any step gives at
/// least 2^-24.
#[scalar_group]
#[derive(Clone, Copy, Debug)]
pub struct BiasCorrections {
    #[step]
    #[domain(gt = 0.0, le = 1.0)]
    bias_correction1: f32,
    #[step]
    #[domain(ge = 1.1754944e-38, le = 1.0)]
    bias_correction2: f32,
}

/// The weight decay of a kernel (`0` = off), L2 or decoupled as the kernel applies it.
#[scalar_group]
#[derive(Clone, Copy, Debug)]
pub struct WeightDecay {
    #[hyper]
    #[domain(ge = 0.0)]
    weight_decay: f32,
}

/// What a stochastic store (`#[param(bf16, stochastic)]`) hashes into each element's random
/// word (`storage::rounding_key`): the step number, which the record's advance increments, and
/// the run's seed, set by the host (`set_scalar(.., "rounding_seed", ..)`) and saved with the
/// run, so a replayed graph rounds each step its own way and a resumed run as the uninterrupted
/// one. A kernel that stores stochastically takes this group (a compile error otherwise); its
/// body need not read it (`#[group] _rounding: StochasticRounding`).
#[scalar_group]
#[derive(Clone, Copy, Debug)]
pub struct StochasticRounding {
    #[step]
    step: u32,
    #[hyper]
    rounding_seed: u32,
}

impl Adam {
    /// The scalars of one Adam step ([`crate::adam::adam_step`]), with the step's bias
    /// corrections.
    #[inline(always)]
    pub fn with(self, bc: BiasCorrections) -> AdamScalars {
        AdamScalars {
            lr: self.lr,
            beta1: self.beta1,
            beta2: self.beta2,
            eps: self.eps,
            bias_correction1: bc.bias_correction1,
            bias_correction2: bc.bias_correction2,
        }
    }
}
