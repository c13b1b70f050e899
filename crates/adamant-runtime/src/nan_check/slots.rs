//! What a slot of the NaN check is: its [`Check`], its [`Source`], its line of a table
//! ([`SlotSpec`]) and its [`SlotId`]. The table itself is a value ([`SlotTable`], in
//! `tables.rs`), declared by whoever owns the buffers it watches.
use super::tables::SlotTable;
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
            Check::NonFinite => adamant_kernels::nan_check::NON_FINITE_ONLY,
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

/// A slot of one table. It carries its table, so bindings and reports of another table refuse
/// it ([`Error::ForeignSlot`](crate::Error::ForeignSlot)) instead of reading someone else's
/// slot at the same index. The only constructors are the constants `slot_table!` generates and
/// [`SlotTable::id`] / [`SlotTable::id_by_name`], so a `SlotId` always names a declared slot.
#[derive(Clone, Copy)]
pub struct SlotId {
    table: SlotTable,
    index: usize,
}

impl SlotId {
    /// The slot with this index, for `slot_table!`'s constants and the table's own lookups
    /// (public for the macro, not part of the API).
    ///
    /// # Panics
    ///
    /// If `index` is past the table (at compile time: the macro's constants are `const`s).
    #[doc(hidden)]
    pub const fn declared(table: SlotTable, index: usize) -> SlotId {
        assert!(index < table.len(), "a slot index past its table");
        SlotId { table, index }
    }

    /// The table the slot is declared in.
    pub fn table(self) -> SlotTable {
        self.table
    }

    /// The slot's index in its table.
    pub fn index(self) -> usize {
        self.index
    }

    /// The slot's line of its table.
    pub fn spec(self) -> &'static SlotSpec {
        &self.table.slots()[self.index]
    }

    /// The slot's name, as its table declares it.
    pub fn name(self) -> &'static str {
        self.spec().name
    }
}

impl PartialEq for SlotId {
    fn eq(&self, other: &SlotId) -> bool {
        self.index == other.index && self.table == other.table
    }
}

impl Eq for SlotId {}

impl std::hash::Hash for SlotId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.table.hash(state);
        self.index.hash(state);
    }
}

impl std::fmt::Debug for SlotId {
    /// `SlotId(model #1 logits)`
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SlotId({} #{} {})",
            self.table.name(),
            self.index,
            self.name()
        )
    }
}

impl std::fmt::Display for SlotId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "slot {} `{}`", self.index, self.name())
    }
}

/// `max(Q_ABS_REF, 1.0)`: thresholds never shrink below `factor × 1.0` while the ISV's
/// reference is still tiny (early training).
pub fn q_abs_ref_eff(q_abs_ref: f32) -> f32 {
    q_abs_ref.max(1.0)
}
