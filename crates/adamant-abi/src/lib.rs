//! What a kernel is, as the build and the runtime see it without compiling device code: the
//! descriptor each kernel macro registers for its entry and the registry of them
//! ([`KernelDescriptor`], [`kernel_set`]), their wire formats ([`kernel_list`], the audit
//! [`certificate`]), and the layout of the step record that every stepped entry reads
//! ([`record`]).
//!
//! The leaf of adamant's crates: the device SDK (`adamant-device`) re-exports it as
//! `adamant_device::abi`, the PTX build and audit (`adamant-build`) need nothing else, and the
//! runtime reads every record through these definitions. On `nvptx64` only the record layouts
//! and [`BOUND_CEILING`] compile (no_std); the descriptors are host-side.
#![cfg_attr(target_arch = "nvptx64", no_std)]

pub mod fused;
pub mod record;

/// The largest bound a clamp may have: a bound above it cannot bite, so it is refused (the host's
/// policies and per-tensor scales) or ignored (a device `Q_ABS_REF` that would give one keeps the
/// previous bound, the device's `step::advance`), and a per-tensor bound saturates here
/// (`adamant_device::multi::tensor_bound`). A clamp that is meant to be off says so, with a
/// reason (bound 0). The PTX audit's clamp contract reads it too.
///
/// 1e18 (as `f32`, 9.99999984e17): below `sqrt(f32::MAX)` ≈ 1.8e19, so a weight at the bound
/// times an activation at the bound is still finite in f32. A weight any larger already makes
/// the forward pass overflow, so a bound above the ceiling would let through exactly the values
/// the clamp exists to stop (the seed's IQN weights were 1e29 on their way to NaN).
pub const BOUND_CEILING: f32 = 1.0e18;

#[cfg(not(target_arch = "nvptx64"))]
pub mod certificate;
#[cfg(not(target_arch = "nvptx64"))]
mod descriptor;
#[cfg(not(target_arch = "nvptx64"))]
pub mod kernel_list;

#[cfg(not(target_arch = "nvptx64"))]
pub use descriptor::*;

// The registration the kernel macros generate names linkme through this path, so that a kernel
// crate needs no linkme dependency of its own.
#[doc(hidden)]
#[cfg(not(target_arch = "nvptx64"))]
pub use linkme as __linkme;
