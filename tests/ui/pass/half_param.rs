// A kernel with bf16 weights: the descriptor says how each buffer is stored, and `element` (what
// the entry stores, widened back to f32) holds the bound in bf16 itself.
#![deny(warnings)]
use adamant_device::abi::Storage;
use adamant_device::optimizer_kernel;

/// Plain SGD on f16 weights: past 65,504 rounding to nearest gives infinity, which the hold
/// takes back to 65,504 while the clamp is on.
#[optimizer_kernel]
pub fn sgd_f16(#[param(f16)] p: f32, #[grad(f16)] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

/// Plain SGD on bf16 weights, f16 gradients.
#[optimizer_kernel]
pub fn sgd_bf16(#[param(bf16)] p: f32, #[grad(f16)] g: f32, #[hyper] lr: f32) -> f32 {
    p - lr * g
}

fn main() {
    let storage = |name: &str| {
        sgd_bf16::DESCRIPTOR
            .params
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.storage)
    };
    assert_eq!(storage("p"), Some(Storage::Bf16));
    assert_eq!(storage("g"), Some(Storage::F16));
    assert_eq!(storage("lr"), Some(Storage::F32));
    let multi = sgd_bf16::MULTI_DESCRIPTOR.params;
    assert_eq!(multi[0].storage, Storage::Bf16, "the parameter table points at bf16 buffers");
    assert!(sgd_bf16::FUSABLE, "a 16-bit parameter has its own fused table");

    // 0.08 is no bf16 value; its nearest (0.080078125) is past it, so the largest bf16 within it
    // is stored: 0.079589844.
    let stored = sgd_bf16::element(0.08, 0.0, 0.0, 0.08);
    assert!(stored <= 0.08);
    assert_eq!(stored, 0.079589844);
    assert_eq!(sgd_bf16::element(-1.0, 0.0, 0.0, 0.08), -0.079589844);
    // Within the bound: rounded to nearest even (1 + 2^-8 is a tie between 1 and 1 + 2^-7).
    assert_eq!(sgd_bf16::element(1.0 + 2f32.powi(-8), 0.0, 0.0, 2.0), 1.0);
    assert!(sgd_bf16::element(f32::NAN, 0.0, 0.0, 0.08).is_nan());
    // No bound: plain rounding, infinity kept.
    assert_eq!(sgd_bf16::element(f32::INFINITY, 0.0, 0.0, 0.0), f32::INFINITY);

    // f16: 65,530 rounds to infinity; within a bound of 1e6 it is stored as 65,504.
    assert_eq!(sgd_f16::DESCRIPTOR.params[0].storage, Storage::F16);
    assert_eq!(sgd_f16::element(65530.0, 0.0, 0.0, 1e6), 65504.0);
    assert_eq!(sgd_f16::element(-1e30, 0.0, 0.0, 1e6), -65504.0);
    assert_eq!(sgd_f16::element(65530.0, 0.0, 0.0, 0.0), f32::INFINITY, "clamp off");
    // 0.08 is no f16 value either: the largest f16 within it.
    let stored = sgd_f16::element(1.0, 0.0, 0.0, 0.08);
    assert!(stored <= 0.08 && stored > 0.0799);
}
