//! The seed's slot table ([`TABLE`], named `seed`): the one place a NaN-check slot of the
//! seed's training step is declared (its eight groups' buffers and its activations). The
//! checker ([`adamant_runtime::nan_check`]) is generic over tables; this is the one the seed's
//! [`TrainingSession`](crate::TrainingSession) checks.
//!
//! Each line of `slot_table!` gives a slot's index, its name, its check and the buffer it
//! watches in the reference training step. Everything else is derived from the table: the
//! output buffers' sizes ([`SLOT_COUNT`] and the checked range), the kernel's work layout and
//! pointer/length metadata (from the bindings of the slots in range), the thresholds
//! (`factor × q_abs_ref_eff`), the name table of the report, `docs/audit.md` and the audit CLI.
//! The slot types and the checker that reads the table are [`adamant_runtime::nan_check`]'s.
//!
//! Adding a slot is one line here plus binding its buffer: [`SlotBindings::bind`] for an
//! activation, or nothing more for a parameter-group buffer (bound by
//! [`SlotBindings::bind_group`] from the group's name).
//!
//! [`SlotBindings::bind`]: adamant_runtime::nan_check::SlotBindings::bind
//! [`SlotBindings::bind_group`]: adamant_runtime::nan_check::SlotBindings::bind_group
use std::ops::RangeInclusive;

use adamant_runtime::nan_check::{Check, SlotSpec, Source};
use adamant_runtime::{slot_table, GroupBuffer};

const NON_FINITE: Check = Check::NonFinite;

const fn max_abs(factor: f32) -> Check {
    Check::MaxAbs { factor }
}

const fn group(group: &'static str, buffer: GroupBuffer) -> Source {
    Source::Group { group, buffer }
}

const fn activation(what: &'static str) -> Source {
    Source::Activation { what }
}

use GroupBuffer::{Grads, Params, VMax, M, V};

slot_table! {
    "seed";
    // Gradients, as left by the backward pass. Group names are those of `TrainingGroups`.
     0 dqn_trunk_grads:    NON_FINITE,    group("dqn_trunk", Grads);
     1 dqn_heads_grads:    NON_FINITE,    group("dqn_heads", Grads);
     2 iqn_grads:          NON_FINITE,    group("iqn_online", Grads);
     3 iql_grads:          NON_FINITE,    group("iql", Grads);
     4 attn_grads:         NON_FINITE,    group("attention", Grads);
     5 tlob_grads:         NON_FINITE,    group("tlob", Grads);
     6 curiosity_grads:    NON_FINITE,    group("curiosity", Grads);
     7 dt_grads:           NON_FINITE,    group("decision_transformer", Grads);
    // Adam moments.
     8 dqn_trunk_m:        NON_FINITE,    group("dqn_trunk", M);
     9 dqn_trunk_v:        NON_FINITE,    group("dqn_trunk", V);
    10 dqn_heads_m:        NON_FINITE,    group("dqn_heads", M);
    11 dqn_heads_v:        NON_FINITE,    group("dqn_heads", V);
    12 iqn_m:              NON_FINITE,    group("iqn_online", M);
    13 iqn_v:              NON_FINITE,    group("iqn_online", V);
    14 iql_m:              NON_FINITE,    group("iql", M);
    15 iql_v:              NON_FINITE,    group("iql", V);
    16 attn_m:             NON_FINITE,    group("attention", M);
    17 attn_v:             NON_FINITE,    group("attention", V);
    18 tlob_m:             NON_FINITE,    group("tlob", M);
    19 tlob_v:             NON_FINITE,    group("tlob", V);
    20 curiosity_m:        NON_FINITE,    group("curiosity", M);
    21 curiosity_v:        NON_FINITE,    group("curiosity", V);
    22 dt_m:               NON_FINITE,    group("decision_transformer", M);
    23 dt_v:               NON_FINITE,    group("decision_transformer", V);
    // Activations of the training step (the seed's fused check starts here).
    24 dqn_trunk_out:      NON_FINITE,    activation("DQN trunk forward output (shared features)");
    25 dqn_q_values:       NON_FINITE,    activation("DQN heads output Q(s, a)");
    26 iqn_trunk_grad_out: NON_FINITE,    activation("apply_iqn_trunk_gradient output, grad_iqn @ W_iqn^T");
    27 iqn_quantiles:      NON_FINITE,    activation("IQN quantile values Z(s, a, tau)");
    28 iqn_quantile_loss:  NON_FINITE,    activation("IQN quantile Huber loss per sample");
    29 iql_value_out:      NON_FINITE,    activation("IQL value network output V(s)");
    30 iql_policy_logits:  NON_FINITE,    activation("IQL policy logits");
    31 attn_out:           NON_FINITE,    activation("GpuAttention output");
    32 tlob_out:           NON_FINITE,    activation("GpuTlob output");
    33 curiosity_pred:     NON_FINITE,    activation("curiosity forward-model prediction");
    34 curiosity_reward:   NON_FINITE,    activation("curiosity intrinsic reward");
    35 td_errors:          NON_FINITE,    activation("DQN TD errors");
    // Weights after the optimizer step.
    36 dqn_trunk_weights:  NON_FINITE,    group("dqn_trunk", Params);
    37 dqn_heads_weights:  NON_FINITE,    group("dqn_heads", Params);
    38 iqn_weights:        NON_FINITE,    group("iqn_online", Params);
    39 iql_weights:        NON_FINITE,    group("iql", Params);
    40 attn_weights:       NON_FINITE,    group("attention", Params);
    41 tlob_weights:       NON_FINITE,    group("tlob", Params);
    42 curiosity_weights:  NON_FINITE,    group("curiosity", Params);
    43 dt_weights:         NON_FINITE,    group("decision_transformer", Params);
    // Early warnings: finite but far beyond the clamp bound (100 × q_abs_ref_eff).
    44 trunk_weight_max:   max_abs(1e3),  group("dqn_trunk", Params);
    45 heads_weight_max:   max_abs(1e3),  group("dqn_heads", Params);
    46 q_value_max:        max_abs(1e2),  activation("DQN heads output Q(s, a)");
    47 curiosity_v_max:    NON_FINITE,    group("curiosity", VMax);
    48 iqn_weight_max:     max_abs(1e3),  group("iqn_online", Params);
}

