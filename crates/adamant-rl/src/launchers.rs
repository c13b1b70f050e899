//! The seed's typed launchers: one per optimizer kernel of its training step, on a
//! [`ParamGroup`] (the generic launch, `Adamant::launch` with `.buffers` or `.set`, takes any
//! kernel's buffers). Each fills the kernel's own generated `Buffers` and
//! `Scalars` structs (from `adamant-kernels`), so a kernel whose arguments change breaks its launcher
//! at compile time, and validates every hyperparameter before anything is enqueued.
use adamant_device::abi::{ParamRole, UniformPtr};
use adamant_kernels::optimizers::{
    attn_adam_kernel, curiosity_adam_step, dqn_adam_update_kernel, iql_adam_kernel, iqn_adam_kernel,
};
use adamant_kernels::soft_update::soft_update_kernel;
use cust::stream::Stream;

use adamant_runtime::{
    adam_scalars, AdamHyper, Adamant, ClampPolicy, DeviceScalar, Error, LaunchInfo, ParamBuffer,
    ParamGroup, ReadBuffer, Records, Result,
};

/// The group's buffers ([`ParamGroup::parts_mut`]) as the kernel's `Buffers` (`p`, `g`, `m`,
/// `v`, plus any extra state).
macro_rules! group_buffers {
    ($kernel:ident, $parts:expr $(, $field:ident : $value:expr)*) => {
        $kernel::Buffers {
            p: $parts.params,
            g: $parts.grads.input(),
            m: $parts.m,
            v: $parts.v,
            $($field: $value,)*
        }
    };
}

