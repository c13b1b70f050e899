//! What a slot of the NaN check is: its [`Check`], its [`Source`], its line of the table
//! ([`SlotSpec`]) and its [`SlotId`], and `slot_table!`, the macro a table is declared with.
//!
//! The table itself is the seed's (`crate::seed::slot_table`, re-exported as
//! [`super::SLOTS`]); the checker reaches it through `super::table`.
use super::table::{SLOTS, SLOT_COUNT};
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

/// What a slot watches in the reference training step. Documents the slot in `docs/audit.md`
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

/// One declared slot: a line of the table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlotSpec {
    /// Its index: its position in [`SLOTS`](super::SLOTS) and in a check's per-slot outputs.
    pub index: usize,
    /// Its name, unique in the table (and the name of its constant in [`slot`](super::slot)).
    pub name: &'static str,
    /// What it checks.
    pub check: Check,
    /// What it watches.
    pub source: Source,
}

/// A slot of the table. The only constructors are the constants in [`slot`](super::slot) and
/// [`SlotId::new`] / [`SlotId::by_name`], so a `SlotId` always names a declared slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlotId(usize);

impl SlotId {
    /// The slot with this index, for `slot_table!`'s constants only: `index` is a line of the
    /// table (its invariants are checked when the crate compiles).
    pub(crate) const fn declared(index: usize) -> SlotId {
        SlotId(index)
    }

    /// The slot with this index, if declared.
    pub fn new(index: usize) -> Option<SlotId> {
        (index < SLOT_COUNT).then_some(SlotId(index))
    }

    /// The slot with this name, if declared.
    pub fn by_name(name: &str) -> Option<SlotId> {
        SLOTS.iter().position(|s| s.name == name).map(SlotId)
    }

    /// The slot's index in the table.
    pub fn index(self) -> usize {
        self.0
    }

    /// The slot's line of the table.
    pub fn spec(self) -> &'static SlotSpec {
        &SLOTS[self.0]
    }

    /// The slot's name, as the table declares it.
    pub fn name(self) -> &'static str {
        self.spec().name
    }
}

impl std::fmt::Display for SlotId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "slot {} `{}`", self.0, self.name())
    }
}

/// `index name: check, source;` per slot. Generates `SLOTS` and one [`SlotId`] constant per
/// slot in a module `slot` (a repeated name is a duplicate-definition error there), where it is
/// invoked (the seed's table, `crate::seed::slot_table`).
macro_rules! slot_table {
    ($($index:literal $name:ident: $check:expr, $source:expr;)*) => {
        /// Every declared slot, in index order (checked at compile time).
        pub const SLOTS: &[$crate::nan_check::SlotSpec] = &[
            $($crate::nan_check::SlotSpec {
                index: $index, name: stringify!($name), check: $check, source: $source,
            },)*
        ];

        /// One constant per slot, named as the slot: `slot::<name>`.
        #[allow(non_upper_case_globals)]
        pub mod slot {
            use $crate::nan_check::SlotId;
            $(
                #[doc = concat!(
                    "Slot ", stringify!($index), ": checks `", stringify!($check),
                    "` of `", stringify!($source), "`."
                )]
                pub const $name: SlotId = SlotId::declared($index);
            )*
        }
    };
}
pub(crate) use slot_table;

/// `max(Q_ABS_REF, 1.0)`: thresholds never shrink below `factor × 1.0` while the ISV's
/// reference is still tiny (early training).
pub fn q_abs_ref_eff(q_abs_ref: f32) -> f32 {
    q_abs_ref.max(1.0)
}

/// The invariants of a table, for a `const _: () = check_table(SLOTS);` beside it.
pub(crate) const fn check_table(slots: &[SlotSpec]) {
    assert!(!slots.is_empty(), "the slot table is empty");
    assert!(
        slots.len() <= u32::MAX as usize,
        "slot indices must fit the kernel's u32"
    );
    let mut i = 0;
    while i < slots.len() {
        assert!(
            slots[i].index == i,
            "slot indices must be 0, 1, 2, ... in declaration order, with no gap or repeat"
        );
        if let Check::MaxAbs { factor } = slots[i].check {
            assert!(
                factor > 0.0 && factor < f32::INFINITY,
                "a max-abs factor must be finite and > 0"
            );
        }
        let mut j = 0;
        while j < i {
            assert!(
                !str_eq(slots[i].name, slots[j].name),
                "two slots have the same name"
            );
            j += 1;
        }
        i += 1;
    }
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}
