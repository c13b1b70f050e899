//! The fused NaN / max-abs checker, driven by one slot table.
//!
//! - [`slots`]: the table, the only place a slot is declared (index, name, check, source).
//! - [`bindings`]: which device buffer each slot watches.
//! - [`layout`]: the per-slot metadata and the (slot, chunk) work table derived from both.
//! - [`NanChecker`]: one range of slots; [`NanChecker::enqueue`] puts a check on the runtime's
//!   stream without synchronising, [`NanChecker::report`] synchronises and decodes.
//! - [`report`]: the decoded result, by slot name, as a log line.
//! - [`reference`]: the check's specification as CPU code, for tests.
//! - [`audit_doc`]: the slot and kernel tables of `docs/audit.md` and `adamant audit`.
//!
//! ```no_run
//! use adamant_runtime::nan_check::{slot, NanChecker, SlotBindings, FUSED_RANGE};
//! use adamant_runtime::{Adamant, ParamGroup};
//! # fn main() -> adamant_runtime::Result<()> {
//! let adamant = Adamant::new()?;
//! let iqn = ParamGroup::new("iqn", &[0.0; 1024])?;
//! let activations = ParamGroup::new("scratch", &[0.0; 4096])?;
//! let mut bindings = SlotBindings::new();
//! bindings.bind_group(&iqn)?; // slots 2, 12, 13, 38 and 48 (`iqn_weight_max`)
//! bindings.bind(slot::iqn_trunk_grad_out, activations.slice(adamant_runtime::GroupBuffer::Params).unwrap());
//! // ... bind the other slots of the range ...
//! let mut checker = NanChecker::new(&adamant, FUSED_RANGE, &bindings)?;
//! checker.enqueue(1.0)?; // after the step's kernels, same stream, no sync
//! checker.report()?.ensure_quiet()?; // when the loop wants the answer
//! # Ok(()) }
//! ```
pub mod audit_doc;
pub mod bindings;
mod checker;
pub mod layout;
pub mod reference;
pub mod report;
pub mod slots;

pub use bindings::{DeviceRegion, SlotBindings};
pub use checker::{NanChecker, CHECK_BLOCK_THREADS};
pub use report::{NanReport, SlotResult};
pub use slots::{
    q_abs_ref_eff, slot, Check, SlotId, SlotSpec, Source, ALL_SLOTS, FUSED_RANGE, SLOTS, SLOT_COUNT,
};
