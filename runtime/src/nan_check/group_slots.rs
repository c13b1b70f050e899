//! The slots that watch parameter groups, derived from the groups, and their results, taken from
//! the groups' diagnostics records instead of a second pass over their buffers.
//!
//! A step's optimizer launches already hold every value of every group buffer in registers, and
//! each launch writes a record of what it read and wrote (`adamant_kernels::diagnostics`). So a
//! group slot is not scanned by the checker kernel: its result is computed on the host from the
//! record of the group's launch in the same step, and the checker kernel reads only the
//! activations.
//!
//! Which slots a set of groups gets ([`group_slots`]):
//! - every slot of the table ([`super::SLOTS`]) whose [`Source::Group`] names one of the groups,
//!   at its index, with its name and check: the seed's 49-slot layout is the report's layout;
//! - then, in group order, a slot for every (group, buffer) that the table does not watch:
//!   `<group>_<buffer>` checking non-finite values for each of the group's buffers (`params`
//!   as `weights`), and `<group>_weight_max` (max-abs, factor [`WEIGHT_MAX_FACTOR`]) for its
//!   weights. Their indices follow the table's.
//!
//! A group therefore has its slots as soon as it is stepped: adding a group adds them, with no
//! line written anywhere.
use adamant_kernels::diagnostics::TensorRecord;
use adamant_kernels::nan_check::{FLAG_NON_FINITE, FLAG_OVER_THRESHOLD};

use super::report::SlotResult;
use super::slots::{Check, Source, SLOTS, SLOT_COUNT};
use crate::error::{Error, Result};
use crate::groups::GroupBuffer;

/// The max-abs factor of a derived `<group>_weight_max` slot: the table's weight-max slots'
/// (ten times the clamp bound's factor, so a clamped group can only trip it with a non-finite
/// weight, and an unclamped one when it drifts ten bounds out).
pub const WEIGHT_MAX_FACTOR: f32 = 1e3;

/// One slot that watches a buffer of a group.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupSlot {
    /// Its index in the report: the table's for a table slot, after the table for a derived one.
    pub index: usize,
    /// Its name, unique in the report.
    pub name: String,
    /// What it checks.
    pub check: Check,
    /// Which group, by name.
    pub group: String,
    /// Which of its buffers.
    pub buffer: GroupBuffer,
    /// Whether the slot is a line of the table (false: derived here).
    pub in_table: bool,
}

/// A group as the slots see it: its name and whether it keeps AMSGrad's `v_max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupShape<'a> {
    /// [`crate::ParamGroup::name`].
    pub name: &'a str,
    /// [`crate::ParamGroup::has_amsgrad`].
    pub amsgrad: bool,
}

/// The buffers a group of this shape has, in record order.
fn buffers(shape: GroupShape<'_>) -> &'static [GroupBuffer] {
    use GroupBuffer::*;
    if shape.amsgrad {
        &[Params, Grads, M, V, VMax]
    } else {
        &[Params, Grads, M, V]
    }
}

/// The derived name of a non-finite slot of `buffer`: `weights` for the parameters, as the
/// table names them.
fn buffer_word(buffer: GroupBuffer) -> &'static str {
    match buffer {
        GroupBuffer::Params => "weights",
        other => other.name(),
    }
}

