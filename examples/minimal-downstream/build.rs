//! The whole PTX build: compile `kernels/`, check and audit the module, write it with its audit
//! certificate to OUT_DIR.
use minimal_downstream_kernels as _;

fn main() {
    adamant_build::KernelCrate::new("kernels").build();
}
