//! Adam hyperparameters that validate themselves, and the per-launch bias corrections.
use adamant_device::abi::{Domain, KernelDescriptor, ParamRole};

use crate::error::{Error, Result};

/// The hyperparameters shared by the five Adam kernels, for one step. Construct with
/// [`AdamHyper::new`] or check a literal with [`AdamHyper::validate`]; every launch validates
/// again, so an invalid value never reaches the device. Kernel-specific inputs (IQL's gradient
/// clip, DQN's gradient scale) are the launchers' own arguments.
///
/// ```
/// use adamant_runtime::{AdamHyper, Error};
///
/// let hyper = AdamHyper::new(3e-4, 0.9, 0.999, 1e-8, 0.01, 1)?;
/// // Step t's bias corrections 1 - β^t, computed in f64, rounded once to f32.
/// let (bc1, bc2) = hyper.bias_corrections();
/// assert_eq!(bc1, (1.0 - 0.9f32 as f64) as f32);
/// assert_eq!(AdamHyper { step: 1000, ..hyper }.bias_corrections().0, 1.0);
///
/// // Step 0 would divide by a bias correction of 0 (NaN weights): refused.
/// let err = AdamHyper { step: 0, ..hyper }.validate().unwrap_err();
/// assert!(matches!(err, Error::InvalidHyper { field: "step", .. }));
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamHyper {
    /// The learning rate; finite and `>= 0`.
    pub lr: f32,
    /// The first moment's decay rate β1, in `[0, 1)`.
    pub beta1: f32,
    /// The second moment's decay rate β2, in `[0, 1)`.
    pub beta2: f32,
    /// The denominator's ε, added to `sqrt(v̂)`; finite and `> 0`.
    pub eps: f32,
    /// Decoupled (AdamW) or L2 decay, depending on the kernel; must be 0 for curiosity, which
    /// has none. Finite and `>= 0`.
    pub weight_decay: f32,
    /// The step number `t`, starting at 1, from which the bias corrections are computed.
    pub step: u64,
}

impl AdamHyper {
    /// The hyperparameters of step `step`, validated as by [`AdamHyper::validate`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidHyper`] naming the first field out of its range.
    pub fn new(
        lr: f32,
        beta1: f32,
        beta2: f32,
        eps: f32,
        weight_decay: f32,
        step: u64,
    ) -> Result<Self> {
        let hyper = AdamHyper {
            lr,
            beta1,
            beta2,
            eps,
            weight_decay,
            step,
        };
        hyper.validate()?;
        Ok(hyper)
    }

    /// PyTorch's `torch.optim.Adam` defaults (lr 1e-3, betas (0.9, 0.999), eps 1e-8), no
    /// decay, at `step`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidHyper`] for `step == 0`.
    pub fn pytorch_defaults(step: u64) -> Result<Self> {
        AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.0, step)
    }

    /// Checks every field against its range (see the fields), in declaration order.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidHyper`] naming the first field out of its range, with its value and the
    /// range.
    pub fn validate(&self) -> Result<()> {
        self.validate_rates()?;
        if self.step == 0 {
            return Err(Error::InvalidHyper {
                field: "step",
                value: 0.0,
                requirement: ">= 1".into(),
            });
        }
        Ok(())
    }

    /// Every field but `step` against its range: what a step-state record takes.
    pub(crate) fn validate_rates(&self) -> Result<()> {
        // The ranges are the kernels' own `#[domain]`s (one contract): dqn_adam_update_kernel
        // declares every field of AdamHyper under the same name.
        let kernel = &adamant_kernels::optimizers::dqn_adam_update_kernel::DESCRIPTOR;
        for (field, value) in [
            ("lr", self.lr),
            ("beta1", self.beta1),
            ("beta2", self.beta2),
            ("eps", self.eps),
            ("weight_decay", self.weight_decay),
        ] {
            check_domain(kernel, field, value)?;
        }
        Ok(())
    }

    /// `(1 − β1^t, 1 − β2^t)` for `t = step`, the values the kernels' `bias_correction1` and
    /// `bias_correction2` take: computed in f64 and rounded once to f32 (at large `t` and β close
    /// to 1, computing them in f32 would lose most digits), by the same function the device's
    /// step advance runs ([`adamant_device::step::bias_correction`]), so a plain launch at step
    /// `t` and a stepped one at `t` get the same bits. Steps past `u32::MAX` count as `u32::MAX`,
    /// where both are 1 for any β < 1 that f32 holds.
    pub fn bias_corrections(&self) -> (f32, f32) {
        let t = self.step.min(u32::MAX as u64) as u32;
        let bc = |beta: f32| adamant_device::step::bias_correction(beta, t);
        (bc(self.beta1), bc(self.beta2))
    }
}

