//! adamant's host side: builds the PTX (build.rs, through `adamant-build`), loads it on a GPU
//! through `cust`, and launches the optimizer kernels with typed, validated arguments and an
//! explicit clamp policy. Reading and auditing PTX is `adamant-build`'s.
// Every module is private and its API re-exported here, so the public API is this list (and
// `nan_check`, the checker's namespace); what is `pub` inside a module but not re-exported is
// the runtime's own.
mod clamp_policy;
mod device;
mod error;
mod graph;
mod groups;
mod hyper;
mod launch;
mod launch_check;
mod multi;
pub mod nan_check;
mod optimizers;
mod training;

pub use clamp_policy::{ClampPolicy, ValidBound, BOUND_FACTOR};
pub use device::Adamant;
pub use error::{Error, Result};
pub use graph::{Branch, StepGraph};
pub use groups::{GroupBuffer, ParamGroup};
pub use hyper::AdamHyper;
pub use launch::LaunchInfo;
pub use multi::TensorSet;
pub use nan_check::{NanChecker, NanReport, SlotBindings};
pub use training::{GroupSizes, StepConfig, TrainingGroups, DT_CLAMP_DISABLED};

/// The `cust` this crate is built on, so tests and examples that allocate their own device
/// buffers or synchronise the context use the same version.
pub use cust;

/// The PTX module built from `kernels-rs` by this crate's build script.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/adamant_kernels.ptx"));
