//! How a [`TrainingSession`](crate::TrainingSession) step updates its groups: one launch of the
//! fused entry (`adamant_fused_step`) over every group, or one stepped launch per group. Both
//! come from the same groups, records and uniform pointers, and the rule that updates each group
//! is decided once, by [`GroupRule::of`], for the hyperparameters and records
//! ([`GroupRule::spec`]), the per-group launches and the fused tensors alike (`with_rule!`, the
//! one list of each rule's kernel and uniforms).
use adamant_kernels::fused::adamant_fused_step;
use adamant_kernels::optimizers::{
    attn_adam_kernel, curiosity_adam_step, dqn_adam_update_kernel, iql_adam_kernel, iqn_adam_kernel,
};
use adamant_runtime::{
    AdamHyper, Adamant, Branch, Error, FusedSet, FusedTensor, Owned, ParamGroup, Records, Result,
    StepBound, StepSpec, StepStates,
};
use cust::stream::Stream;

use crate::config::SessionConfig;
use crate::groups::{TrainingGroups, GROUP_COUNT};

/// How a session's step updates its groups. Both update every group with its own rule, record,
/// guard verdict and bound, and give the same results bit for bit (`tests/gpu/session.rs`); they
/// differ in launches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OptimizerLaunch {
    /// One launch of `adamant_fused_step` for every group (group `i` is its tensor `i`): a
    /// captured step is one optimizer node, whatever the groups' rules. The default.
    #[default]
    Fused,
    /// One stepped launch of each group's own kernel; in a captured step, one branch per group,
    /// side by side.
    PerGroup,
}

/// The kernel that updates a group, from its place in [`TrainingGroups::every`] and whether it
/// keeps AMSGrad's `v_max`: the one decision every launch and record of the session follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GroupRule {
    /// The DQN trunk and heads: `dqn_adam_update_kernel` (reads `grad_scale`).
    Dqn,
    /// The IQN head: `iqn_adam_kernel`.
    Iqn,
    /// IQL: `iql_adam_kernel` (element-wise gradient clip).
    Iql,
    /// Curiosity and every extra group with `v_max`: `curiosity_adam_step` (AMSGrad).
    Curiosity,
    /// Attention, TLOB, the decision transformer and every other extra group:
    /// `attn_adam_kernel`.
    Attention,
}

impl GroupRule {
    pub(crate) fn of(index: usize, amsgrad: bool) -> GroupRule {
        match index {
            0 | 1 => GroupRule::Dqn,
            2 => GroupRule::Iqn,
            3 => GroupRule::Iql,
            6 => GroupRule::Curiosity,
            i if i >= GROUP_COUNT && amsgrad => GroupRule::Curiosity,
            _ => GroupRule::Attention,
        }
    }

    /// The kernel's plain entry: what a checkpoint of a group of this rule is saved for.
    pub(crate) fn descriptor(self) -> &'static adamant_device::abi::KernelDescriptor {
        match self {
            GroupRule::Dqn => &dqn_adam_update_kernel::DESCRIPTOR,
            GroupRule::Iqn => &iqn_adam_kernel::DESCRIPTOR,
            GroupRule::Iql => &iql_adam_kernel::DESCRIPTOR,
            GroupRule::Curiosity => &curiosity_adam_step::DESCRIPTOR,
            GroupRule::Attention => &attn_adam_kernel::DESCRIPTOR,
        }
    }

    /// The hyperparameters of `cfg` this rule's groups take.
    pub(crate) fn hyper(self, cfg: &SessionConfig) -> &AdamHyper {
        match self {
            GroupRule::Dqn => &cfg.dqn,
            GroupRule::Iqn => &cfg.iqn,
            GroupRule::Iql => &cfg.iql,
            GroupRule::Curiosity => &cfg.curiosity,
            GroupRule::Attention => &cfg.attention,
        }
    }

    /// The step-state record of a group of this rule: Adam's scalars from its hyperparameters,
    /// made for its kernel with the kernel's own hyperparameters (IQL's gradient clip from
    /// `cfg`).
    pub(crate) fn spec(self, cfg: &SessionConfig, bound: StepBound) -> Result<StepSpec> {
        let hyper = self.hyper(cfg);
        let spec = StepSpec::adam(hyper, bound)?;
        let (eps, weight_decay) = (hyper.eps, hyper.weight_decay);
        match self {
            GroupRule::Dqn => {
                spec.with_kernel::<dqn_adam_update_kernel::Entry>(dqn_adam_update_kernel::Hyper {
                    eps,
                    weight_decay,
                })
            }
            GroupRule::Iqn => spec.with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper {
                eps,
                weight_decay,
            }),
            GroupRule::Iql => spec.with_kernel::<iql_adam_kernel::Entry>(iql_adam_kernel::Hyper {
                eps,
                weight_decay,
                grad_clip: cfg.iql_grad_clip,
            }),
            GroupRule::Curiosity => {
                spec.with_kernel::<curiosity_adam_step::Entry>(curiosity_adam_step::Hyper { eps })
            }
            GroupRule::Attention => {
                spec.with_kernel::<attn_adam_kernel::Entry>(attn_adam_kernel::Hyper {
                    eps,
                    weight_decay,
                })
            }
        }
    }
}

