//! A check's result, decoded with its slot table's names (the seed's `halt_grad_collapse` name
//! table, derived here instead of kept by hand), ready for a log line.
use std::fmt;
use std::ops::RangeInclusive;

use adamant_device::nan_check::{FLAG_NON_FINITE, FLAG_OVER_THRESHOLD, NO_BAD_INDEX};

use super::slots::Check;
use super::tables::SlotId;
use super::tables::SlotTable;
use crate::error::{Error, Result};

/// One slot's outcome in a [`NanReport`]. Its `Display` is the slot's part of the log line:
/// `slot <index> <name>: over-threshold (bits 0b10), max |x| 1.5e3 > threshold 1e3, first bad
/// element 17 of 4096`.
#[derive(Clone, Debug, PartialEq)]
pub struct SlotResult {
    /// The slot's index in its table (past the table for a slot derived from a group).
    pub index: usize,
    /// The slot's name (the table's, or one derived from a group).
    pub name: String,
    /// The slot's check, from the table.
    pub check: Check,
    /// Elements checked.
    pub len: usize,
    /// The kernel's flag word ([`FLAG_NON_FINITE`], [`FLAG_OVER_THRESHOLD`]).
    pub flags: u32,
    /// Largest `|x|` seen (`NaN` if a NaN was seen, `inf` if an infinity and no NaN; 0 for an
    /// empty slot), when [`SlotResult::max_abs_known`].
    pub max_abs: f32,
    /// Whether `max_abs` was measured: always for a slot the checker kernel scans; for a group
    /// slot taken from the optimizer's diagnostics records, only for the weights (the records
    /// keep no maximum of the gradients and moments), so 0.0 stands for "not kept" there.
    pub max_abs_known: bool,
    /// The max-abs threshold that applied, for [`Check::MaxAbs`] slots.
    pub threshold: Option<f32>,
    /// Index (within the slot) of the first element that set a flag.
    pub first_bad: Option<u64>,
}

impl SlotResult {
    /// Decodes the kernel's three output words for `slot` (its flag word, the bits of its
    /// largest `|x|`, its first bad index or `NO_BAD_INDEX`) over `len` elements checked with
    /// `max(Q_ABS_REF, 1.0) = q_abs_ref_eff`. [`NanChecker::report`](super::NanChecker::report)
    /// calls it; it is public for host simulations of the kernel.
    pub fn decode(
        slot: SlotId,
        len: usize,
        flags: u32,
        max_abs_bits: u32,
        first_bad: u64,
        q_abs_ref_eff: f32,
    ) -> SlotResult {
        let spec = slot.spec();
        SlotResult {
            index: slot.index(),
            name: spec.name.to_string(),
            check: spec.check,
            len,
            flags,
            max_abs: f32::from_bits(max_abs_bits),
            max_abs_known: true,
            threshold: spec.check.threshold(q_abs_ref_eff),
            first_bad: (first_bad != NO_BAD_INDEX).then_some(first_bad),
        }
    }

    /// Whether the slot raised any flag: what should stop a training loop.
    pub fn tripped(&self) -> bool {
        self.flags != 0
    }

    /// Whether some element was NaN or `±inf`.
    pub fn non_finite(&self) -> bool {
        self.flags & FLAG_NON_FINITE != 0
    }

    /// Whether some finite element of a [`Check::MaxAbs`] slot exceeded its threshold.
    pub fn over_threshold(&self) -> bool {
        self.flags & FLAG_OVER_THRESHOLD != 0
    }
}

/// Names of the bits set in `flags`, e.g. `non-finite|over-threshold`.
pub fn flag_names(flags: u32) -> String {
    let mut names = Vec::new();
    if flags & FLAG_NON_FINITE != 0 {
        names.push("non-finite".to_string());
    }
    if flags & FLAG_OVER_THRESHOLD != 0 {
        names.push("over-threshold".to_string());
    }
    let unknown = flags & !(FLAG_NON_FINITE | FLAG_OVER_THRESHOLD);
    if unknown != 0 {
        names.push(format!("unknown bits {unknown:#x}"));
    }
    if names.is_empty() {
        "quiet".to_string()
    } else {
        names.join("|")
    }
}

impl fmt::Display for SlotResult {
    /// `slot <index> <name>: over-threshold (bits 0b10), max |x| 1.0004e3 > threshold 1e3,
    /// first bad element 17 of 4096`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "slot {} {}: {} (bits {:#04b})",
            self.index,
            self.name,
            flag_names(self.flags),
            self.flags,
        )?;
        if !self.max_abs_known {
            // A group slot from the records of a buffer whose maximum they do not keep.
            if let Some(first) = self.first_bad {
                write!(f, ", first bad element {first} of {}", self.len)?;
            }
            return Ok(());
        }
        write!(f, ", max |x| {:e}", self.max_abs)?;
        if let Some(threshold) = self.threshold {
            let relation = if self.max_abs > threshold { ">" } else { "<=" };
            write!(f, " {relation} threshold {threshold:e}")?;
        }
        if let Some(first) = self.first_bad {
            write!(f, ", first bad element {first} of {}", self.len)?;
        }
        Ok(())
    }
}

