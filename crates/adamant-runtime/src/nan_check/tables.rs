//! A slot table as a value ([`SlotTable`]) with the id of each of its slots ([`SlotId`]), and
//! `slot_table!`, the macro a table is declared with. The checker's modules take the table
//! they run from the caller (through the [`SlotBindings`](super::SlotBindings) it binds), so
//! one runtime checks any number of tables;
//! an application declares its own (adamant-rl declares the seed's).
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::RangeInclusive;

use super::slots::{Check, SlotSpec};
use crate::error::{Error, Result};

/// A slot table: a name and its slots, in index order. Built in a `const` (by
/// [`slot_table!`](crate::slot_table), or [`SlotTable::new`] directly), so its invariants are
/// checked when the crate that declares it compiles: indices `0, 1, 2, ...` with no gap, unique
/// names, finite positive max-abs factors, at least one slot.
///
/// Two tables are equal when they have the same name and the same slots; the checker refuses a
/// [`SlotId`] of one table with the bindings of another
/// ([`Error::ForeignSlot`](crate::Error::ForeignSlot)).
#[derive(Clone, Copy)]
pub struct SlotTable {
    name: &'static str,
    slots: &'static [SlotSpec],
}

impl SlotTable {
    /// The table `name` of `slots`, after checking its invariants (see [`SlotTable`]). Call it in
    /// a `const` (as `slot_table!` does): a bad table then fails the build instead of panicking
    /// when the table is first used.
    ///
    /// # Panics
    ///
    /// If the name is empty or the slots break an invariant (at compile time, in a `const`).
    pub const fn new(name: &'static str, slots: &'static [SlotSpec]) -> SlotTable {
        assert!(!name.is_empty(), "a slot table needs a name");
        check_table(slots);
        SlotTable { name, slots }
    }

    /// The table's name, as errors and docs show it (e.g. `model`).
    pub const fn name(self) -> &'static str {
        self.name
    }

    /// Every declared slot, in index order.
    pub const fn slots(self) -> &'static [SlotSpec] {
        self.slots
    }

    /// Number of declared slots: the size of every per-slot output of a full-range check.
    pub const fn len(self) -> usize {
        self.slots.len()
    }

    /// Always false: a table has at least one slot (checked when it is built).
    pub const fn is_empty(self) -> bool {
        self.slots.is_empty()
    }

    /// Every slot of the table as a range, for a check of the whole table in one launch.
    pub const fn all(self) -> RangeInclusive<usize> {
        0..=self.slots.len() - 1
    }

    /// The slot with this index, if declared.
    pub fn id(self, index: usize) -> Option<SlotId> {
        (index < self.len()).then(|| SlotId::declared(self, index))
    }

    /// The slot with this name, if declared.
    pub fn id_by_name(self, name: &str) -> Option<SlotId> {
        self.slots
            .iter()
            .position(|s| s.name == name)
            .map(|index| SlotId::declared(self, index))
    }

    /// Every slot, in index order.
    pub fn ids(self) -> impl Iterator<Item = SlotId> {
        (0..self.len()).map(move |index| SlotId::declared(self, index))
    }
}

impl PartialEq for SlotTable {
    fn eq(&self, other: &SlotTable) -> bool {
        // Same storage first (the common case, and cheap); a const's slice may be duplicated
        // between crates, so equal contents count too.
        self.name == other.name
            && (std::ptr::eq(self.slots, other.slots) || self.slots == other.slots)
    }
}

// Factors are finite (checked when the table is built), so `SlotSpec`'s `PartialEq` is total.
impl Eq for SlotTable {}

impl Hash for SlotTable {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        self.slots.len().hash(state);
    }
}

impl fmt::Debug for SlotTable {
    /// `SlotTable("model", 2 slots)`: the slots themselves are in [`SlotTable::slots`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SlotTable({:?}, {} slots)", self.name, self.slots.len())
    }
}

impl fmt::Display for SlotTable {
    /// `` `model` (2 slots) ``
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` ({} slots)", self.name, self.slots.len())
    }
}

/// Declares a slot table: `"<table name>";` then `index name: check, source;` per slot.
/// Generates, where it is invoked, `pub const TABLE:` [`SlotTable`] (its invariants checked at
/// compile time: a bad table fails the build) and one [`SlotId`] constant per slot in a module
/// `slot` (a repeated name is a duplicate-definition error there). Invoke it once per module.
///
/// ```
/// mod mine {
///     use adamant_runtime::nan_check::{Check, Source};
///     use adamant_runtime::GroupBuffer;
///
///     adamant_runtime::slot_table! {
///         "mine";
///         0 logits:  Check::NonFinite, Source::Activation { what: "policy logits" };
///         1 q_max:   Check::MaxAbs { factor: 1e2 }, Source::Activation { what: "Q values" };
///         2 weights: Check::NonFinite, Source::Group { group: "net", buffer: GroupBuffer::Params };
///     }
/// }
///
/// assert_eq!(mine::TABLE.name(), "mine");
/// assert_eq!(mine::TABLE.len(), 3);
/// assert_eq!(mine::slot::q_max.index(), 1);
/// assert_eq!(mine::slot::q_max.table(), mine::TABLE);
/// ```
///
/// A table that breaks an invariant does not compile:
///
/// ```compile_fail
/// mod bad {
///     use adamant_runtime::nan_check::{Check, Source};
///     adamant_runtime::slot_table! {
///         "bad";
///         0 a: Check::NonFinite, Source::Activation { what: "a" };
///         2 b: Check::NonFinite, Source::Activation { what: "b" }; // index 1 is missing
///     }
/// }
/// ```
#[macro_export]
macro_rules! slot_table {
    ($table:literal; $($index:literal $name:ident: $check:expr, $source:expr;)*) => {
        #[doc = concat!(
            "The slot table `", $table, "`: every declared slot, in index order (checked at \
             compile time)."
        )]
        pub const TABLE: $crate::nan_check::SlotTable = $crate::nan_check::SlotTable::new($table, {
            const SPECS: &[$crate::nan_check::SlotSpec] = &[
                $($crate::nan_check::SlotSpec {
                    index: $index, name: stringify!($name), check: $check, source: $source,
                },)*
            ];
            SPECS
        });

        // Evaluated whether or not `TABLE` is used: a table that breaks an invariant fails the
        // build here.
        const _: $crate::nan_check::SlotTable = TABLE;

        /// One constant per slot, named as the slot: `slot::<name>`.
        #[allow(non_upper_case_globals)]
        pub mod slot {
            use $crate::nan_check::SlotId;
            $(
                #[doc = concat!(
                    "Slot ", stringify!($index), " of `", $table, "`: checks `",
                    stringify!($check), "` of `", stringify!($source), "`."
                )]
                pub const $name: SlotId = SlotId::declared(super::TABLE, $index);
            )*
        }
    };
}

/// The invariants of a table, checked by [`SlotTable::new`] (in a `const`: at compile time).
const fn check_table(slots: &[SlotSpec]) {
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

/// `range` must be non-empty and inside `table`.
pub fn validate_range(table: SlotTable, range: &RangeInclusive<usize>) -> Result<()> {
    if range.start() > range.end() || *range.end() >= table.len() {
        return Err(Error::InvalidSlotRange {
            table: table.name(),
            first: *range.start(),
            last: *range.end(),
            slots: table.len(),
        });
    }
    Ok(())
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
