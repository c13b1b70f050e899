//! What a slot of the NaN check is: its [`Check`], its [`Source`] and its line of a table
//! ([`SlotSpec`]). The table itself is a value ([`SlotTable`], in `tables.rs`, with the
//! [`SlotId`] of each of its slots: the two name each other), declared by whoever owns the
//! buffers it watches.
#[cfg(doc)]
use super::tables::{SlotId, SlotTable};
use crate::groups::GroupBuffer;

/// What a slot checks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Check {
    /// NaN, `+inf` and `-inf` only.
    NonFinite,
    /// NaN and `±inf`, plus any finite `|x| > factor × q_abs_ref_eff`, where
    /// `q_abs_ref_eff = max(Q_ABS_REF, 1.0)`.
    MaxAbs {
        /// How many `q_abs_ref_eff`s a value may reach (1e3 for the weight-max slots, ten times
        /// the clamp bound's factor; 1e2 for the Q values); finite and `> 0`, checked when the
        /// crate compiles.
        factor: f32,
    },
}

impl Check {
    /// The `factor` the kernel reads: `+inf` for [`Check::NonFinite`] (no finite value exceeds
    /// it, so only the non-finite test can fire).
    pub const fn device_factor(self) -> f32 {
        match self {
            Check::NonFinite => adamant_device::nan_check::NON_FINITE_ONLY,
            Check::MaxAbs { factor } => factor,
        }
    }

    /// The max-abs threshold at this `q_abs_ref_eff`, computed exactly as the kernel does (one
    /// f32 multiply); `None` for non-finite-only slots.
    pub fn threshold(self, q_abs_ref_eff: f32) -> Option<f32> {
        match self {
            Check::NonFinite => None,
            Check::MaxAbs { factor } => Some(factor * q_abs_ref_eff),
        }
    }

    /// Short description for tables and logs.
    pub fn describe(self) -> &'static str {
        match self {
            Check::NonFinite => "non-finite",
            Check::MaxAbs { .. } => "non-finite + max-abs",
        }
    }
}

/// What a slot watches in its training step. Documents the slot (in `docs/audit.md`, say)
/// and lets [`super::SlotBindings::bind_group`] bind parameter-group buffers by group name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `buffer` of the [`crate::ParamGroup`] whose [`crate::ParamGroup::name`] is `group`.
    Group {
        /// The group's name ([`crate::ParamGroup::name`]).
        group: &'static str,
        /// Which of its buffers.
        buffer: GroupBuffer,
    },
    /// An activation or other intermediate the training step owns, bound explicitly.
    Activation {
        /// What it is, in words (for `docs/audit.md`).
        what: &'static str,
    },
}

impl Source {
    /// One-line description, e.g. "group `<name>` params".
    pub fn describe(self) -> String {
        match self {
            Source::Group { group, buffer } => format!("group `{group}` {}", buffer.name()),
            Source::Activation { what } => format!("activation: {what}"),
        }
    }
}

/// One declared slot: a line of a [`SlotTable`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlotSpec {
    /// Its index: its position in [`SlotTable::slots`] and in a check's per-slot outputs.
    pub index: usize,
    /// Its name, unique in the table (and the name of its constant in the table's `slot`
    /// module).
    pub name: &'static str,
    /// What it checks.
    pub check: Check,
    /// What it watches.
    pub source: Source,
}

/// `max(Q_ABS_REF, 1.0)`: thresholds never shrink below `factor × 1.0` while the ISV's
/// reference is still tiny (early training).
pub fn q_abs_ref_eff(q_abs_ref: f32) -> f32 {
    q_abs_ref.max(1.0)
}
