//! What the integration tests share: each test crate declares `mod support;` and uses its part
//! (the rest is unused there, hence the allowance).
#![allow(dead_code)]

pub mod certificates;
pub mod custom_table;
pub mod multi_step;
pub mod ptx_edit;
pub mod small_groups;

use adamant_runtime::Adamant;

/// Why a GPU test panics on a machine without one.
pub const NEEDS_GPU: &str = "needs a CUDA GPU";

/// The runtime a GPU test runs on (GPU 0).
pub fn runtime() -> Adamant {
    Adamant::new().expect(NEEDS_GPU)
}
