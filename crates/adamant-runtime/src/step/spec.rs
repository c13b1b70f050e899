//! What a step-state record starts from: [`StepSpec`] (the shared fields, the bound's source)
//! and, for a kernel with `#[hyper]` or `#[derived]` scalars, [`RecordKernel`] (which kernel's
//! words the record holds, and their first values).
use std::sync::Arc;

use adamant_device::abi::{ArgValue, KernelDescriptor, Lifetime, OptimizerEntry, RecordScalar};
use adamant_device::guard::{StepGuard, GUARD_CLIP, GUARD_LOSS_SCALE, GUARD_SKIP_NON_FINITE};
use adamant_device::step::RECORD_SCALARS;

use crate::clamp_policy::ClampPolicy;
use crate::error::{Error, Result};
use crate::hyper::AdamHyper;

/// Where a record's clamp bound comes from, for the whole run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StepBound {
    /// `100 × max(Q_ABS_REF, 1)`, recomputed on the device by every advance from the device
    /// `Q_ABS_REF` of the [`StepStates`](crate::StepStates). A NaN, infinite or negative value
    /// there keeps the previous step's bound (100 before any valid value), raises
    /// [`FLAG_BAD_Q_ABS_REF`](adamant_device::step::FLAG_BAD_Q_ABS_REF) and is counted.
    FromQAbsRef,
    /// A bound fixed for the run by a host policy (validated as every launch's is):
    /// [`ClampPolicy::Fixed`], [`ClampPolicy::Disabled`] with its reason, or
    /// [`ClampPolicy::FromIsv`] evaluated once.
    Policy(ClampPolicy),
}

/// What one record starts from.
#[derive(Clone, Debug, PartialEq)]
pub struct StepSpec {
    /// The learning rate of the first step (change it between steps with
    /// [`StepStates::set_lr`](crate::StepStates::set_lr)).
    pub lr: f32,
    /// β1, for the entries and for the bias correction.
    pub beta1: f32,
    /// β2.
    pub beta2: f32,
    /// Steps already taken: 0 for a fresh run, a checkpoint's step count to resume one. The
    /// first advance makes it `steps_taken + 1`.
    pub steps_taken: u32,
    /// Where the bound comes from.
    pub bound: StepBound,
    /// The kernel whose `#[hyper]` and `#[derived]` scalars the record holds
    /// ([`StepSpec::with_kernel`]); `None` for a record that only kernels reading `#[step]`
    /// fields alone may launch with.
    pub kernel: Option<RecordKernel>,
    /// The step's own protection ([`StepSpec::guarded`]); `None` for an unguarded record.
    pub guard: Option<GuardSpec>,
}

/// What a record's step guard does (`adamant_device::guard`): every step of a guarded record
/// starts with a [`GradientGuard`](crate::GradientGuard) pass over its tensors' gradients.
///
/// Off by default in a bare [`StepSpec`]: the guard reads the gradients of the tensors that
/// step with the record, which only the code that composes the step knows (it enqueues the
/// guard with them). An application that owns the whole step (adamant-rl's session, say) can
/// guard every group.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GuardSpec {
    /// Skip the whole step (nothing written, `t` not advanced, the skip counted) when any
    /// gradient is NaN or infinite.
    pub skip_non_finite: bool,
    /// Scale the `#[grad]` inputs by `min(1, max_norm / (norm + 1e-6))`, `norm` the global
    /// 2-norm of the gradients (`torch.nn.utils.clip_grad_norm_`); `None` for no clipping.
    pub max_norm: Option<f32>,
    /// Dynamic loss scaling, for fp16 gradients ([`LossScale`]); `None` for none.
    pub loss_scale: Option<LossScale>,
}

/// Dynamic loss scaling on the device (`adamant_abi::GUARD_LOSS_SCALE`), PyTorch's `GradScaler`
/// rule inside the guard: the step's backward multiplies its loss by the record's scale (read on
/// the device, [`StepStates::loss_scale_address`](crate::StepStates::loss_scale_address)); the
/// guard divides the gradients back (the `#[grad]` multiplier, with the clip), skips a step whose
/// gradients overflowed and halves the scale, and doubles it after `growth_interval` clean
/// steps in a row. No host synchronisation: a captured step scales itself.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossScale {
    /// The first step's scale: finite and `> 0`. A power of two keeps the unscaling exact
    /// (PyTorch's `2^16` is [`LossScale::PYTORCH`]'s), so a step matches PyTorch's bit for bit.
    pub initial: f32,
    /// Clean steps in a row after which the scale doubles: `>= 1`.
    pub growth_interval: u32,
}

impl LossScale {
    /// `torch.amp.GradScaler`'s defaults: `init_scale = 2^16`, `growth_interval = 2000`.
    pub const PYTORCH: LossScale = LossScale {
        initial: 65536.0,
        growth_interval: 2000,
    };
}

