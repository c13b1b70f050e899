//! The fused NaN / max-abs checker, driven by one slot table.
//!
//! - [`SLOTS`] (and a [`SlotId`] constant per slot in [`slot`]): the table, the only place a
//!   slot is declared (index, name, check, source). It is the seed's training step's (its
//!   groups' buffers and its activations), declared in `runtime/src/seed/slot_table.rs` and
//!   re-exported here; the checker's own modules (the slot types, bindings, work layout, kernel
//!   launch, report and group slots) read it as "the table" and name none of its slots.
//! - [`SlotBindings`]: which device buffer each slot watches.
//! - [`NanChecker`]: one range of slots, with the per-slot metadata and the (slot, chunk) work
//!   table derived from the table and the bindings; [`NanChecker::enqueue`] puts a check on the
//!   runtime's stream without synchronising, [`NanChecker::report`] synchronises and decodes.
//! - [`NanReport`]: the decoded result, by slot name, as a log line.
//!
//! The check's specification as CPU code (`adamant::nan_check_reference`) and the tables of
//! `docs/audit.md` (`adamant::audit_doc`) live in the `adamant` crate, beside the tests and the
//! CLI that use them.
//!
//! ```
//! use adamant_runtime::cust::memory::DeviceBuffer;
//! use adamant_runtime::nan_check::{NanChecker, SlotBindings, SlotId, ALL_SLOTS};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let adamant = match adamant_runtime::Adamant::new() {
//! #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
//! #     other => other?,
//! # };
//! // A buffer of the training step (which owns it).
//! let data = DeviceBuffer::from_slice(&vec![0.0f32; 4096])?;
//!
//! let mut bindings = SlotBindings::new();
//! // Here every slot watches the same stand-in buffer; a training loop binds each slot to its own
//! // ([`SlotBindings::bind`]), and a parameter group's slots by the group's name
//! // ([`SlotBindings::bind_group`]).
//! for id in ALL_SLOTS.filter_map(SlotId::new) {
//!     bindings.bind(id, &data);
//! }
//!
//! let mut checker = NanChecker::new(&adamant, ALL_SLOTS, &bindings)?;
//! let q_abs_ref = 1.0; // the ISV's Q_ABS_REF
//! checker.enqueue(adamant.stream(), q_abs_ref)?; // after the step's kernels, same stream, no host sync
//! checker.report()?.ensure_quiet()?; // when the loop wants the answer (waits for the check's event)
//! # Ok(())
//! # }
//! ```
//!
//! The seed's training step binds its groups' slots in one call
//! ([`SlotBindings::bind_training_groups`], with an example) or leaves the whole check to its
//! session ([`crate::TrainingSession`]).
mod bindings;
mod checker;
mod group_slots;
// Public only for tests/nan_check_cpu.rs, whose host simulation of the kernel must walk the very
// work table the checker uploads (`build`, `chunk_for`, `work_items_for`, `validate_range`).
// Hidden: not part of the API, and free to change with the checker. `CHUNK_ELEMENTS` is
// re-exported below as the API's.
#[doc(hidden)]
pub mod layout;
mod report;
mod slots;
/// The one slot table the checker runs: the seed's, declared in `crate::seed::slot_table`. The
/// modules of the checker reach it through this name only.
use crate::seed::slot_table as table;

pub use bindings::{DeviceRegion, SlotBindings};
pub use checker::NanChecker;
#[cfg(test)]
pub(crate) use group_slots::buffers;
pub use group_slots::{
    group_slots, record_position, result_from_record, GroupShape, GroupSlot, WEIGHT_MAX_FACTOR,
};
pub use layout::CHUNK_ELEMENTS;
pub use report::{NanReport, SlotResult};
pub(crate) use slots::{check_table, slot_table};
pub use slots::{q_abs_ref_eff, Check, SlotId, SlotSpec, Source};
pub use table::{slot, ALL_SLOTS, FUSED_RANGE, SLOTS, SLOT_COUNT};
