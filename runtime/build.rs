//! Builds `kernels-rs` into the one PTX module this crate embeds (`PTX`, from OUT_DIR), checked
//! and audited, with a copy at `<target-dir>/ptx/adamant_kernels.ptx` (`PTX_PATH`). The recipe
//! and every check are adamant-build's `KernelCrate` (README, "How the PTX is built"); a change
//! to adamant-build rebuilds this script, which reruns it.
fn main() {
    let built = adamant_build::KernelCrate::new("../kernels-rs")
        .kernels(adamant_kernels::abi::kernels())
        // The macro that generates every entry is a path dependency of kernels-rs.
        .rerun_if_changed("../codegen/src")
        .rerun_if_changed("../codegen/Cargo.toml")
        .build();
    println!(
        "cargo:rustc-env=ADAMANT_PTX_PATH={}",
        built.published.display()
    );
}