impl GuardSpec {
    /// Skip a step whose gradients are not all finite; no clipping.
    pub const SKIP_NON_FINITE: GuardSpec = GuardSpec {
        skip_non_finite: true,
        max_norm: None,
        loss_scale: None,
    };

    /// fp16 training: dynamic loss scaling with PyTorch's defaults, which skips every step
    /// whose gradients overflowed; no clipping.
    pub const LOSS_SCALED: GuardSpec = GuardSpec {
        skip_non_finite: true,
        max_norm: None,
        loss_scale: Some(LossScale::PYTORCH),
    };

    /// The guard's mode bits, validated: a finite `max_norm > 0`, and something to do.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidGuard`].
    pub(crate) fn mode(&self) -> Result<u32> {
        let mut mode = 0;
        if self.skip_non_finite {
            mode |= GUARD_SKIP_NON_FINITE;
        }
        if let Some(max_norm) = self.max_norm {
            check_max_norm(max_norm)?;
            mode |= GUARD_CLIP;
        }
        if let Some(scale) = self.loss_scale {
            if !(scale.initial.is_finite() && scale.initial > 0.0) {
                return Err(Error::InvalidGuard {
                    field: "loss_scale.initial",
                    value: scale.initial as f64,
                    requirement: "finite and > 0".into(),
                });
            }
            if scale.growth_interval == 0 {
                return Err(Error::InvalidGuard {
                    field: "loss_scale.growth_interval",
                    value: 0.0,
                    requirement: ">= 1 (clean steps before the scale doubles)".into(),
                });
            }
            // An overflowed step is never taken, whatever `skip_non_finite` says.
            mode |= GUARD_LOSS_SCALE | GUARD_SKIP_NON_FINITE;
        }
        if mode == 0 {
            return Err(Error::InvalidGuard {
                field: "guard",
                value: 0.0,
                requirement: "skip_non_finite or a max_norm (a guard that does nothing is no \
                              guard: leave the record unguarded)"
                    .into(),
            });
        }
        Ok(mode)
    }
}

/// A clipping threshold: finite and `> 0`.
pub(crate) fn check_max_norm(max_norm: f32) -> Result<()> {
    if max_norm.is_finite() && max_norm > 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidGuard {
            field: "max_norm",
            value: max_norm as f64,
            requirement: "finite and > 0".into(),
        })
    }
}

impl StepSpec {
    /// A record for `hyper`'s lr and betas whose first step is `hyper.step` (1 for a fresh run),
    /// holding no kernel's own scalars yet ([`StepSpec::with_kernel`] adds them).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidHyper`] for a field out of its range (`step == 0` included) or a step past
    /// `u32::MAX`.
    pub fn adam(hyper: &AdamHyper, bound: StepBound) -> Result<StepSpec> {
        hyper.validate()?;
        let steps_taken = u32::try_from(hyper.step - 1).map_err(|_| Error::InvalidHyper {
            field: "step",
            value: hyper.step as f64,
            requirement: format!("<= {}", u32::MAX as u64 + 1),
        })?;
        Ok(StepSpec {
            lr: hyper.lr,
            beta1: hyper.beta1,
            beta2: hyper.beta2,
            steps_taken,
            bound,
            kernel: None,
            guard: None,
        })
    }

    /// The record, guarded: every step first runs a [`GradientGuard`](crate::GradientGuard)
    /// over the gradients of the tensors that step with it, which skips a step with a
    /// non-finite gradient and/or clips the gradients' global norm, on the device
    /// ([`GuardSpec`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidGuard`] for a `max_norm` that is not finite and `> 0`, or a guard that
    /// does nothing.
    pub fn guarded(self, guard: GuardSpec) -> Result<StepSpec> {
        guard.mode()?;
        Ok(StepSpec {
            guard: Some(guard),
            ..self
        })
    }

    /// The record's guard part as it starts.
    pub(crate) fn step_guard(&self) -> Result<StepGuard> {
        let Some(spec) = self.guard else {
            return Ok(StepGuard::default());
        };
        let scale = spec.loss_scale.unwrap_or(LossScale {
            initial: 1.0,
            growth_interval: 1,
        });
        Ok(StepGuard {
            mode: spec.mode()?,
            max_norm: spec.max_norm.unwrap_or(0.0),
            clip_coef: 1.0,
            loss_scale: scale.initial,
            growth_interval: scale.growth_interval,
            // Before the first guard run: no step is vouched for.
            epoch: self.steps_taken,
            ..StepGuard::default()
        })
    }

