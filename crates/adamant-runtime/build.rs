//! Builds `adamant-kernels` into the one PTX module this crate embeds (`PTX`, from OUT_DIR), checked
//! and audited, with a copy at `<target-dir>/ptx/adamant_kernels.ptx` (for scripts/gpu-build.sh;
//! the crate itself names no path of the build machine). The recipe
//! and every check are adamant-build's `KernelCrate` (README, "How the PTX is built"); a change
//! to adamant-build rebuilds this script, which reruns it.
fn main() {
    check_libcuda();
    // Linked for the descriptors it registers: adamant's own set.
    use adamant_kernels as _;
    adamant_build::KernelCrate::new("../adamant-kernels")
        .kernels(adamant_device::abi::kernels())
        // The device SDK, the ABI and the macro that generates every entry are path
        // dependencies of adamant-kernels, compiled into its module.
        .rerun_if_changed("../adamant-device/src")
        .rerun_if_changed("../adamant-device/Cargo.toml")
        .rerun_if_changed("../adamant-abi/src")
        .rerun_if_changed("../adamant-abi/Cargo.toml")
        .rerun_if_changed("../adamant-codegen/src")
        .rerun_if_changed("../adamant-codegen/Cargo.toml")
        .build();
}

/// cust links `-lcuda` even on a machine without a GPU, and its build script only checks that a
/// `lib64` folder exists (the repository keeps `.cuda-stub/lib64/` for it): a missing folder
/// panics in cust's build script, a folder without `libcuda.so` ends the build in a linker error
/// far from its cause. adamant-build's check names both, with the `.cargo/config.toml` lines and
/// the stub folder that fix them.
fn check_libcuda() {
    if let Err(e) = adamant_build::check_cuda_link() {
        eprintln!("\nerror: adamant: {e}\n");
        std::process::exit(1);
    }
}
