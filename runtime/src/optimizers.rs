//! One typed launcher per optimizer kernel. Each fills the kernel's own generated `Buffers` and
//! `Scalars` structs (from `kernels-rs`), so a kernel whose arguments change breaks its launcher
//! at compile time, and validates every hyperparameter before anything is enqueued.
use adamant_kernels::abi::UniformPtr;
use adamant_kernels::optimizers::{
    attn_adam_kernel, curiosity_adam_step, dqn_adam_update_kernel, iql_adam_kernel, iqn_adam_kernel,
};
use adamant_kernels::soft_update::soft_update_kernel;
use cust::memory::{DeviceBox, DeviceSlice};

use crate::clamp_policy::ClampPolicy;
use crate::device::Adamant;
use crate::error::{Error, Result};
use crate::groups::ParamGroup;
use crate::hyper::{validate_grad_clip, AdamHyper};
use crate::launch::LaunchInfo;

/// Fills a kernel's generated `Scalars` from an [`AdamHyper`]: `lr`, the betas, `eps` and the
/// bias corrections (computed in f64), plus the kernel's own fields given as `name: value`.
/// A field the kernel lacks, or one it needs and is not given, is a compile error. Validates
/// the hyperparameters first (`step == 0` would give a bias correction of 0 and NaN weights):
/// evaluates to `Result<Scalars, Error>`. The launch checks every scalar against its declared
/// domain again, whatever built it.
///
/// `adam_scalars!(iql_adam_kernel, hyper, weight_decay: hyper.weight_decay, grad_clip: 1.0)?`
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

/// The group's buffers as the kernel's `Buffers` (`p`, `g`, `m`, `v`, plus any extra state).
macro_rules! group_buffers {
    ($kernel:ident, $group:expr $(, $field:ident : $value:expr)*) => {
        $kernel::Buffers {
            p: &mut *$group.params,
            g: &mut *$group.grads,
            m: &mut *$group.m,
            v: &mut *$group.v,
            $($field: $value,)*
        }
    };
}

impl Adamant {
    /// `dqn_adam_update_kernel`: AdamW on the DQN trunk or heads; the gradient is multiplied by
    /// `*grad_scale` (the global-norm clip coefficient, read on the device), or by 1.0 if `None`.
    pub fn dqn_adam_update(
        &self,
        group: &mut ParamGroup,
        hyper: &AdamHyper,
        grad_scale: Option<&DeviceBox<f32>>,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo> {
        hyper.validate()?;
        let grad_scale = grad_scale
            .map(|b| UniformPtr(b.as_device_ptr().as_raw()))
            .unwrap_or(UniformPtr::NULL);
        let scalars = adam_scalars!(dqn_adam_update_kernel, hyper,
            weight_decay: hyper.weight_decay, grad_scale: grad_scale)?;
        let buffers = group_buffers!(dqn_adam_update_kernel, group);
        self.launch_optimizer::<dqn_adam_update_kernel::Entry>(
            self.stream(),
            &buffers,
            &scalars,
            policy,
        )
    }

    /// `iqn_adam_kernel`: Adam with L2 decay on the IQN head's own (online) parameters.
    pub fn iqn_adam(
        &self,
        group: &mut ParamGroup,
        hyper: &AdamHyper,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo> {
        hyper.validate()?;
        let scalars = adam_scalars!(iqn_adam_kernel, hyper, weight_decay: hyper.weight_decay)?;
        let buffers = group_buffers!(iqn_adam_kernel, group);
        self.launch_optimizer::<iqn_adam_kernel::Entry>(self.stream(), &buffers, &scalars, policy)
    }

    /// `iql_adam_kernel`: element-wise gradient clip to `±grad_clip` (0 = off), then Adam with
    /// L2 decay.
    pub fn iql_adam(
        &self,
        group: &mut ParamGroup,
        hyper: &AdamHyper,
        grad_clip: f32,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo> {
        hyper.validate()?;
        validate_grad_clip(grad_clip)?;
        let scalars = adam_scalars!(iql_adam_kernel, hyper,
            weight_decay: hyper.weight_decay, grad_clip: grad_clip)?;
        let buffers = group_buffers!(iql_adam_kernel, group);
        self.launch_optimizer::<iql_adam_kernel::Entry>(self.stream(), &buffers, &scalars, policy)
    }

    /// `attn_adam_kernel`: AdamW for GpuAttention, GpuTlob and the decision transformer.
    pub fn attn_adam(
        &self,
        group: &mut ParamGroup,
        hyper: &AdamHyper,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo> {
        hyper.validate()?;
        let scalars = adam_scalars!(attn_adam_kernel, hyper, weight_decay: hyper.weight_decay)?;
        let buffers = group_buffers!(attn_adam_kernel, group);
        self.launch_optimizer::<attn_adam_kernel::Entry>(self.stream(), &buffers, &scalars, policy)
    }

    /// `curiosity_adam_step`: Adam, no decay, AMSGrad. The group must have `v_max`
    /// ([`ParamGroup::new_amsgrad`]); `hyper.weight_decay` must be 0 (this rule has none).
    pub fn curiosity_adam(
        &self,
        group: &mut ParamGroup,
        hyper: &AdamHyper,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo> {
        validate_curiosity_hyper(hyper)?;
        let scalars = adam_scalars!(curiosity_adam_step, hyper)?;
        let missing = Error::MissingBuffer {
            kernel: "curiosity_adam_step",
            group: group.name().to_string(),
            buffer: "v_max",
        };
        let v_max = group.v_max.as_deref_mut().ok_or(missing)?;
        let buffers = group_buffers!(curiosity_adam_step, group, v_max: v_max);
        self.launch_optimizer::<curiosity_adam_step::Entry>(
            self.stream(),
            &buffers,
            &scalars,
            policy,
        )
    }
}

/// `curiosity_adam_step` has no decay term: a non-zero `weight_decay` would be silently ignored,
/// so it is refused.
pub(crate) fn validate_curiosity_hyper(hyper: &AdamHyper) -> Result<()> {
    hyper.validate()?;
    if hyper.weight_decay != 0.0 {
        return Err(Error::InvalidHyper {
            field: "weight_decay",
            value: hyper.weight_decay as f64,
            requirement: "0 for curiosity_adam_step (it applies no decay)",
        });
    }
    Ok(())
}

impl Adamant {
    /// `soft_update_kernel`: the target network's soft update `target ← τ·online + (1 − τ)·target`,
    /// then the clamp (it writes a parameter buffer, so it is an optimizer kernel like the Adam
    /// ones). `tau` must be in `[0, 1]`; `online` is only read. Runs the same checks as every
    /// launch (lengths, no overlap between `target` and `online`, the policy's bound).
    pub fn soft_update(
        &self,
        target: &mut DeviceSlice<f32>,
        online: &DeviceSlice<f32>,
        tau: f32,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo> {
        // cust's DeviceSlice is a (pointer, length) view: a copy of `online` is the same buffer,
        // which the kernel declares #[input] and never writes.
        let mut online = *online;
        let buffers = soft_update_kernel::Buffers {
            target,
            online: &mut online,
        };
        let scalars = soft_update_kernel::Scalars { tau };
        self.launch_optimizer::<soft_update_kernel::Entry>(
            self.stream(),
            &buffers,
            &scalars,
            policy,
        )
    }
}