/// The `#[domain]` that `kernel` declares for its scalar `field`, if it has one.
pub(crate) fn scalar_domain(kernel: &KernelDescriptor, field: &str) -> Option<Domain> {
    kernel.params.iter().find_map(|p| match p.role {
        ParamRole::Scalar { domain } if p.name == field => Some(domain),
        _ => None,
    })
}

/// `value` against the `#[domain]` that `kernel` declares for its scalar `field`.
fn check_domain(kernel: &KernelDescriptor, field: &'static str, value: f32) -> Result<()> {
    let domain = scalar_domain(kernel, field)
        .unwrap_or_else(|| panic!("{} declares no scalar `{field}`", kernel.name));
    if domain.contains(value as f64) {
        Ok(())
    } else {
        Err(Error::InvalidHyper {
            field,
            value: value as f64,
            requirement: domain.describe(),
        })
    }
}

/// Fills a kernel's generated `Scalars` from an [`AdamHyper`]: `lr`, the betas, `eps` and the
/// bias corrections (computed in f64), plus the kernel's own fields given as `name: value`.
/// A field the kernel lacks, or one it needs and is not given, is a compile error. Validates
/// the hyperparameters first (`step == 0` would give a bias correction of 0 and NaN weights):
/// evaluates to `Result<Scalars, Error>`, with [`Error::InvalidHyper`] naming the bad field.
/// The launch checks every scalar against its declared domain again, whatever built it.
///
/// ```
/// use adamant_kernels::optimizers::{curiosity_adam_step, iql_adam_kernel};
/// use adamant_runtime::{adam_scalars, AdamHyper, Error};
///
/// let hyper = AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.01, 10)?;
/// // IQL's kernel also takes a weight decay and a gradient clip; name them.
/// let iql =
///     adam_scalars!(iql_adam_kernel, hyper, weight_decay: hyper.weight_decay, grad_clip: 1.0)?;
/// assert_eq!((iql.bias_correction1, iql.bias_correction2), hyper.bias_corrections());
/// assert_eq!(iql.grad_clip, 1.0);
/// // Curiosity's takes neither: naming a field the kernel lacks does not compile.
/// let curiosity = adam_scalars!(curiosity_adam_step, hyper)?;
/// assert_eq!(curiosity.lr, 1e-3);
///
/// let step_zero = AdamHyper { step: 0, ..hyper };
/// let refused = adam_scalars!(curiosity_adam_step, step_zero);
/// assert!(matches!(refused, Err(Error::InvalidHyper { field: "step", .. })));
/// # Ok::<(), Error>(())
/// ```
#[macro_export]
macro_rules! adam_scalars {
    ($($kernel:ident)::+, $hyper:expr $(, $field:ident : $value:expr)* $(,)?) => {{
        let hyper: &$crate::AdamHyper = &$hyper;
        hyper.validate().map(|()| {
            let (bias_correction1, bias_correction2) = hyper.bias_corrections();
            $($kernel)::+::Scalars {
                lr: hyper.lr,
                beta1: hyper.beta1,
                beta2: hyper.beta2,
                eps: hyper.eps,
                bias_correction1,
                bias_correction2,
                $($field: $value,)*
            }
        })
    }};
}
