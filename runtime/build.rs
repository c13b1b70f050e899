//! Builds `kernels-rs` into the one PTX module this crate embeds (`PTX`, from OUT_DIR), checked
//! and audited, with a copy at `<target-dir>/ptx/adamant_kernels.ptx` (for scripts/gpu-build.sh;
//! the crate itself names no path of the build machine). The recipe
//! and every check are adamant-build's `KernelCrate` (README, "How the PTX is built"); a change
//! to adamant-build rebuilds this script, which reruns it.
use std::path::{Path, PathBuf};

fn main() {
    check_libcuda();
    adamant_build::KernelCrate::new("../kernels-rs")
        .kernels(adamant_kernels::abi::kernels())
        // The macro that generates every entry is a path dependency of kernels-rs.
        .rerun_if_changed("../codegen/src")
        .rerun_if_changed("../codegen/Cargo.toml")
        .build();
}

/// cust links `-lcuda` even on a machine without a GPU, and its build script only checks that a
/// `lib64` folder exists (the repository keeps `.cuda-stub/lib64/` for it): without a
/// `libcuda.so` the build would end in a linker error far from its cause. Refuse here, naming the
/// script that installs one.
fn check_libcuda() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut candidates: Vec<PathBuf> = std::env::var("CUDA_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|p| !p.is_empty())
        .flat_map(|p| {
            let p = PathBuf::from(p);
            [
                p.join("lib64/libcuda.so"),
                p.join("libcuda.so"),
                p.join("lib64/stubs/libcuda.so"),
            ]
        })
        .collect();
    candidates.extend(
        [
            ".cuda-stub/lib64/libcuda.so",
            "/usr/lib/x86_64-linux-gnu/libcuda.so",
            "/usr/local/cuda/lib64/stubs/libcuda.so",
            "/usr/local/cuda/lib64/libcuda.so",
        ]
        .map(|p| workspace.join(p)),
    );
    println!("cargo:rerun-if-env-changed=CUDA_LIBRARY_PATH");
    if !candidates.iter().any(|p| p.exists()) {
        eprintln!(
            "\nerror: adamant: no libcuda.so to link against (cust links -lcuda even without a \
             GPU).\n  fix: scripts/setup.sh (installs Debian's libcuda1 and links \
             .cuda-stub/lib64/libcuda.so to it), or point CUDA_LIBRARY_PATH at a CUDA \
             installation\n"
        );
        std::process::exit(1);
    }
}