/// The outcome of one check of a range, from [`NanChecker::report`](super::NanChecker::report).
/// Its `Display` is one log line naming every tripped slot, and
/// [`NanReport::ensure_quiet`] turns a tripped report into an error for a training loop to stop
/// on.
///
/// ```
/// use adamant_device::nan_check::{FLAG_OVER_THRESHOLD, NO_BAD_INDEX};
/// use adamant_runtime::nan_check::{Check, NanReport, SlotResult};
///
/// mod model {
///     use adamant_runtime::nan_check::{Check, Source};
///     adamant_runtime::slot_table! {
///         "model";
///         0 hidden: Check::NonFinite, Source::Activation { what: "hidden layer output" };
///         1 logits: Check::MaxAbs { factor: 1e2 }, Source::Activation { what: "logits" };
///         2 td_errors: Check::NonFinite, Source::Activation { what: "TD errors" };
///     }
/// }
///
/// // The table's last max-abs slot, and a value over its threshold at q_abs_ref_eff 1.0.
/// let table = model::TABLE;
/// let spec = table.slots().iter().rev().find(|s| matches!(s.check, Check::MaxAbs { .. })).unwrap();
/// let over = 1.5 * spec.check.threshold(1.0).unwrap();
/// // As NanChecker::report decodes it: that slot saw `over` at element 17.
/// let slots = table
///     .ids()
///     .map(|id| match id.index() {
///         i if i == spec.index => {
///             SlotResult::decode(id, 4096, FLAG_OVER_THRESHOLD, over.to_bits(), 17, 1.0)
///         }
///         _ => SlotResult::decode(id, 100, 0, 0, NO_BAD_INDEX, 1.0),
///     })
///     .collect();
/// let report = NanReport { table, range: table.all(), q_abs_ref_eff: 1.0, slots };
/// assert!(!report.is_quiet());
/// let id = table.id_by_name(spec.name).unwrap();
/// assert!(report.slot(id).unwrap().over_threshold());
/// let err = report.ensure_quiet().unwrap_err();
/// let line = format!("slot {} {}: over-threshold", spec.index, spec.name);
/// assert!(err.to_string().contains(&line), "{err}");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct NanReport {
    /// The table checked: what [`NanReport::slot`] takes the slots of.
    pub table: SlotTable,
    /// The checked slots (indices into the table, inclusive).
    pub range: RangeInclusive<usize>,
    /// `max(Q_ABS_REF, 1.0)` the thresholds were computed from.
    pub q_abs_ref_eff: f32,
    /// Every slot of the range, in order.
    pub slots: Vec<SlotResult>,
}

impl NanReport {
    /// The slots that set any flag, in index order.
    pub fn tripped(&self) -> impl Iterator<Item = &SlotResult> {
        self.slots.iter().filter(|s| s.tripped())
    }

    /// No slot set a flag.
    pub fn is_quiet(&self) -> bool {
        self.tripped().next().is_none()
    }

    /// The result of `slot`, if it is in the report: `None` for a slot outside the checked
    /// range, and for a slot of another table (whose index names a different slot here).
    pub fn slot(&self, slot: SlotId) -> Option<&SlotResult> {
        if slot.table() != self.table {
            return None;
        }
        self.slots.iter().find(|s| s.index == slot.index())
    }

    /// The slot of [`NanReport::table`] that `result` is, or `None` for a slot derived from a
    /// group the table does not cover ([`super::group_slots`]).
    pub fn id_of(&self, result: &SlotResult) -> Option<SlotId> {
        self.table.id(result.index)
    }

    /// The result of the slot called `name` (a table slot, or one derived from a group).
    pub fn slot_named(&self, name: &str) -> Option<&SlotResult> {
        self.slots.iter().find(|s| s.name == name)
    }

    /// `Ok` if quiet, else [`Error::NanCheckTripped`] carrying this report's log line: what a
    /// training loop returns to halt (the seed's `halt_grad_collapse`).
    pub fn ensure_quiet(&self) -> Result<()> {
        if self.is_quiet() {
            Ok(())
        } else {
            Err(Error::NanCheckTripped {
                report: self.to_string(),
            })
        }
    }
}

impl fmt::Display for NanReport {
    /// One line: `nan check slots <first>..=<last> (q_abs_ref_eff 1e0): 1 of <n> slots tripped:
    /// slot <index> <name>: ...`; several tripped slots are separated by `; `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "nan check slots {}..={} (q_abs_ref_eff {:e}): ",
            self.range.start(),
            self.range.end(),
            self.q_abs_ref_eff
        )?;
        let tripped: Vec<String> = self.tripped().map(|s| s.to_string()).collect();
        if tripped.is_empty() {
            write!(f, "all {} slots quiet", self.slots.len())
        } else {
            write!(
                f,
                "{} of {} slots tripped: {}",
                tripped.len(),
                self.slots.len(),
                tripped.join("; ")
            )
        }
    }
}
