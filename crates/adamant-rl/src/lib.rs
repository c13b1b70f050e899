//! The seed's training step, built on the generic API: its eight parameter groups and their
//! kernels ([`TrainingGroups`], in `groups.rs`), the typed launchers of its six optimizer
//! kernels on a [`crate::ParamGroup`] (`rt.iqn_adam(..)` and the others, in `launchers.rs`), the step owned whole as a training loop
//! ([`TrainingSession`], in `session.rs`), and the 49-slot NaN-check table that watches them
//! (`slot_table.rs`, [`crate::nan_check::SEED_TABLE`]: one user of the generic checker).
//! The rest of the runtime's code names none of these groups or slots: the crate root re-exports
//! what is public here.
mod groups;
mod launchers;
mod session;
pub(crate) mod slot_table;

pub use groups::{
    GroupSizes, StepConfig, TrainingGroups, DT_CLAMP_DISABLED, SEED_GROUPS, SESSION_GROUPS,
};
pub use session::{ClampPressure, ClampPressureLog, SessionConfig, SessionReport, TrainingSession};