/// Every slot that watches `groups` (see the module docs), table slots first, in index order.
///
/// # Errors
///
/// [`Error::UnknownSlotGroup`] for a table slot whose group is not among `groups` (its result
/// would have no record to come from); [`Error::DuplicateGroup`] for two groups of one name;
/// [`Error::MissingBuffer`] for a table slot on a buffer its group lacks (`v_max` of a group
/// without AMSGrad); [`Error::DuplicateSlotName`] if a derived name is already taken.
pub fn group_slots(groups: &[GroupShape<'_>]) -> Result<Vec<GroupSlot>> {
    for (i, g) in groups.iter().enumerate() {
        if groups[..i].iter().any(|h| h.name == g.name) {
            return Err(Error::DuplicateGroup {
                group: g.name.to_string(),
            });
        }
    }
    let mut out = Vec::new();
    for spec in SLOTS {
        let Source::Group { group, buffer } = spec.source else {
            continue;
        };
        let shape =
            groups
                .iter()
                .find(|g| g.name == group)
                .ok_or_else(|| Error::UnknownSlotGroup {
                    group: group.to_string(),
                })?;
        if !buffers(*shape).contains(&buffer) {
            return Err(Error::MissingBuffer {
                kernel: "nan check",
                group: group.to_string(),
                buffer: buffer.name(),
            });
        }
        out.push(GroupSlot {
            index: spec.index,
            name: spec.name.to_string(),
            check: spec.check,
            group: group.to_string(),
            buffer,
            in_table: true,
        });
    }
    let mut next = SLOT_COUNT;
    for shape in groups {
        for &buffer in buffers(*shape) {
            let watched = |max_abs: bool| {
                out.iter().any(|s| {
                    s.group == shape.name
                        && s.buffer == buffer
                        && matches!(s.check, Check::MaxAbs { .. }) == max_abs
                })
            };
            let mut wanted = vec![];
            if !watched(false) {
                wanted.push((
                    format!("{}_{}", shape.name, buffer_word(buffer)),
                    Check::NonFinite,
                ));
            }
            if buffer == GroupBuffer::Params && !watched(true) {
                wanted.push((
                    format!("{}_weight_max", shape.name),
                    Check::MaxAbs {
                        factor: WEIGHT_MAX_FACTOR,
                    },
                ));
            }
            for (name, check) in wanted {
                let taken =
                    SLOTS.iter().any(|s| s.name == name) || out.iter().any(|s| s.name == name);
                if taken {
                    return Err(Error::DuplicateSlotName { name });
                }
                out.push(GroupSlot {
                    index: next,
                    name,
                    check,
                    group: shape.name.to_string(),
                    buffer,
                    in_table: false,
                });
                next += 1;
            }
        }
    }
    out.sort_by_key(|s| s.index);
    Ok(out)
}

/// The position of `buffer`'s facts in a group's record: the kernels that step a
/// [`crate::ParamGroup`] take `p`, `g`, `m`, `v` (and `v_max`) in that order (a test checks it
/// against their descriptors).
pub fn record_position(buffer: GroupBuffer) -> usize {
    match buffer {
        GroupBuffer::Params => 0,
        GroupBuffer::Grads => 1,
        GroupBuffer::M => 2,
        GroupBuffer::V => 3,
        GroupBuffer::VMax => 4,
    }
}

/// `slot`'s result from its group's record of the step, over `len` elements, with thresholds at
/// `q_abs_ref_eff`:
/// - non-finite: the record's count for the buffer, and its first non-finite element;
/// - max-abs (the weights): also the largest stored `|p|` against `factor × q_abs_ref_eff`. The
///   record keeps the maximum, not where it is: a finite weight over the threshold sets the flag
///   without a first index.
///
/// Only the weights' maximum is kept by the records; for another buffer the result's `max_abs`
/// is not known ([`SlotResult::max_abs_known`] is false).
pub fn result_from_record(
    slot: &GroupSlot,
    record: &TensorRecord,
    len: usize,
    q_abs_ref_eff: f32,
) -> SlotResult {
    let facts = record
        .buffers()
        .get(record_position(slot.buffer))
        .copied()
        .unwrap_or_default();
    let mut flags = 0;
    let mut first_bad = None;
    if facts.non_finite > 0 {
        flags |= FLAG_NON_FINITE;
        first_bad = Some(facts.first_non_finite);
    }
    let is_weights = slot.buffer == GroupBuffer::Params;
    let max_abs = if is_weights { record.max_stored() } else { 0.0 };
    let threshold = slot.check.threshold(q_abs_ref_eff);
    if let Some(t) = threshold {
        if max_abs.is_finite() && max_abs > t {
            flags |= FLAG_OVER_THRESHOLD;
        }
    }
    SlotResult {
        index: slot.index,
        name: slot.name.clone(),
        check: slot.check,
        len,
        flags,
        max_abs,
        max_abs_known: is_weights,
        threshold,
        first_bad,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adamant_kernels::diagnostics::{
        buffer_word as word, record_words, BUF_FIRST, BUF_NON_FINITE, MAX_STORED,
    };

    fn seed() -> Vec<GroupShape<'static>> {
        crate::training::SEED_GROUPS.to_vec()
    }

    #[test]
    fn the_seed_groups_keep_the_tables_slots_and_gain_the_missing_weight_maxima() {
        let slots = group_slots(&seed()).unwrap();
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
        let slots = group_slots(&groups).unwrap();
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
            group_slots(&groups),
            Err(Error::UnknownSlotGroup { group }) if group == "tlob"
        ));
    }

    #[test]
    fn two_groups_of_one_name_are_an_error() {
        let mut groups = seed();
        groups.push(groups[2]);
        assert!(matches!(
            group_slots(&groups),
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
            group_slots(&groups),
            Err(Error::DuplicateSlotName { name }) if name == "iqn_weights"
        ));
    }

    #[test]
    fn a_result_reads_its_buffers_facts_and_the_weights_maximum() {
        let slots = group_slots(&seed()).unwrap();
        let mut words = vec![0u32; record_words(4)];
        for (w, word) in words.iter_mut().enumerate() {
            *word = adamant_kernels::diagnostics::identity(w);
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
}

#[cfg(test)]
mod record_order {
    use super::*;
    use adamant_kernels::abi::{KernelDescriptor, OptimizerEntry, ParamRole};
    use adamant_kernels::optimizers::{
        attn_adam_kernel, curiosity_adam_step, dqn_adam_update_kernel, iql_adam_kernel,
        iqn_adam_kernel,
    };

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
