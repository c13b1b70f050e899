//! How a [`TrainingSession`](crate::TrainingSession) step updates its groups: one launch of the
//! fused entry (`adamant_fused_step`) over every group, or one stepped launch per group. Both
//! come from the same groups, records and uniform pointers, and the rule that updates each group
//! is decided once, by [`GroupRule::of`], for the records, the per-group launches and the fused
//! tensors alike.
use adamant_kernels::fused::adamant_fused_step;
use adamant_kernels::optimizers::{
    attn_adam_kernel, curiosity_adam_step, dqn_adam_update_kernel, iql_adam_kernel, iqn_adam_kernel,
};
use adamant_runtime::{
    Adamant, Branch, Error, FusedSet, FusedTensor, Owned, ParamGroup, Records, Result, StepStates,
};
use cust::stream::Stream;

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
                let launched = match buffers {
                    RuleBuffers::Dqn(b) => rt
                        .launch::<dqn_adam_update_kernel::Entry>(s)
                        .stepped(&u.dqn, states, record)
                        .buffers(&b, records),
                    RuleBuffers::Iqn(b) => rt
                        .launch::<iqn_adam_kernel::Entry>(s)
                        .stepped(&u.iqn, states, record)
                        .buffers(&b, records),
                    RuleBuffers::Iql(b) => rt
                        .launch::<iql_adam_kernel::Entry>(s)
                        .stepped(&u.iql, states, record)
                        .buffers(&b, records),
                    RuleBuffers::Curiosity(b) => rt
                        .launch::<curiosity_adam_step::Entry>(s)
                        .stepped(&u.curiosity, states, record)
                        .buffers(&b, records),
                    RuleBuffers::Attention(b) => rt
                        .launch::<attn_adam_kernel::Entry>(s)
                        .stepped(&u.attention, states, record)
                        .buffers(&b, records),
                };
                launched.map(|_| ())
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
        .map(|(record, b)| match b {
            RuleBuffers::Dqn(b) => {
                FusedTensor::new::<dqn_adam_update_kernel::Entry>(b, &u.dqn, record)
            }
            RuleBuffers::Iqn(b) => FusedTensor::new::<iqn_adam_kernel::Entry>(b, &u.iqn, record),
            RuleBuffers::Iql(b) => FusedTensor::new::<iql_adam_kernel::Entry>(b, &u.iql, record),
            RuleBuffers::Curiosity(b) => {
                FusedTensor::new::<curiosity_adam_step::Entry>(b, &u.curiosity, record)
            }
            RuleBuffers::Attention(b) => {
                FusedTensor::new::<attn_adam_kernel::Entry>(b, &u.attention, record)
            }
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
}
