//! The one-call PTX build, and which order this script's copy of the kernel crate has, for the
//! test that shows the two copies differ.
use feature_split_kernels::SWAPPED;

fn main() {
    adamant_build::KernelCrate::new("kernels").build();
    println!("cargo:rustc-env=FEATURE_SPLIT_BUILD_SWAPPED={SWAPPED}");
}
