//! The device SDK: what a kernel crate depends on to write kernels that adamant can build,
//! audit and launch.
//!
//! - the kernel macros ([`optimizer_kernel`], [`kernel_entry`], [`scalar_group`]) and the
//!   [`prelude`] a kernel author imports;
//! - what the macros' expansions call: the weight clamp ([`clamp`]), the records epilogue
//!   ([`diagnostics`]), the step record's device operations ([`step`]), the multi-tensor chunk
//!   table ([`multi`]), the vector loads ([`vector`]) and the nvptx builtins (`builtins`, on
//!   nvptx only);
//! - device float functions ([`math`]) and the Adam building blocks ([`adam`],
//!   [`scalar_groups`]);
//! - 16-bit storage ([`storage`]): f32 to bf16 or f16, to nearest or stochastically from a
//!   counter hash, with the clamp kept true of the stored bits (issue 26; no kernel stores 16-bit
//!   parameters yet);
//! - the layouts and pure parts of adamant's step guard ([`guard`]) and NaN check
//!   ([`nan_check`]), which host and device share (the entries themselves are in
//!   `adamant-kernels`);
//! - the ABI ([`abi`], the crate `adamant-abi`): descriptors, their registry, the record layouts.
//!
//! Compiled twice from the same source: for `nvptx64-nvidia-cuda` as part of a kernel crate's
//! PTX module (no entries of its own), and for the host, where the per-element math runs in CPU
//! tests and the ABI registers each entry's descriptor.
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(stdarch_nvptx, core_intrinsics, link_llvm_intrinsics)
)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(gpu_intrinsics, gpu_launch_sized_workgroup_mem)
)]

// The macros emit paths that start with this crate's name in the expanding crate's Cargo.toml
// (`::adamant_device::...` here and in the fixtures, `::device::...` where a dependency
// renames it); inside this crate (its scalar groups) that name resolves through this line.
extern crate self as adamant_device;

pub use adamant_codegen::{fused_optimizer, kernel_entry, optimizer_kernel, scalar_group};
// The callback through which a scalar group's macro hands its fields to `#[optimizer_kernel]`.
#[doc(hidden)]
pub use adamant_codegen::__optimizer_kernel_with_groups;

#[doc(hidden)]
#[cfg(not(target_arch = "nvptx64"))]
pub use adamant_abi::__linkme;

pub use adamant_abi as abi;
pub mod adam;
#[cfg(target_arch = "nvptx64")]
pub mod builtins;
pub mod clamp;
pub mod diagnostics;
pub mod fused;
pub mod guard;
pub mod math;
pub mod multi;
pub mod nan_check;
pub mod prelude;
pub mod scalar_groups;
pub mod step;
pub mod storage;
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
