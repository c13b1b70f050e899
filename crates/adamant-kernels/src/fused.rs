//! adamant's fused set: every optimizer kernel of the crate as one entry's rules, so a step whose
//! groups use different rules and hyperparameters (the RL session's eight groups: AdamW, Adam
//! with L2 decay, clipped Adam, AMSGrad, and a target network's soft update) is one launch.
//! Each tensor's rule, step record (its group's hyperparameters, step and bound) and clamp scale
//! come from the launch's tables; the branch of each rule is that kernel's own generated code.
use adamant_device::fused_optimizer;

use crate::half_weights::{adamw_bf16, adamw_bf16_sr, adamw_bf16_sr_moments, adamw_f16};
use crate::optimizers::{
    attn_adam_kernel, curiosity_adam_step, dqn_adam_update_kernel, iql_adam_kernel, iqn_adam_kernel,
};
use crate::soft_update::{soft_update_bf16, soft_update_kernel};

fused_optimizer! {
    /// Every optimizer kernel of adamant, in one launch: the rule table's `r` is the `r`-th of
    /// these.
    pub adamant_fused_step = [
        dqn_adam_update_kernel,
        iqn_adam_kernel,
        iql_adam_kernel,
        attn_adam_kernel,
        curiosity_adam_step,
        soft_update_kernel,
    ];
}

fused_optimizer! {
    /// A mixed-precision model's step in one launch (issue 26): AdamW on bf16 or f16 weights
    /// (rounded to nearest or stochastically, moments in f32 or bf16), a bf16 target network's
    /// soft update, beside f32 AdamW and the f32 soft update. Each branch stores in its rule's
    /// type with the clamp held on the stored bits (the audit proves it branch by branch).
    pub adamant_fused_mixed = [
        adamw_bf16,
        adamw_f16,
        adamw_bf16_sr,
        adamw_bf16_sr_moments,
        soft_update_bf16,
        attn_adam_kernel,
        soft_update_kernel,
    ];
}

#[cfg(test)]
mod tests {
    use adamant_device::abi::fused::{fused_slots, FusedEntry, FusedSlot, FUSED_PARAMS};
    use adamant_device::abi::{KernelKind, ParamRole};

    use super::adamant_fused_step::Entry;
    use crate::optimizers::{curiosity_adam_step, dqn_adam_update_kernel};
    use crate::soft_update::soft_update_kernel;

    /// The descriptor's parameters are the fixed list the runtime assembles from, in order, and
    /// the step-state table is last (where the audit looks for the bound).
    #[test]
    fn the_fused_descriptor_has_the_fixed_parameters() {
        let d = Entry::DESCRIPTOR;
        assert_eq!(d.params, FUSED_PARAMS);
        assert_eq!(d.kind, KernelKind::Optimizer);
        assert_eq!(
            d.params.last().map(|p| p.role),
            Some(ParamRole::StepStateTable)
        );
        assert_eq!(d.step_state_table_index(), Some(d.params.len() - 1));
        assert!(d.is_fused() && d.is_multi_tensor());
        assert!(adamant_device::abi::kernel_set(env!("CARGO_CRATE_NAME"))
            .unwrap()
            .iter()
            .any(|k| std::ptr::eq(*k, d)));
    }

    /// The rules are the six kernels' stepped entries in declared order, and the records hold
    /// the most buffers of any (AMSGrad's five).
    #[test]
    fn the_rules_are_the_kernels_stepped_entries_in_order() {
        let names: Vec<&str> = Entry::RULES.iter().map(|r| r.name).collect();
        assert_eq!(
            names,
            [
                "dqn_adam_update_kernel_stepped",
                "iqn_adam_kernel_stepped",
                "iql_adam_kernel_stepped",
                "attn_adam_kernel_stepped",
                "curiosity_adam_step_stepped",
                "soft_update_kernel_stepped",
            ]
        );
        assert_eq!(Entry::RECORD_BUFFERS, curiosity_adam_step::BUFFERS);
        assert_eq!(Entry::RECORD_BUFFERS, 5);
    }

    /// Each rule's buffers take their role's tables in declared order: what the generated fused
    /// chunk reads (`fused_rule`) and the runtime fills.
    #[test]
    fn each_rules_buffers_take_their_roles_tables_in_order() {
        let slots = |d| -> Vec<FusedSlot> {
            fused_slots(d)
                .unwrap()
                .into_iter()
                .map(|(_, s)| s)
                .collect()
        };
        assert_eq!(
            slots(&dqn_adam_update_kernel::STEPPED_DESCRIPTOR),
            [
                FusedSlot::Param(0),
                FusedSlot::Input(0),
                FusedSlot::State(0),
                FusedSlot::State(1),
                FusedSlot::Uniform(0),
            ]
        );
        assert_eq!(
            slots(&curiosity_adam_step::STEPPED_DESCRIPTOR),
            [
                FusedSlot::Param(0),
                FusedSlot::Input(0),
                FusedSlot::State(0),
                FusedSlot::State(1),
                FusedSlot::State(2),
            ]
        );
        assert_eq!(
            slots(&soft_update_kernel::STEPPED_DESCRIPTOR),
            [FusedSlot::Param(0), FusedSlot::Input(0)]
        );
        // Every slot's parameter in the fused entry has the slot's role.
        let d = Entry::DESCRIPTOR;
        for rule in Entry::RULES {
            for (i, slot) in fused_slots(rule).unwrap() {
                let want = match slot {
                    FusedSlot::Param(_) => ParamRole::ParamTable,
                    FusedSlot::Input(_) => ParamRole::InputTable,
                    FusedSlot::State(_) => ParamRole::StateTable,
                    FusedSlot::Uniform(_) => ParamRole::UniformTable,
                };
                assert_eq!(
                    d.params[slot.param_index()].role,
                    want,
                    "{} {}",
                    rule.name,
                    rule.params[i].name
                );
            }
        }
    }
}
