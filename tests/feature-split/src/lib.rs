//! A host crate whose build script and program link two builds of one kernel crate, with two
//! parameter orders of one kernel (see Cargo.toml): the module's certificate lists the order the
//! build audited, the registry here holds the other.
use adamant_runtime::{include_module, AuditedModule};

/// Naming the kernel links the kernel crate (with `swapped`), which registers its descriptors.
pub use feature_split_kernels::split_sgd_kernel;

/// The module `build.rs` made and audited, with its certificate.
pub static MODULE: AuditedModule = include_module!(feature_split_kernels);

/// Whether this crate's copy of the kernel crate has the `swapped` order.
pub const HOST_SWAPPED: bool = feature_split_kernels::SWAPPED;

/// Whether build.rs's copy, the one the module was audited against, has it.
pub const BUILD_SWAPPED: &str = env!("FEATURE_SPLIT_BUILD_SWAPPED");
