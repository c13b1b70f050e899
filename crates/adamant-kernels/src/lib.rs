//! adamant's device code.
//!
//! Compiled twice from the same source:
//! - for `nvptx64-nvidia-cuda` by `runtime/build.rs` into one PTX module (the kernel entries);
//! - for the host as an ordinary library: the per-element math of every kernel (for CPU tests) and
//!   one [`abi::KernelDescriptor`] per entry, from which the runtime derives its typed launchers
//!   and the PTX audit derives what to check.
//!
//! Optimizer kernels are written with [`optimizer_kernel`], which stamps the weight-clamp epilogue
//! ([`clamp::weight_clamp`]) and its trailing `weight_clamp_max_abs: f32` parameter into each one:
//! the five Adam kernels ([`optimizers`]) and the soft update of a target network
//! ([`soft_update`]), which writes parameters too.
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_gpu_kernel, stdarch_nvptx, core_intrinsics, link_llvm_intrinsics)
)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(gpu_intrinsics, gpu_launch_sized_workgroup_mem)
)]

// The macros emit paths that start with this crate's name in the expanding crate's Cargo.toml
// (`::adamant_kernels::...` here and in the fixtures, `::kernels::...` where a dependency
// renames it); inside this crate that name resolves through this line.
extern crate self as adamant_kernels;

pub use adamant_codegen::{kernel_entry, optimizer_kernel, scalar_group};
// The callback through which a scalar group's macro hands its fields to `#[optimizer_kernel]`.
#[doc(hidden)]
pub use adamant_codegen::__optimizer_kernel_with_groups;

#[doc(hidden)]
#[cfg(not(target_arch = "nvptx64"))]
pub use linkme as __linkme;

#[cfg(not(target_arch = "nvptx64"))]
pub mod abi;
pub mod adam;
#[cfg(target_arch = "nvptx64")]
pub mod builtins;
#[cfg(not(target_arch = "nvptx64"))]
pub mod certificate;
pub mod clamp;
pub mod diagnostics;
pub mod guard;
#[cfg(not(target_arch = "nvptx64"))]
pub mod kernel_list;
pub mod math;
pub mod multi;
pub mod nan_check;
pub mod optimizers;
pub mod prelude;
pub mod scalar_groups;
pub mod soft_update;
pub mod step;
pub mod vector;

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // With -Cpanic=immediate-abort no panic path reaches here; a trap is the only sane answer.
    unsafe { core::arch::nvptx::trap() }
}

/// The kernels of the crate in which it is written (its kernel set, see [`abi::kernel_set`]),
/// for that crate's own code, such as a test of its set (the runtime's `Adamant::add_module`
/// takes the set named in the module's certificate from the registry itself). A build script is
/// a crate of its own (`build_script_build`), so there name the kernel crate instead:
/// `abi::kernel_set("my_kernels")`. As [`abi::kernel_set`], a `Result`: a crate that defines no
/// kernel gets [`abi::UnknownSet`] naming it.
#[macro_export]
macro_rules! kernel_set {
    () => {
        $crate::abi::kernel_set(::core::env!("CARGO_CRATE_NAME"))
    };
}
