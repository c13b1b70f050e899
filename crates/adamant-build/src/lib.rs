//! adamant's build side: compiling a kernel crate to PTX from a build script ([`KernelCrate`]),
//! and what reads, checks and audits a PTX module, apart from the runtime that loads and launches
//! it, so that build scripts and tools use it without linking `cust`.
//!
//! - [`KernelCrate`]: the stock-nightly PTX build, its checks and the audit, for any crate's
//!   `build.rs`;
//! - [`ptx`]: a reader for PTX that sees what ptxas sees, and the module check;
//! - [`audit`]: the PTX audit against the kernel descriptors (writes attributed, clamp proven);
//! - [`ptxas`]: NVIDIA's `ptxas`, found and run offline, and its `-v` report;
//! - [`write_register_caps`]: the multi-tensor entries' register caps, written into the PTX;
//! - [`source_check`]: no assembly macros in a kernel crate's sources;
//! - [`kernel_list`]: a kernel set as JSON, written next to its module, for tools that do not
//!   link the kernel crate (`adamant audit --kernels`); beside it the module's audit certificate
//!   (`adamant_abi::certificate`), which the runtime verifies before it loads the module.
pub mod audit;
mod checks;
mod cuda_link;
mod error;
mod kernel_crate;
mod manifest;
pub mod ptx;
pub mod ptxas;
mod register_caps;
pub mod source_check;
mod toolchain;

/// The kernel list's format, which the certificate shares: it lives beside the descriptors, in
/// `adamant-abi`, so the writer here and the runtime's reader use one definition.
pub use adamant_abi::kernel_list;
// The tests check against adamant's own kernel set, registered by linking its crate.
#[cfg(test)]
use adamant_kernels as _;
pub use cuda_link::{check_cuda_link, CUDA_CONFIG, CUDA_STUB_COMMANDS};
pub use error::BuildError;
pub use kernel_crate::{check_unique_names, BuiltPtx, KernelCrate};
pub use manifest::{CrateNames, PTX_PROFILE};
pub use register_caps::write_register_caps;
pub use toolchain::{
    ALLOW_ANY_NIGHTLY_ENV, NIGHTLY_ENV, PINNED_NIGHTLY, PINNED_NIGHTLY_COMMIT, PINNED_TOOLCHAIN,
};
