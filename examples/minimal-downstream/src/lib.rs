//! The smallest downstream crate: a kernel crate of its own (`kernels/`), built and audited by
//! one call in `build.rs`, and its module exposed with the certificate that build wrote. It has
//! no audit or tests of its own: the runtime's verification is what stands between its module
//! and a launch (`tests/cpu/downstream_module.rs` in adamant's root crate).
use adamant_runtime::{include_module, AuditedModule};

/// Naming the kernel links the kernel crate, which registers its descriptors in the program:
/// the runtime verifies the module against those.
pub use minimal_downstream_kernels::minimal_sgd_kernel;

/// The module `build.rs` made, with its audit certificate: `rt.add_module(&MODULE)`.
pub static MODULE: AuditedModule = include_module!(minimal_downstream_kernels);