    /// The record made for kernel `E`: its words hold `hyper` (`<kernel>::Hyper`, each value
    /// checked against its `#[domain]`) and the kernel's `#[derived]` scalars at `steps_taken`
    /// (computed on the host by the kernel's own schedule, so a resumed record continues as the
    /// device would have). Only `E`, or a kernel with the same record layout, may launch with it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidScalar`] naming the kernel and the first hyperparameter (or lr, beta)
    /// outside `E`'s domain for it.
    pub fn with_kernel<E: OptimizerEntry>(self, hyper: E::Hyper) -> Result<StepSpec>
    where
        E::Hyper: Send + Sync + 'static,
    {
        let plain = E::DESCRIPTOR;
        for (field, value) in [
            ("lr", self.lr),
            ("beta1", self.beta1),
            ("beta2", self.beta2),
        ] {
            super::check_field(plain, field, value)?;
        }
        let layout = E::STEPPED_DESCRIPTOR.record;
        let values = E::hyper_values(&hyper);
        let hypers = layout
            .iter()
            .filter(|r| matches!(r.lifetime, Lifetime::Hyper { .. }));
        for (scalar, value) in hypers.zip(&values) {
            check_value(plain.name, scalar, *value)?;
        }
        Ok(StepSpec {
            kernel: Some(RecordKernel {
                kernel: plain,
                layout,
                schedule: E::SCHEDULE,
                hyper: values,
                derived_at: Arc::new(move |t| E::derived_values(t, &hyper)),
            }),
            ..self
        })
    }

    /// The record's own words at its first advance: the hyperparameters and the derived values
    /// at `steps_taken` (zeros for a record without a kernel).
    pub(crate) fn words(&self) -> [u32; RECORD_SCALARS] {
        let mut words = [0u32; RECORD_SCALARS];
        if let Some(k) = &self.kernel {
            let derived = (k.derived_at)(self.steps_taken);
            let mut hyper = k.hyper.iter();
            let mut derived = derived.iter();
            for scalar in k.layout {
                let value = match scalar.lifetime {
                    Lifetime::Step => continue,
                    Lifetime::Hyper { .. } => hyper.next(),
                    Lifetime::Derived { .. } => derived.next(),
                };
                let slot = scalar
                    .slot()
                    .expect("hyper and derived scalars have a word");
                words[slot] = word(*value.expect("one value per scalar, generated together"));
            }
        }
        words
    }
}

/// The kernel a record is made for: its name and domains, its record layout (where each
/// scalar's word is), its schedule entry, and its first values.
#[derive(Clone)]
pub struct RecordKernel {
    /// The kernel's plain entry: its name, and the domains of its scalars.
    pub(crate) kernel: &'static KernelDescriptor,
    /// The stepped entries' record layout.
    pub(crate) layout: &'static [RecordScalar],
    /// The schedule entry that computes the `#[derived]` words after every advance.
    pub(crate) schedule: Option<&'static KernelDescriptor>,
    /// The `#[hyper]` values, in declared order.
    hyper: Vec<ArgValue>,
    /// The `#[derived]` values of step `t`, from the kernel's schedule on the host.
    derived_at: Arc<dyn Fn(u32) -> Vec<ArgValue> + Send + Sync>,
}

impl RecordKernel {
    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.kernel.name
    }
}

impl std::fmt::Debug for RecordKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordKernel")
            .field("kernel", &self.kernel.name)
            .field("hyper", &self.hyper)
            .finish_non_exhaustive()
    }
}

impl PartialEq for RecordKernel {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.kernel, other.kernel) && self.hyper == other.hyper
    }
}

/// A record scalar's value as its word.
pub(crate) fn word(value: ArgValue) -> u32 {
    match value {
        ArgValue::F32(v) => v.to_bits(),
        ArgValue::U32(v) => v,
        ArgValue::Ptr(_) | ArgValue::Usize(_) => {
            unreachable!("record scalars are f32 or u32 (the macro generates no other)")
        }
    }
}

/// Record scalar `scalar`'s value from `words`, the record's own words (the inverse of
/// [`word`]).
pub(crate) fn word_value(scalar: &RecordScalar, words: &[u32; RECORD_SCALARS]) -> ArgValue {
    let bits = words[scalar
        .slot()
        .expect("a record scalar the host reads has a word")];
    match scalar.ty {
        adamant_device::abi::ParamType::U32 => ArgValue::U32(bits),
        _ => ArgValue::F32(f32::from_bits(bits)),
    }
}

/// `value` for record scalar `scalar` of `kernel`: an `f32` within its `#[domain]`.
pub(crate) fn check_value(
    kernel: &'static str,
    scalar: &RecordScalar,
    value: ArgValue,
) -> Result<()> {
    if let (Lifetime::Hyper { domain, .. }, ArgValue::F32(v)) = (scalar.lifetime, value) {
        if !domain.contains(v as f64) {
            return Err(Error::InvalidScalar {
                kernel,
                name: scalar.name,
                value: v as f64,
                requirement: domain.describe(),
            });
        }
    }
    Ok(())
}
