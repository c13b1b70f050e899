//! adamant's host side: builds the PTX (build.rs, through `adamant-build`), loads it on a GPU
//! through `cust`, and launches the optimizer kernels with typed, validated arguments and an
//! explicit clamp policy. Reading and auditing PTX is `adamant-build`'s.
pub mod clamp_policy;
pub mod device;
pub mod error;
pub mod graph;
pub mod groups;
pub mod hyper;
pub mod launch;
mod launch_check;
pub mod multi;
pub mod nan_check;
pub mod optimizers;
pub mod training;

pub use clamp_policy::{ClampPolicy, ValidBound};
pub use device::Adamant;
pub use error::{Error, Result};
pub use graph::{Branch, StepGraph};
pub use groups::{GroupBuffer, ParamGroup};
pub use hyper::AdamHyper;
pub use launch::LaunchInfo;
pub use multi::TensorSet;
pub use nan_check::{NanChecker, NanReport, SlotBindings};
pub use training::{GroupSizes, StepConfig, TrainingGroups};

/// The `cust` this crate is built on, so tests and examples that allocate their own device
/// buffers or synchronise the context use the same version.
pub use cust;

/// The PTX module built from `kernels-rs` by this crate's build script.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/adamant_kernels.ptx"));
