//! The host side of a downstream optimizer crate: its PTX module with the audit certificate
//! `build.rs` wrote (built, checked and audited there), its kernel set, and the loading of both
//! into adamant's runtime, which verifies the certificate first. Launches go through the
//! runtime's generic, validated [`Adamant::launch`](adamant_runtime::Adamant::launch) with the kernels' generated
//! `Buffers` and `Scalars`.
use adamant_device::abi::{self, KernelDescriptor};
use adamant_runtime::{include_module, Adamant, AuditedModule};

pub use custom_optimizer_kernels::{
    lion_kernel, nadam_kernel, nadam_schedule, rmsprop_centered_kernel, sgd_momentum_kernel,
};

pub mod reference;

/// The kernel crate's library name, which is its kernel set.
pub const SET: &str = "custom_optimizer_kernels";

/// The module `build.rs` made (this crate's entries only), with its audit certificate.
pub static MODULE: AuditedModule = include_module!(custom_optimizer_kernels);

/// The PTX text of [`MODULE`], for tools and the audit tests.
pub const PTX: &str = MODULE.ptx();

/// The kernel set `build.rs` checked and audited [`PTX`] against, as JSON (for
/// `adamant audit --ptx <it> --kernels <this>`, which does not link this crate).
pub const KERNEL_LIST: &str = include_str!(concat!(
    env!("OUT_DIR"),
    "/custom_optimizer_kernels.kernels.json"
));

/// The kernels of [`PTX`]. This crate links its kernel crate, so the set is registered.
pub fn kernels() -> Vec<&'static KernelDescriptor> {
    abi::kernel_set(SET).expect("this crate links custom-optimizer-kernels")
}

/// Loads [`MODULE`] into `rt` beside adamant's module, once its certificate is verified, so the
/// launches of this crate's kernels find their entries.
///
/// # Errors
///
/// Those of [`Adamant::add_module`].
pub fn load(rt: &mut Adamant) -> adamant_runtime::Result<()> {
    rt.add_module(&MODULE)
}
