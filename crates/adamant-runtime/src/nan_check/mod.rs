//! The fused NaN / max-abs checker, generic over a slot table.
//!
//! - [`SlotTable`]: the slots one check watches (index, name, check, source), declared as a
//!   `const` with [`slot_table!`](crate::slot_table) (its invariants are checked when the crate
//!   compiles), with a [`SlotId`] constant per slot. Any crate declares its own; the checker's
//!   modules (bindings, work layout, kernel launch, report, group slots) take the table as a
//!   value and name none of its slots. An application declares its own (adamant-rl's
//!   `SEED_TABLE`, the seed's 49 slots, say).
//! - [`SlotBindings`]: which device buffer each slot of one table watches.
//! - [`NanChecker`]: one range of a table's slots, with the per-slot metadata and the (slot,
//!   chunk) work table derived from the table and the bindings; [`NanChecker::enqueue`] puts a
//!   check on the runtime's stream without synchronising, [`NanChecker::report`] synchronises
//!   and decodes.
//! - [`NanReport`]: the decoded result, by slot name, as a log line.
//!
//! The check's specification as CPU code (`adamant::nan_check_reference`) and the tables of
//! `docs/audit.md` (`adamant::audit_doc`) live in the `adamant` crate, beside the tests and the
//! CLI that use them.
//!
//! ```
//! use adamant_runtime::DeviceArray;
//! use adamant_runtime::nan_check::{Check, NanChecker, SlotBindings, Source};
//!
//! // A table of one's own: two activations of some model.
//! mod model {
//!     use super::*;
//!     adamant_runtime::slot_table! {
//!         "model";
//!         0 hidden: Check::NonFinite, Source::Activation { what: "hidden layer output" };
//!         1 logits: Check::MaxAbs { factor: 1e2 }, Source::Activation { what: "logits" };
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let adamant = match adamant_runtime::Adamant::new() {
//! #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
//! #     other => other?,
//! # };
//! // Buffers of the training step (which owns them).
//! let hidden = DeviceArray::zeroed(4096)?;
//! let logits = DeviceArray::zeroed(512)?;
//!
//! let mut bindings = SlotBindings::new(model::TABLE);
//! bindings.bind(model::slot::hidden, &hidden)?;
//! bindings.bind(model::slot::logits, &logits)?;
//!
//! let mut checker = NanChecker::new(&adamant, model::TABLE.all(), &bindings)?;
//! let q_abs_ref = 1.0; // the ISV's Q_ABS_REF
//! checker.enqueue(adamant.stream(), q_abs_ref)?; // after the step's kernels, same stream, no host sync
//! checker.report()?.ensure_quiet()?; // when the loop wants the answer (waits for the check's event)
//! # Ok(())
//! # }
//! ```
//!
//! A parameter group's slots are bound by the group's name ([`SlotBindings::bind_group`], or
//! [`SlotBindings::bind_groups`] for several). A training step that owns its groups can instead
//! derive every group's slots ([`group_slots`]) and read their results from the groups'
//! diagnostics records ([`result_from_record`]), leaving the kernel the activations only
//! ([`SlotBindings::leave_to_records`]), as adamant-rl's session does.
mod bindings;
mod checker;
mod group_slots;
// Public only for tests/cpu/nan_check_cpu.rs, whose host simulation of the kernel must walk the very
// work table the checker uploads (`build`, `chunk_for`, `work_items_for`, `validate_range`).
// Hidden: not part of the API, and free to change with the checker. `CHECK_CHUNK_ELEMENTS` is
// re-exported below as the API's.
#[doc(hidden)]
pub mod layout;
mod report;
mod slots;
mod tables;

pub use bindings::{SlotBindings, SlotRegion};
pub use checker::NanChecker;
pub use group_slots::{
    group_slots, record_position, result_from_record, with_guard, GroupShape, GroupSlot,
    WEIGHT_MAX_FACTOR,
};
pub use layout::CHECK_CHUNK_ELEMENTS;
pub use report::{NanReport, SlotResult};
pub use slots::{q_abs_ref_eff, Check, SlotSpec, Source};
pub use tables::{SlotId, SlotTable};
