//! adamant's host side: loads the PTX module built from `adamant-kernels` (by this crate's build
//! script, through `adamant-build`, which checks and audits it) on a GPU through `cust`, and
//! launches the optimizer kernels with typed, validated arguments and an explicit clamp policy.
//! Reading and auditing PTX is `adamant-build`'s.
//!
//! # The API
//!
//! - [`Adamant`]: one GPU with the module loaded and every kernel entry resolved. It loads other
//!   kernel crates' modules only as [`AuditedModule`]s ([`include_module!`],
//!   [`Adamant::add_module`]), verified against the build's audit certificate. It launches
//!   - any `#[optimizer_kernel]` entry on device buffers of the caller's
//!     ([`Adamant::launch`](crate::Adamant::launch); a [`ParamGroup`]'s with [`ParamGroup::parts_mut`]), or on
//!     a whole set of tensors in one launch ([`Launch::set`](crate::Launch::set) with a [`TensorSet`]);
//!   - a recorded CUDA graph of such launches ([`Adamant::capture`], [`StepGraph::launch`]).
//!   - stepped launches ([`Launch::stepped`](crate::Launch::stepped), [`Launch::set`](crate::Launch::set)) that read
//!     the bound, lr, betas and bias corrections from device [`StepStates`] records, which a
//!     replayed graph advances itself ([`StepStates::advance`]).
//! - [`ClampPolicy`]: where a launch's weight-clamp bound comes from. Every optimizer launch takes
//!   one, and there is no default.
//! - [`AdamHyper`] and [`adam_scalars!`]: Adam hyperparameters that validate themselves, and a
//!   kernel's `Scalars` built from them.
//! - [`ParamGroup`]: a model's parameters, gradients and Adam state on the GPU.
//! - [`nan_check`]: the fused NaN / max-abs checker, generic over a slot table
//!   ([`SlotTable`], declared with [`slot_table!`]).
//! - [`Error`]: what went wrong, naming the kernel, buffer or value. Invalid inputs are refused
//!   before anything is enqueued.
//!
//! An application's training step is built on this API alone: the seed's (its parameter groups,
//! typed launchers, training session and 49-slot NaN-check table) is the `adamant-rl` crate,
//! re-exported by `adamant` as `adamant::rl`. The runtime names none of its groups or slots.
//!
//! # Without a GPU
//!
//! The crate builds, and everything that needs no device runs, on a machine without a GPU (CI
//! has none): [`Adamant::new`] then fails with [`Error::NoDevice`]. The examples in these docs
//! that launch kernels return early on that error, so they are compiled and run everywhere and
//! launch where there is a GPU.
#![warn(missing_docs)]

// Every module is private and its API re-exported here, so the public API is this list (and
// `nan_check`, the checker's namespace); what is `pub` inside a module but not re-exported is
// the runtime's own.
mod args;
mod buffers;
pub mod checkpoint;
mod clamp_policy;
mod clamp_scales;
mod device;
mod driver;
mod error;
mod fused;
mod fused_chunk;
mod graph;
mod groups;
mod guard;
mod host_mapped;
mod hyper;
mod interop;
mod launch;
mod launch_builder;
mod launch_check;
mod memory;
mod module;
mod multi;
pub mod nan_check;
mod prepared;
mod records;
mod step;

/// How a buffer's elements are stored (`DeviceRegion::of`), as kernels declare it.
pub use adamant_device::abi::Storage;
pub use buffers::{DeviceArray, DeviceScalar, Input, Owned, ParamBuffer, ReadBuffer, Shared};
pub use clamp_policy::{ClampPolicy, ValidBound, BOUND_CEILING, BOUND_FACTOR};
pub use device::Adamant;
pub use error::{DriverError, Error, Result};
pub use fused::{FusedSet, FusedTensor};
pub use fused_chunk::{
    ChunkSize, ADAM_F32_BYTES_PER_ELEMENT, FUSED_CHUNK_BYTES, FUSED_CHUNK_ELEMENTS,
    MAX_CHUNK_ELEMENTS,
};
pub use graph::{Branch, StepGraph};
pub use groups::{GroupBuffer, GroupParts, ParamGroup};
pub use guard::GradientGuard;
pub use hyper::AdamHyper;
pub use interop::{DeviceRegion, ForeignStream, Raw};
pub use launch::LaunchInfo;
pub use launch_builder::{Launch, NoScalars, WithScalars};
pub use module::AuditedModule;
pub use multi::TensorSet;
pub use nan_check::{NanChecker, NanReport, SlotBindings, SlotTable};
pub use prepared::Prepared;
pub use records::{LaunchRecords, Records};
pub use step::{GuardSpec, LossScale, QAbsRef, RecordKernel, StepBound, StepSpec, StepStates};

/// The `cust` this crate is built on (0.3.2), so that code allocating its own device buffers
/// (for [`Adamant::launch`](crate::Adamant::launch), say) or synchronising the context uses the same version.
pub use cust;

/// adamant's kernels: the PTX module of every entry `adamant-kernels` declares, built by this crate's
/// build script (which fails unless the module passes the checks and the clamp audit), with the
/// audit certificate the build wrote. [`Adamant::new`] verifies and loads it. It is embedded,
/// not read from disk, so a binary carries its own kernels.
pub static MODULE: AuditedModule = include_module!(adamant_kernels);

/// The PTX text of [`MODULE`], for tools: `adamant audit` audits it; a tool that wants a file
/// writes it out (`adamant audit --write-ptx PATH`).
pub const PTX: &str = MODULE.ptx();
