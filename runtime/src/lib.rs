//! adamant's host side.
pub mod ptx;

/// The PTX module built from `kernels-rs` by this crate's build script.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/adamant_kernels.ptx"));
/// Where the build script also wrote the PTX.
pub const PTX_PATH: &str = env!("ADAMANT_PTX_PATH");

#[doc(hidden)]
pub fn _cust_links() -> Result<(), cust::error::CudaError> {
    cust::quick_init().map(|_| ())
}