/// Every declared slot of the seed's table, in index order ([`TABLE`]'s).
pub const SLOTS: &[SlotSpec] = TABLE.slots();

/// Number of declared slots: the size of every per-slot output of a full-range check.
pub const SLOT_COUNT: usize = TABLE.len();

/// Every slot, in one launch.
pub const ALL_SLOTS: RangeInclusive<usize> = TABLE.all();

/// The seed's fused check: activations, weights and the weight-max early warnings.
pub const FUSED_RANGE: RangeInclusive<usize> = 24..=48;

// The table's invariants are checked when the crate compiles (by `slot_table!`); so is the
// fused range.
const _: () = assert!(
    *FUSED_RANGE.end() < SLOT_COUNT,
    "FUSED_RANGE ends past the table"
);

#[cfg(test)]
mod group_slot_tests {
    //! The group slots of the seed's groups over this table
    //! ([`group_slots`](adamant_runtime::nan_check::group_slots)).
    use super::*;
    use adamant_device::diagnostics::{
        buffer_word as word, record_words, TensorRecord, BUF_FIRST, BUF_NON_FINITE, MAX_STORED,
    };
    use adamant_device::nan_check::{FLAG_NON_FINITE, FLAG_OVER_THRESHOLD};
    use adamant_runtime::nan_check::{group_slots, result_from_record, with_guard, GroupShape};
    use adamant_runtime::Error;

    /// The buffers a group of this shape has, in record order.
    fn buffers(shape: GroupShape<'_>) -> &'static [GroupBuffer] {
        if shape.amsgrad {
            &[Params, Grads, M, V, VMax]
        } else {
            &[Params, Grads, M, V]
        }
    }

    fn seed() -> Vec<GroupShape<'static>> {
        crate::GROUP_SHAPES.to_vec()
    }

    #[test]
    fn the_seed_groups_keep_the_tables_slots_and_gain_the_missing_weight_maxima() {
        let slots = group_slots(TABLE, &seed()).unwrap();
        for spec in SLOTS {
            if let Source::Group { group, buffer } = spec.source {
                let s = slots.iter().find(|s| s.index == spec.index).unwrap();
                assert_eq!(
                    (s.name.as_str(), s.group.as_str(), s.buffer),
                    (spec.name, group, buffer)
                );
                assert_eq!(s.check, spec.check);
            }
        }
        let derived: Vec<(usize, &str)> = slots
            .iter()
            .filter(|s| !s.in_table)
            .map(|s| (s.index, s.name.as_str()))
            .collect();
        assert_eq!(
            derived,
            [
                (49, "iql_weight_max"),
                (50, "attention_weight_max"),
                (51, "tlob_weight_max"),
                (52, "curiosity_weight_max"),
                (53, "decision_transformer_weight_max"),
            ]
        );
    }

    #[test]
    fn an_added_group_gets_every_slot_without_a_line_of_table() {
        let mut groups = seed();
        groups.push(GroupShape {
            name: "world_model",
            amsgrad: false,
        });
        let slots = group_slots(TABLE, &groups).unwrap();
        let mine: Vec<(usize, &str, GroupBuffer)> = slots
            .iter()
            .filter(|s| s.group == "world_model")
            .map(|s| (s.index, s.name.as_str(), s.buffer))
            .collect();
        assert_eq!(
            mine,
            [
                (54, "world_model_weights", GroupBuffer::Params),
                (55, "world_model_weight_max", GroupBuffer::Params),
                (56, "world_model_grads", GroupBuffer::Grads),
                (57, "world_model_m", GroupBuffer::M),
                (58, "world_model_v", GroupBuffer::V),
            ]
        );
        // Every buffer of every group is watched for non-finite values, every group's weights
        // for their maximum.
        for g in &groups {
            for &b in buffers(*g) {
                assert!(slots
                    .iter()
                    .any(|s| s.group == g.name && s.buffer == b && s.check == Check::NonFinite));
            }
            assert!(slots.iter().any(|s| s.group == g.name
                && s.buffer == GroupBuffer::Params
                && matches!(s.check, Check::MaxAbs { .. })));
        }
    }

