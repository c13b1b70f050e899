//! The whole PTX build of a downstream crate: one call. It compiles `kernels/` to PTX with the
//! stock nightly, checks the module against the crate's kernel set, audits every entry's clamp,
//! runs ptxas when present and writes `$OUT_DIR/custom_optimizer_kernels.ptx`.
use custom_optimizer_kernels as _;

fn main() {
    adamant_build::KernelCrate::new("kernels").build();
}
