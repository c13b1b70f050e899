//! adamant: GPU optimizer kernels written in Rust, compiled to PTX, with the weight clamp stamped
//! into every one by a proc-macro. This crate re-exports the host runtime and the device crate's
//! host-side items, and owns the workspace's tests and examples.
pub use adamant_kernels as kernels;
pub use adamant_runtime as runtime;
pub mod reference;