/// The uniform pointers each kernel reads besides its record (the DQN groups' `grad_scale`).
#[derive(Clone, Copy)]
pub(crate) struct Uniforms {
    pub(crate) dqn: dqn_adam_update_kernel::StepScalars,
    pub(crate) iqn: iqn_adam_kernel::StepScalars,
    pub(crate) iql: iql_adam_kernel::StepScalars,
    pub(crate) attention: attn_adam_kernel::StepScalars,
    pub(crate) curiosity: curiosity_adam_step::StepScalars,
}

/// One group's buffers, typed for its rule.
enum RuleBuffers<'a> {
    Dqn(dqn_adam_update_kernel::Buffers<Owned<'a>>),
    Iqn(iqn_adam_kernel::Buffers<Owned<'a>>),
    Iql(iql_adam_kernel::Buffers<Owned<'a>>),
    Curiosity(curiosity_adam_step::Buffers<Owned<'a>>),
    Attention(attn_adam_kernel::Buffers<Owned<'a>>),
}

/// `$body` with `$kernel` the module of the rule of `$buffers` ([`RuleBuffers`]), `$b` its
/// buffers and `$scalars` its uniforms from `$u` ([`Uniforms`]): the one list of which kernel and
/// which uniforms go with which buffers, for the per-group launches and the fused tensors alike.
macro_rules! with_rule {
    ($buffers:expr, $u:expr, |$kernel:ident, $b:ident, $scalars:ident| $body:expr) => {
        match $buffers {
            RuleBuffers::Dqn($b) => {
                use dqn_adam_update_kernel as $kernel;
                let $scalars = &$u.dqn;
                $body
            }
            RuleBuffers::Iqn($b) => {
                use iqn_adam_kernel as $kernel;
                let $scalars = &$u.iqn;
                $body
            }
            RuleBuffers::Iql($b) => {
                use iql_adam_kernel as $kernel;
                let $scalars = &$u.iql;
                $body
            }
            RuleBuffers::Curiosity($b) => {
                use curiosity_adam_step as $kernel;
                let $scalars = &$u.curiosity;
                $body
            }
            RuleBuffers::Attention($b) => {
                use attn_adam_kernel as $kernel;
                let $scalars = &$u.attention;
                $body
            }
        }
    };
}

/// Group `index`'s buffers for its rule, and its diagnostics records.
fn rule_buffers(index: usize, group: &mut ParamGroup) -> Result<(RuleBuffers<'_>, &Records)> {
    let rule = GroupRule::of(index, group.has_amsgrad());
    let name = group.name().to_string();
    let parts = group.parts_mut();
    let (p, g, m, v) = (parts.params, parts.grads.input(), parts.m, parts.v);
    let buffers = match rule {
        GroupRule::Dqn => RuleBuffers::Dqn(dqn_adam_update_kernel::Buffers { p, g, m, v }),
        GroupRule::Iqn => RuleBuffers::Iqn(iqn_adam_kernel::Buffers { p, g, m, v }),
        GroupRule::Iql => RuleBuffers::Iql(iql_adam_kernel::Buffers { p, g, m, v }),
        GroupRule::Attention => RuleBuffers::Attention(attn_adam_kernel::Buffers { p, g, m, v }),
        GroupRule::Curiosity => {
            let v_max = parts.v_max.ok_or(Error::MissingBuffer {
                kernel: "curiosity_adam_step",
                group: name,
                buffer: "v_max",
            })?;
            RuleBuffers::Curiosity(curiosity_adam_step::Buffers { p, g, m, v, v_max })
        }
    };
    Ok((buffers, parts.records))
}

/// One branch per group: its own kernel's stepped launch with record `i` (group `i` of
/// [`TrainingGroups::every`]) and its own diagnostics records.
pub(crate) fn per_group<'a>(
    rt: &'a Adamant,
    states: &'a StepStates,
    u: Uniforms,
    groups: &'a mut TrainingGroups,
) -> Vec<Branch<'a>> {
    groups
        .every_mut()
        .into_iter()
        .enumerate()
        .map(|(record, group)| {
            Box::new(move |s: &Stream| {
                let (buffers, records) = rule_buffers(record, group)?;
                with_rule!(buffers, u, |kernel, b, scalars| rt
                    .launch::<kernel::Entry>(s)
                    .stepped(scalars, states, record)
                    .buffers(&b, records)
                    .map(|_| ()))
            }) as Branch<'a>
        })
        .collect()
}

/// Every group as a tensor of the fused launch (tensor `i` is group `i`, with record `i`),
/// handed to `f`: one list for the launch and for the sync before a capture.
fn fused_tensors<R>(
    groups: &mut TrainingGroups,
    u: &Uniforms,
    f: impl FnOnce(&[FusedTensor<'_>]) -> Result<R>,
) -> Result<R> {
    let buffers = groups
        .every_mut()
        .into_iter()
        .enumerate()
        .map(|(i, group)| rule_buffers(i, group).map(|(b, _)| b))
        .collect::<Result<Vec<_>>>()?;
    let tensors = buffers
        .iter()
        .enumerate()
        .map(|(record, b)| {
            with_rule!(
                b,
                u,
                |kernel, b, scalars| FusedTensor::new::<kernel::Entry>(b, scalars, record)
            )
        })
        .collect::<Result<Vec<_>>>()?;
    f(&tensors)
}

/// The one branch of the fused launch over every group.
pub(crate) fn fused<'a>(
    rt: &'a Adamant,
    states: &'a StepStates,
    u: Uniforms,
    groups: &'a mut TrainingGroups,
    set: &'a mut FusedSet,
) -> Branch<'a> {
    Box::new(move |s: &Stream| {
        fused_tensors(groups, &u, |tensors| {
            rt.launch_fused::<adamant_fused_step::Entry>(s, set, tensors, states)
                .map(|_| ())
        })
    })
}

/// Builds the fused set's tables for the groups before a capture (a capture cannot upload them).
pub(crate) fn sync_fused(
    groups: &mut TrainingGroups,
    u: &Uniforms,
    states: &StepStates,
    set: &mut FusedSet,
) -> Result<()> {
    fused_tensors(groups, u, |tensors| {
        set.sync::<adamant_fused_step::Entry>(tensors, states)
            .map(|_| ())
    })
}

#[cfg(test)]
mod tests {
    use super::GroupRule;

    /// The seed's eight groups keep their kernels; an extra group is AMSGrad's only with `v_max`.
    #[test]
    fn each_group_has_its_seed_kernel() {
        let seed: Vec<GroupRule> = (0..8).map(|i| GroupRule::of(i, i == 6)).collect();
        use GroupRule::*;
        assert_eq!(
            seed,
            [Dqn, Dqn, Iqn, Iql, Attention, Attention, Curiosity, Attention]
        );
        assert_eq!(GroupRule::of(9, true), Curiosity);
        assert_eq!(GroupRule::of(9, false), Attention);
        assert_eq!(GroupRule::of(2, true), Iqn);
        assert_eq!(GroupRule::of(4, true), Attention);
    }

    /// Each of the seed's groups takes its own part of the config (distinct learning rates tell
    /// them apart), and its record is made for its kernel.
    #[test]
    fn each_group_takes_its_hyperparameters_and_kernel() {
        use adamant_runtime::{AdamHyper, StepBound};
        let h = |lr: f32| AdamHyper::new(lr, 0.9, 0.999, 1e-8, 0.0, 1).unwrap();
        let cfg = crate::SessionConfig {
            dqn: h(1e-1),
            iqn: h(2e-1),
            iql: h(3e-1),
            iql_grad_clip: 0.5,
            attention: h(4e-1),
            curiosity: h(5e-1),
        };
        // The seed's order: dqn trunk, dqn heads, iqn, iql, attention, tlob, curiosity, dt.
        let lrs = [1e-1, 1e-1, 2e-1, 3e-1, 4e-1, 4e-1, 5e-1, 4e-1];
        let kernels = [
            "dqn_adam_update_kernel",
            "dqn_adam_update_kernel",
            "iqn_adam_kernel",
            "iql_adam_kernel",
            "attn_adam_kernel",
            "attn_adam_kernel",
            "curiosity_adam_step",
            "attn_adam_kernel",
        ];
        for i in 0..8 {
            let spec = GroupRule::of(i, i == 6)
                .spec(&cfg, StepBound::FromQAbsRef)
                .unwrap();
            assert_eq!(spec.lr, lrs[i], "group {i}");
            let kernel = spec.kernel.as_ref().expect("made for a kernel");
            assert_eq!(kernel.name(), kernels[i], "group {i}");
        }
        let extra = GroupRule::of(8, true)
            .spec(&cfg, StepBound::FromQAbsRef)
            .unwrap();
        assert_eq!(extra.lr, 5e-1);
    }
}
