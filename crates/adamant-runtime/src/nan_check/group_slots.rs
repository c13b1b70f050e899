//! The slots that watch parameter groups, derived from the groups, and their results, taken from
//! the groups' diagnostics records instead of a second pass over their buffers.
//!
//! A step's optimizer launches already hold every value of every group buffer in registers, and
//! each launch writes a record of what it read and wrote (`adamant_device::diagnostics`). So a
//! group slot is not scanned by the checker kernel: its result is computed on the host from the
//! record of the group's launch in the same step, and the checker kernel reads only the
//! activations.
//!
//! Which slots a set of groups gets ([`group_slots`]):
//! - every slot of the table (a [`SlotTable`]) whose [`Source::Group`] names one of the groups,
//!   at its index, with its name and check: the table's layout is the report's layout;
//! - then, in group order, a slot for every (group, buffer) that the table does not watch:
//!   `<group>_<buffer>` checking non-finite values for each of the group's buffers (`params`
//!   as `weights`), and `<group>_weight_max` (max-abs, factor [`WEIGHT_MAX_FACTOR`]) for its
//!   weights. Their indices follow the table's.
//!
//! A group therefore has its slots as soon as it is stepped: adding a group adds them, with no
//! line written anywhere.
use adamant_device::diagnostics::TensorRecord;
use adamant_device::guard::{StepGuard, NO_NON_FINITE};
use adamant_device::nan_check::{FLAG_NON_FINITE, FLAG_OVER_THRESHOLD};

use super::report::SlotResult;
use super::slots::{Check, Source};
use super::tables::SlotTable;
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
pub(crate) fn buffers(shape: GroupShape<'_>) -> &'static [GroupBuffer] {
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

/// Every slot of `table` and beyond it that watches `groups` (see the module docs), in index
/// order.
///
/// # Errors
///
/// [`Error::UnknownSlotGroup`] for a table slot whose group is not among `groups` (its result
/// would have no record to come from); [`Error::DuplicateGroup`] for two groups of one name;
/// [`Error::MissingBuffer`] for a table slot on a buffer its group lacks (`v_max` of a group
/// without AMSGrad); [`Error::DuplicateSlotName`] if a derived name is already taken.
pub fn group_slots(table: SlotTable, groups: &[GroupShape<'_>]) -> Result<Vec<GroupSlot>> {
    for (i, g) in groups.iter().enumerate() {
        if groups[..i].iter().any(|h| h.name == g.name) {
            return Err(Error::DuplicateGroup {
                group: g.name.to_string(),
            });
        }
    }
    let mut out = Vec::new();
    for spec in table.slots() {
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
    let mut next = table.len();
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
                let taken = table.slots().iter().any(|s| s.name == name)
                    || out.iter().any(|s| s.name == name);
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

/// A gradient slot's result when the group's step guard skipped the step
/// (`adamant_device::guard`): the update read nothing, so its record is empty, and the guard's
/// verdict is what the slot reports: the gradients hold a non-finite value, first at the
/// guard's index. Every other slot, and a step that was not skipped, keeps its record's result.
pub fn with_guard(mut result: SlotResult, slot: &GroupSlot, guard: &StepGuard) -> SlotResult {
    let skipped = guard.mode != 0 && guard.skip != 0 && guard.first_non_finite != NO_NON_FINITE;
    if slot.buffer == GroupBuffer::Grads && skipped {
        result.flags |= FLAG_NON_FINITE;
        result.first_bad = Some(guard.first_non_finite);
    }
    result
}
