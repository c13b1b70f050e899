//! adamant: GPU optimizer kernels written in Rust, compiled to PTX, with the weight clamp stamped
//! into every one by a proc-macro. This crate re-exports the host runtime, the ABI, the device SDK's
//! host-side items, adamant's own kernels, the build side (PTX reader, audit, ptxas) and the seed's RL training step
//! built on the runtime (`rl`), and owns the workspace's tests and examples.
pub use adamant_abi as abi;
pub use adamant_build as build;
pub use adamant_device as device;
pub use adamant_kernels as kernels;
pub use adamant_rl as rl;
pub use adamant_runtime as runtime;
pub mod audit_doc;
pub mod nan_check_reference;
pub mod record_reference;
pub mod reference;

use adamant_build::audit::{audit, AuditReport};

/// Audits the PTX embedded in the runtime ([`adamant_runtime::PTX`]) against every registered
/// kernel. It lives here, where the runtime's module and the audit meet: the runtime does not
/// depend on the audit.
pub fn audit_embedded() -> AuditReport {
    audit(adamant_runtime::PTX, &adamant_device::abi::kernels())
}