/// The seed's typed launchers, as methods of [`Adamant`] (`use adamant_rl::SeedLaunchers;`, then
/// `rt.iqn_adam(..)`): one per optimizer kernel of its training step, on a [`ParamGroup`], and
/// the target network's soft update. Each fills the kernel's own generated `Buffers` and
/// `Scalars` and launches it with [`Adamant::launch`](adamant_runtime::Adamant::launch). Sealed: implemented for
/// [`Adamant`] only.
pub trait SeedLaunchers: sealed::Sealed {
    /// One step of `dqn_adam_update_kernel` on `group`, on `stream`: AdamW
    /// (decoupled weight decay `p *= 1 − lr·wd`) for the DQN trunk or heads, then the clamp.
    /// The gradient is multiplied by `*grad_scale` first: the global-norm clip coefficient,
    /// left on the device by whatever computed it and read there (no host round trip), or 1.0
    /// if `None`. Its value is not validated: a NaN there makes NaN weights, which the NaN
    /// checker sees.
    ///
    /// ```
    /// use adamant_rl::SeedLaunchers;
    /// use adamant_runtime::{AdamHyper, ClampPolicy, DeviceScalar, GroupBuffer, ParamGroup};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let rt = match adamant_runtime::Adamant::new() {
    /// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
    /// #     other => other?,
    /// # };
    /// let mut trunk = ParamGroup::new("dqn_trunk", &vec![0.1; 1 << 16])?;
    /// trunk.upload(GroupBuffer::Grads, &vec![2.0; 1 << 16])?;
    /// // The clip coefficient as the gradient-norm kernel would leave it on the device.
    /// let clip = DeviceScalar::new(0.25)?;
    /// let hyper = AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.01, 1)?;
    /// let policy = ClampPolicy::from_isv(1.0);
    /// rt.dqn_adam_update(rt.stream(), &mut trunk, &hyper, Some(&clip), policy)?;
    /// rt.synchronize()?;
    /// // m = (1 − β1)·(0.25 × 2.0)
    /// assert!((trunk.download(GroupBuffer::M)?[0] - 0.05).abs() < 1e-6);
    /// // No coefficient: the gradients as they are.
    /// rt.dqn_adam_update(rt.stream(), &mut trunk, &AdamHyper { step: 2, ..hyper }, None, policy)?;
    /// # rt.synchronize()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// Before anything is enqueued: [`Error::InvalidHyper`] for a hyperparameter out of range,
    /// [`Error::InvalidClamp`] or [`Error::DisabledWithoutReason`] for the policy (each inside
    /// an [`Error::InKernel`] naming the kernel), and the checks of
    /// [`Adamant::launch`](adamant_runtime::Adamant::launch). [`Error::Cuda`] if the driver refuses the launch.
    fn dqn_adam_update(
        &self,
        stream: &Stream,
        group: &mut ParamGroup,
        hyper: &AdamHyper,
        grad_scale: Option<&DeviceScalar>,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo>;

    /// One step of `iqn_adam_kernel` on `group`, on `stream`: Adam with L2 decay
    /// (`g += wd·p`) on the IQN head's own (online) parameters, then the clamp: the update whose
    /// missing clamp let the seed's IQN weights drift to NaN.
    ///
    /// ```
    /// use adamant_rl::SeedLaunchers;
    /// use adamant_runtime::{AdamHyper, ClampPolicy, GroupBuffer, ParamGroup};
    ///
    /// # fn main() -> adamant_runtime::Result<()> {
    /// # let rt = match adamant_runtime::Adamant::new() {
    /// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
    /// #     other => other?,
    /// # };
    /// // Weights already past the bound, and a NaN (zero gradients: only the clamp acts).
    /// let mut iqn = ParamGroup::new("iqn_online", &[250.0, -1e30, 0.5, f32::NAN])?;
    /// rt.iqn_adam(rt.stream(), &mut iqn, &AdamHyper::pytorch_defaults(1)?, ClampPolicy::from_isv(1.0))?;
    /// rt.synchronize()?;
    /// let p = iqn.download(GroupBuffer::Params)?;
    /// assert_eq!(p[..3], [100.0, -100.0, 0.5]); // clamped to ±100 × max(Q_ABS_REF, 1.0)
    /// assert!(p[3].is_nan()); // NaN stays NaN, for the NaN checker to see
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// Before anything is enqueued: [`Error::InvalidHyper`] for a hyperparameter out of range,
    /// [`Error::InvalidClamp`] or [`Error::DisabledWithoutReason`] for the policy (each inside
    /// an [`Error::InKernel`] naming the kernel), and the checks of
    /// [`Adamant::launch`](adamant_runtime::Adamant::launch). [`Error::Cuda`] if the driver refuses the launch.
    fn iqn_adam(
        &self,
        stream: &Stream,
        group: &mut ParamGroup,
        hyper: &AdamHyper,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo>;

    /// One step of `iql_adam_kernel` on `group`, on `stream`, for IQL's value and
    /// policy networks: each gradient element clipped to `±grad_clip` (0 = off), then Adam with
    /// L2 decay, then the clamp.
    ///
    /// ```
    /// use adamant_rl::SeedLaunchers;
    /// use adamant_runtime::{AdamHyper, ClampPolicy, Error, GroupBuffer, ParamGroup};
    ///
    /// # fn main() -> adamant_runtime::Result<()> {
    /// # let rt = match adamant_runtime::Adamant::new() {
    /// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
    /// #     other => other?,
    /// # };
    /// let mut iql = ParamGroup::new("iql", &vec![0.0; 1000])?;
    /// iql.upload(GroupBuffer::Grads, &vec![50.0; 1000])?; // an exploding gradient
    /// let hyper = AdamHyper::new(3e-4, 0.9, 0.999, 1e-8, 0.0, 1)?;
    /// let policy = ClampPolicy::from_isv(1.0);
    /// rt.iql_adam(rt.stream(), &mut iql, &hyper, 1.0, policy)?;
    /// rt.synchronize()?;
    /// // The moment saw the clipped gradient: m = (1 − β1) × 1.0.
    /// assert!((iql.download(GroupBuffer::M)?[0] - 0.1).abs() < 1e-6);
    ///
    /// // A negative clip is refused before anything is enqueued, the error naming the kernel.
    /// let refused = rt.iql_adam(rt.stream(), &mut iql, &hyper, -1.0, policy);
    /// assert!(matches!(refused, Err(Error::InKernel { kernel: "iql_adam_kernel", source })
    ///     if matches!(*source, Error::InvalidHyper { field: "grad_clip", .. })));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`SeedLaunchers::iqn_adam`], and [`Error::InvalidHyper`] for a `grad_clip` that is negative
    /// or not finite.
    fn iql_adam(
        &self,
        stream: &Stream,
        group: &mut ParamGroup,
        hyper: &AdamHyper,
        grad_clip: f32,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo>;

    /// One step of `attn_adam_kernel` on `group`, on `stream`: AdamW (decoupled
    /// weight decay) for the attention models (GpuAttention, GpuTlob) and the decision
    /// transformer, then the clamp, which the decision transformer's launch disables with a
    /// reason ([`DT_CLAMP_DISABLED`](crate::DT_CLAMP_DISABLED)).
    ///
    /// ```
    /// use adamant_rl::{SeedLaunchers, DT_CLAMP_DISABLED};
    /// use adamant_runtime::{AdamHyper, ClampPolicy, GroupBuffer, ParamGroup};
    ///
    /// # fn main() -> adamant_runtime::Result<()> {
    /// # let rt = match adamant_runtime::Adamant::new() {
    /// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
    /// #     other => other?,
    /// # };
    /// let mut dt = ParamGroup::new("decision_transformer", &vec![500.0; 64])?;
    /// let hyper = AdamHyper::new(1e-4, 0.9, 0.999, 1e-8, 0.0, 1)?;
    /// let info = rt.attn_adam(rt.stream(), &mut dt, &hyper, ClampPolicy::disabled(DT_CLAMP_DISABLED))?;
    /// assert_eq!(info.bound, 0.0);
    /// rt.synchronize()?;
    /// assert_eq!(dt.download(GroupBuffer::Params)?[0], 500.0); // no clamp: past 100 and kept
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// Before anything is enqueued: [`Error::InvalidHyper`] for a hyperparameter out of range,
    /// [`Error::InvalidClamp`] or [`Error::DisabledWithoutReason`] for the policy (each inside
    /// an [`Error::InKernel`] naming the kernel), and the checks of
    /// [`Adamant::launch`](adamant_runtime::Adamant::launch). [`Error::Cuda`] if the driver refuses the launch.
    fn attn_adam(
        &self,
        stream: &Stream,
        group: &mut ParamGroup,
        hyper: &AdamHyper,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo>;

    /// One step of `curiosity_adam_step` on `group`, on `stream`, for the curiosity
    /// module's forward model: AMSGrad (the denominator uses the running maximum `v_max` of `v`),
    /// no weight decay, then the clamp. The group must keep `v_max`
    /// ([`ParamGroup::new_amsgrad`]), and `hyper.weight_decay` must be 0: this rule has no decay
    /// term, and a non-zero one would be silently ignored.
    ///
    /// ```
    /// use adamant_rl::SeedLaunchers;
    /// use adamant_runtime::{AdamHyper, ClampPolicy, Error, ParamGroup};
    ///
    /// # fn main() -> adamant_runtime::Result<()> {
    /// # let rt = match adamant_runtime::Adamant::new() {
    /// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
    /// #     other => other?,
    /// # };
    /// let hyper = AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.0, 1)?;
    /// let policy = ClampPolicy::from_isv(1.0);
    /// let mut curiosity = ParamGroup::new_amsgrad("curiosity", &vec![0.1; 512])?;
    /// rt.curiosity_adam(rt.stream(), &mut curiosity, &hyper, policy)?;
    ///
    /// // Refused before anything is enqueued: a group without v_max, and a weight decay.
    /// let mut plain = ParamGroup::new("curiosity", &vec![0.1; 512])?;
    /// let refused = rt.curiosity_adam(rt.stream(), &mut plain, &hyper, policy);
    /// assert!(matches!(refused, Err(Error::MissingBuffer { buffer: "v_max", .. })));
    /// let decayed = AdamHyper { weight_decay: 0.01, ..hyper };
    /// let refused = rt.curiosity_adam(rt.stream(), &mut curiosity, &decayed, policy);
    /// assert!(matches!(refused, Err(Error::InKernel { source, .. })
    ///     if matches!(*source, Error::InvalidHyper { field: "weight_decay", .. })));
    /// # rt.synchronize()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`SeedLaunchers::iqn_adam`]; [`Error::InvalidHyper`] for a non-zero `weight_decay` and
    /// [`Error::MissingBuffer`] for a group without `v_max`.
    fn curiosity_adam(
        &self,
        stream: &Stream,
        group: &mut ParamGroup,
        hyper: &AdamHyper,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo>;

    /// One launch of `soft_update_kernel`, on `stream`: the target network's soft
    /// (Polyak) update `target ← τ·online + (1 − τ)·target`, then the clamp (it writes a
    /// parameter buffer, so it is an optimizer kernel like the Adam ones). `tau` must be in
    /// `[0, 1]` (1 copies `online`, 0 leaves `target` as it is); `online` is only read. Runs the
    /// same checks as every launch: equal lengths, no overlap between `target` and `online`, the
    /// policy's bound.
    ///
    /// ```
    /// use adamant_kernels::soft_update::soft_update_kernel;
    /// use adamant_rl::SeedLaunchers;
    /// use adamant_runtime::{ClampPolicy, Error, ParamBuffer, Records};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let rt = match adamant_runtime::Adamant::new() {
    /// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
    /// #     other => other?,
    /// # };
    /// let online = ParamBuffer::from_host(&[1.0f32; 256])?;
    /// let mut target = ParamBuffer::from_host(&[0.0f32; 256])?;
    /// let records = Records::single::<soft_update_kernel::Entry>()?;
    /// let policy = ClampPolicy::from_isv(1.0);
    /// rt.soft_update(rt.stream(), &mut target, &online, 0.25, policy, &records)?;
    /// rt.synchronize()?;
    /// assert_eq!(records.read().sequence, 1);
    /// assert_eq!(target.download()?[0], 0.25); // 0.25 × 1 + 0.75 × 0
    ///
    /// // τ outside [0, 1] is refused before anything is enqueued.
    /// let refused = rt.soft_update(rt.stream(), &mut target, &online, 1.5, policy, &records);
    /// assert!(matches!(refused, Err(Error::InvalidScalar { name: "tau", .. })));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// Before anything is enqueued: [`Error::InvalidScalar`] for `tau`,
    /// [`Error::LengthMismatch`], [`Error::Overlap`], and the policy's errors.
    /// [`Error::Cuda`] if the driver refuses the launch.
    fn soft_update(
        &self,
        stream: &Stream,
        target: &mut ParamBuffer,
        online: &dyn ReadBuffer,
        tau: f32,
        policy: ClampPolicy,
        records: &Records,
    ) -> Result<LaunchInfo>;
}

mod sealed {
    /// Keeps [`SeedLaunchers`](super::SeedLaunchers) to the runtime.
    pub trait Sealed {}
    impl Sealed for adamant_runtime::Adamant {}
}

impl SeedLaunchers for Adamant {
    fn dqn_adam_update(
        &self,
        stream: &Stream,
        group: &mut ParamGroup,
        hyper: &AdamHyper,
        grad_scale: Option<&DeviceScalar>,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo> {
        named(hyper.validate(), "dqn_adam_update_kernel")?;
        let grad_scale = grad_scale.map_or(UniformPtr::NULL, DeviceScalar::uniform_ptr);
        let scalars = adam_scalars!(dqn_adam_update_kernel, hyper,
            weight_decay: hyper.weight_decay, grad_scale: grad_scale)?;
        let parts = group.parts_mut();
        let buffers = group_buffers!(dqn_adam_update_kernel, parts);
        self.launch::<dqn_adam_update_kernel::Entry>(stream)
            .plain(&scalars, policy)
            .buffers(&buffers, parts.records)
    }

    fn iqn_adam(
        &self,
        stream: &Stream,
        group: &mut ParamGroup,
        hyper: &AdamHyper,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo> {
        named(hyper.validate(), "iqn_adam_kernel")?;
        let scalars = adam_scalars!(iqn_adam_kernel, hyper, weight_decay: hyper.weight_decay)?;
        let parts = group.parts_mut();
        let buffers = group_buffers!(iqn_adam_kernel, parts);
        self.launch::<iqn_adam_kernel::Entry>(stream)
            .plain(&scalars, policy)
            .buffers(&buffers, parts.records)
    }

    fn iql_adam(
        &self,
        stream: &Stream,
        group: &mut ParamGroup,
        hyper: &AdamHyper,
        grad_clip: f32,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo> {
        named(hyper.validate(), "iql_adam_kernel")?;
        named(validate_grad_clip(grad_clip), "iql_adam_kernel")?;
        let scalars = adam_scalars!(iql_adam_kernel, hyper,
            weight_decay: hyper.weight_decay, grad_clip: grad_clip)?;
        let parts = group.parts_mut();
        let buffers = group_buffers!(iql_adam_kernel, parts);
        self.launch::<iql_adam_kernel::Entry>(stream)
            .plain(&scalars, policy)
            .buffers(&buffers, parts.records)
    }

    fn attn_adam(
        &self,
        stream: &Stream,
        group: &mut ParamGroup,
        hyper: &AdamHyper,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo> {
        named(hyper.validate(), "attn_adam_kernel")?;
        let scalars = adam_scalars!(attn_adam_kernel, hyper, weight_decay: hyper.weight_decay)?;
        let parts = group.parts_mut();
        let buffers = group_buffers!(attn_adam_kernel, parts);
        self.launch::<attn_adam_kernel::Entry>(stream)
            .plain(&scalars, policy)
            .buffers(&buffers, parts.records)
    }

    fn curiosity_adam(
        &self,
        stream: &Stream,
        group: &mut ParamGroup,
        hyper: &AdamHyper,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo> {
        named(validate_curiosity_hyper(hyper), "curiosity_adam_step")?;
        let scalars = adam_scalars!(curiosity_adam_step, hyper)?;
        let missing = Error::MissingBuffer {
            kernel: "curiosity_adam_step",
            group: group.name().to_string(),
            buffer: "v_max",
        };
        let parts = group.parts_mut();
        let v_max = parts.v_max.ok_or(missing)?;
        let buffers = group_buffers!(curiosity_adam_step, parts, v_max: v_max);
        let records = parts.records;
        self.launch::<curiosity_adam_step::Entry>(stream)
            .plain(&scalars, policy)
            .buffers(&buffers, records)
    }

    fn soft_update(
        &self,
        stream: &Stream,
        target: &mut ParamBuffer,
        online: &dyn ReadBuffer,
        tau: f32,
        policy: ClampPolicy,
        records: &Records,
    ) -> Result<LaunchInfo> {
        let buffers = soft_update_kernel::Buffers {
            target,
            online: online.input(),
        };
        let scalars = soft_update_kernel::Scalars { tau };
        self.launch::<soft_update_kernel::Entry>(stream)
            .plain(&scalars, policy)
            .buffers(&buffers, records)
    }
}

/// A typed launcher's own check (a hyperparameter's, before the launch), its error inside an
/// [`Error::InKernel`] naming the kernel, as the launch's errors do.
fn named(checked: Result<()>, kernel: &'static str) -> Result<()> {
    checked.map_err(|e| Error::InKernel {
        kernel,
        source: Box::new(e),
    })
}

/// IQL's element-wise gradient clip: `0.0` is off, otherwise finite and > 0 (the domain
/// `iql_adam_kernel` declares for its scalar `grad_clip`).
pub(crate) fn validate_grad_clip(grad_clip: f32) -> Result<()> {
    let domain = iql_adam_kernel::DESCRIPTOR
        .params
        .iter()
        .find_map(|p| match p.role {
            ParamRole::Scalar { domain } if p.name == "grad_clip" => Some(domain),
            _ => None,
        })
        .expect("iql_adam_kernel declares a scalar `grad_clip`");
    if domain.contains(grad_clip as f64) {
        Ok(())
    } else {
        Err(Error::InvalidHyper {
            field: "grad_clip",
            value: grad_clip as f64,
            requirement: domain.describe(),
        })
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
            requirement: "0 for curiosity_adam_step (it applies no decay)".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod record_order {
    use adamant_device::abi::{KernelDescriptor, OptimizerEntry, ParamRole};
    use adamant_kernels::optimizers::{
        attn_adam_kernel, curiosity_adam_step, dqn_adam_update_kernel, iql_adam_kernel,
        iqn_adam_kernel,
    };
    use adamant_runtime::nan_check::record_position;
    use adamant_runtime::GroupBuffer;

    fn buffer_names(d: &KernelDescriptor) -> Vec<&'static str> {
        d.params
            .iter()
            .filter(|p| {
                matches!(
                    p.role,
                    ParamRole::ParamBuffer | ParamRole::Input | ParamRole::State
                )
            })
            .map(|p| p.name)
            .collect()
    }

    /// [`record_position`] is the order in which the kernels that step a group take its buffers.
    #[test]
    fn every_group_kernel_takes_p_g_m_v_then_v_max() {
        let adam = [
            dqn_adam_update_kernel::Entry::DESCRIPTOR,
            iqn_adam_kernel::Entry::DESCRIPTOR,
            iql_adam_kernel::Entry::DESCRIPTOR,
            attn_adam_kernel::Entry::DESCRIPTOR,
        ];
        let names = ["p", "g", "m", "v", "v_max"];
        let by_position = |b: GroupBuffer| names[record_position(b)];
        use GroupBuffer::*;
        assert_eq!(
            [Params, Grads, M, V, VMax].map(by_position),
            names,
            "record_position"
        );
        for d in adam {
            assert_eq!(buffer_names(d), names[..4], "{}", d.name);
        }
        assert_eq!(
            buffer_names(curiosity_adam_step::Entry::DESCRIPTOR),
            names,
            "curiosity_adam_step"
        );
    }
}
