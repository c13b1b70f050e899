// bf16 weights kept exact by a buffer the macro adds: `#[param(bf16, master)]` (an f32 master
// `p_master`) and `#[param(bf16, remainder)]` (a 16-bit remainder `p_remainder`). Both buffers
// are parameter memory in every descriptor (the audit proves each store), the `Buffers` struct
// names the companion, and `element` stores what the bf16 buffer holds.
#![deny(warnings)]
use adamant_device::abi::{ParamRole, Rounding, Storage};
use adamant_device::optimizer_kernel;

/// Plain SGD on bf16 weights with an f32 master.
#[optimizer_kernel]
pub fn sgd_master(#[param(bf16, master)] p: f32, #[grad(bf16)] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

/// Plain SGD on bf16 weights with a remainder.
#[optimizer_kernel]
pub fn sgd_remainder(
    #[param(bf16, remainder)] p: f32,
    #[grad(bf16)] g: f32,
    #[hyper] lr: f32,
) -> f32 {
    p - lr * g
}

fn buffers(d: &adamant_device::abi::KernelDescriptor) -> Vec<(&str, ParamRole, Storage, Rounding)> {
    d.params
        .iter()
        .filter(|p| p.role.is_param() || matches!(p.role, ParamRole::Input | ParamRole::InputTable))
        .map(|p| (p.name, p.role, p.storage, p.rounding))
        .collect()
}

fn main() {
    use ParamRole::*;
    assert_eq!(
        buffers(&sgd_master::DESCRIPTOR),
        [
            ("p", ParamBuffer, Storage::Bf16, Rounding::Nearest),
            ("g", Input, Storage::Bf16, Rounding::Nearest),
            ("p_master", ParamBuffer, Storage::F32, Rounding::Nearest),
        ]
    );
    assert_eq!(
        buffers(&sgd_remainder::MULTI_STEPPED_DESCRIPTOR),
        [
            ("p", ParamTable, Storage::Bf16, Rounding::TiesAway),
            ("g", InputTable, Storage::Bf16, Rounding::Nearest),
            ("p_remainder", ParamTable, Storage::Bf16Remainder, Rounding::Nearest),
        ]
    );
    assert!(!sgd_master::FUSABLE && !sgd_remainder::FUSABLE);
    // Two parameter stores an element: capped at full occupancy, like a stochastic kernel.
    assert_eq!(sgd_remainder::DESCRIPTOR.max_registers(), Some(64));

    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: the copy of a master rounds to even (down),
    // the weight of a split master ties away (up).
    let x = 1.0 + 2f32.powi(-8);
    assert_eq!(sgd_master::element(x, 0.0, 0.0, 2.0), 1.0);
    assert_eq!(sgd_remainder::element(x, 0.0, 0.0, 2.0), 1.0 + 2f32.powi(-7));
    // 0.08 is no bf16 value: both store the largest bf16 within it.
    assert_eq!(sgd_master::element(1.0, 0.0, 0.0, 0.08), 0.079589844);
    assert_eq!(sgd_remainder::element(1.0, 0.0, 0.0, 0.08), 0.079589844);
}