    #[test]
    fn a_table_group_missing_from_the_step_is_an_error() {
        let groups: Vec<_> = seed().into_iter().filter(|g| g.name != "tlob").collect();
        assert!(matches!(
            group_slots(TABLE, &groups),
            Err(Error::UnknownSlotGroup { group }) if group == "tlob"
        ));
    }

    #[test]
    fn two_groups_of_one_name_are_an_error() {
        let mut groups = seed();
        groups.push(groups[2]);
        assert!(matches!(
            group_slots(TABLE, &groups),
            Err(Error::DuplicateGroup { group }) if group == "iqn_online"
        ));
    }

    #[test]
    fn a_derived_name_that_is_taken_is_an_error() {
        // A group called `iqn` would derive `iqn_grads`... no: `iqn_grads` is slot 2's name.
        let mut groups = seed();
        groups.push(GroupShape {
            name: "iqn",
            amsgrad: false,
        });
        assert!(matches!(
            group_slots(TABLE, &groups),
            Err(Error::DuplicateSlotName { name }) if name == "iqn_weights"
        ));
    }

    #[test]
    fn a_result_reads_its_buffers_facts_and_the_weights_maximum() {
        let slots = group_slots(TABLE, &seed()).unwrap();
        let mut words = vec![0u32; record_words(4)];
        for (w, word) in words.iter_mut().enumerate() {
            *word = adamant_device::diagnostics::identity(w);
        }
        words[MAX_STORED] = 1500f32.to_bits();
        words[word(2) + BUF_NON_FINITE] = 3; // m
        words[word(2) + BUF_FIRST] = 17;
        words[word(2) + BUF_FIRST + 1] = 0;
        let record = TensorRecord::from_words(&words, 4);
        let by_name = |n: &str| slots.iter().find(|s| s.name == n).unwrap();
        let m = result_from_record(by_name("iqn_m"), &record, 4096, 1.0);
        assert_eq!(
            (m.flags, m.first_bad, m.max_abs_known),
            (FLAG_NON_FINITE, Some(17), false)
        );
        let weights = result_from_record(by_name("iqn_weights"), &record, 4096, 1.0);
        assert_eq!(weights.flags, 0, "non-finite only: 1500 is finite");
        let max = result_from_record(by_name("iqn_weight_max"), &record, 4096, 1.0);
        assert_eq!(
            (max.flags, max.max_abs, max.first_bad),
            (FLAG_OVER_THRESHOLD, 1500.0, None)
        );
        let quiet = result_from_record(by_name("iqn_weight_max"), &record, 4096, 2.0);
        assert_eq!(quiet.flags, 0, "threshold 2e3 at q_abs_ref_eff 2");
    }

    #[test]
    fn a_step_the_guard_skipped_shows_in_the_gradient_slot_only() {
        use adamant_device::guard::{StepGuard, GUARD_SKIP_NON_FINITE, NO_NON_FINITE};
        let slots = group_slots(TABLE, &seed()).unwrap();
        let by_name = |n: &str| slots.iter().find(|s| s.name == n).unwrap();
        let grads = slots
            .iter()
            .find(|s| s.group == "iqn_online" && s.buffer == GroupBuffer::Grads)
            .expect("the seed watches the IQN gradients");
        // The skipped step's update read nothing: its record is empty.
        let empty = TensorRecord::empty(4);
        let skipped = StepGuard {
            mode: GUARD_SKIP_NON_FINITE,
            skip: 1,
            first_non_finite: 1234,
            ..StepGuard::default()
        };
        let quiet = result_from_record(grads, &empty, 4096, 1.0);
        assert_eq!(quiet.flags, 0);
        let tripped = with_guard(quiet, grads, &skipped);
        assert_eq!(
            (tripped.flags, tripped.first_bad),
            (FLAG_NON_FINITE, Some(1234))
        );
        // The weights were not touched: their slot stays quiet.
        let weights = by_name("iqn_weights");
        let w = with_guard(
            result_from_record(weights, &empty, 4096, 1.0),
            weights,
            &skipped,
        );
        assert_eq!(w.flags, 0);
        // A guard that did not skip (or no guard) changes nothing.
        for guard in [
            StepGuard {
                skip: 0,
                first_non_finite: NO_NON_FINITE,
                ..skipped
            },
            StepGuard::default(),
        ] {
            let r = with_guard(result_from_record(grads, &empty, 4096, 1.0), grads, &guard);
            assert_eq!(r.flags, 0);
        }
    }
}
