//! adamant-rl: the seed's RL training step, built only on adamant-runtime's public API.
//!
//! - its eight parameter groups and their kernels ([`TrainingGroups`], in `groups.rs`), stepped
//!   by one call ([`TrainingGroups::step_all`]; [`DT_CLAMP_DISABLED`]: why the decision
//!   transformer's clamp is off);
//! - the typed launchers of its six optimizer kernels on a [`ParamGroup`] (`rt.iqn_adam(..)`
//!   and the others, in `launchers.rs`): methods of [`SeedLaunchers`], an extension trait of
//!   [`Adamant`] (`use adamant_rl::SeedLaunchers;`);
//! - the step owned whole as a training loop ([`TrainingSession`], in `session.rs`): groups,
//!   records, `grad_scale`, the 49-slot check and its graph, run eagerly or replayed, with host
//!   writes between steps;
//! - the 49-slot NaN-check table that watches them ([`SEED_TABLE`], its slot constants
//!   [`slot`], and [`FUSED_RANGE`], in `slot_table.rs`): one table of the runtime's generic
//!   checker ([`adamant_runtime::nan_check`]).
//!
//! The runtime names none of these groups or slots; this crate could live in another
//! repository.
//!
//! [`ParamGroup`]: adamant_runtime::ParamGroup
//! [`Adamant`]: adamant_runtime::Adamant
#![warn(missing_docs)]

mod config;
mod groups;
mod launchers;
mod optimizer_launch;
mod session;
mod slot_table;

pub use config::SessionConfig;
pub use groups::{
    GroupSizes, StepConfig, TrainingGroups, DT_CLAMP_DISABLED, GROUP_COUNT, GROUP_SHAPES,
};
pub use launchers::SeedLaunchers;
pub use optimizer_launch::OptimizerLaunch;
pub use session::{ClampPressure, ClampPressureLog, SessionReport, TrainingSession};
pub use slot_table::{slot, ALL_SLOTS, FUSED_RANGE, SLOTS, SLOT_COUNT, TABLE as SEED_TABLE};
