//! What the integration tests share: each test crate declares `mod support;` and uses its part
//! (the rest is unused there, hence the allowance).
#![allow(dead_code)]

pub mod certificates;
pub mod custom_table;
pub mod mlp;
pub mod multi_step;
pub mod ptx_edit;
pub mod small_groups;
pub mod split;
pub mod stochastic;

use adamant_runtime::Adamant;

/// Why a GPU test panics on a machine without one.
pub const NEEDS_GPU: &str = "needs a CUDA GPU";

/// The runtime a GPU test runs on (GPU 0).
pub fn runtime() -> Adamant {
    Adamant::new().expect(NEEDS_GPU)
}

/// A device buffer's contents, copied to the host (raw memory of another library's, for the
/// tests of the raw launches).
pub fn download_raw<T>(b: &adamant_runtime::cust::memory::DeviceBuffer<T>) -> Vec<T>
where
    T: Copy + Default + adamant_runtime::cust::memory::DeviceCopy,
{
    use adamant_runtime::cust::memory::CopyDestination;
    let mut h = vec![T::default(); b.len()];
    b.copy_to(&mut h[..]).expect("a device-to-host copy");
    h
}

/// A value in [-1, 1] that element `i` of input `k` starts from: a fixed pattern, spread over
/// 20,001 steps, different for each `k`.
pub fn pseudo(i: usize, k: u32) -> f32 {
    (((i as u32).wrapping_mul(2654435761) ^ k.wrapping_mul(40503)) % 20001) as f32 / 10000.0 - 1.0
}

/// One step-state record made for kernel `E` with its `#[hyper]` scalars `hyper`: lr `lr`,
/// betas (0.9, 0.999), a fixed clamp `bound`, `steps_taken` steps already taken (0 for a fresh
/// run, a checkpoint's count to resume one), its own `Q_ABS_REF`.
pub fn fixed_bound_states<E: adamant_device::abi::OptimizerEntry>(
    hyper: E::Hyper,
    lr: f32,
    bound: f32,
    steps_taken: u32,
) -> adamant_runtime::StepStates
where
    E::Hyper: Send + Sync + 'static,
{
    use adamant_runtime::{AdamHyper, ClampPolicy, QAbsRef, StepBound, StepSpec, StepStates};
    let adam = AdamHyper::new(lr, 0.9, 0.999, 1e-8, 0.0, u64::from(steps_taken) + 1).unwrap();
    let spec = StepSpec::adam(&adam, StepBound::Policy(ClampPolicy::Fixed { bound }))
        .unwrap()
        .with_kernel::<E>(hyper)
        .unwrap();
    StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 }).unwrap()
}

/// `x` rounded to nearest in the 16-bit value type `storage` (bf16 or f16), by the `half` crate
/// (not the device's conversion), as the tests write values into 16-bit buffers.
pub fn half_bits(storage: adamant_runtime::Storage, x: f32) -> u16 {
    use adamant_runtime::Storage;
    match storage {
        Storage::Bf16 => half::bf16::from_f32(x).to_bits(),
        Storage::F16 => half::f16::from_f32(x).to_bits(),
        other => panic!("{other:?} is no 16-bit value type"),
    }
}

/// The value of `bits` of the 16-bit value type `storage`, widened by the `half` crate.
pub fn half_value(storage: adamant_runtime::Storage, bits: u16) -> f32 {
    use adamant_runtime::Storage;
    match storage {
        Storage::Bf16 => half::bf16::from_bits(bits).to_f32(),
        Storage::F16 => half::f16::from_bits(bits).to_f32(),
        other => panic!("{other:?} is no 16-bit value type"),
    }
}

/// One step-state record for `adamw_f16` (lr `lr`, weight decay `wd`, betas 0.9 and 0.999, a
/// fixed clamp `bound`) guarded by a dynamic loss scale on the device: a non-finite gradient
/// skips the step and halves the scale, `growth_interval` clean steps double it.
pub fn loss_scaled_f16_states(
    lr: f32,
    wd: f32,
    bound: f32,
    initial: f32,
    growth_interval: u32,
) -> adamant_runtime::StepStates {
    use adamant_kernels::half_weights::adamw_f16;
    use adamant_runtime::{
        AdamHyper, ClampPolicy, GuardSpec, LossScale, QAbsRef, StepBound, StepSpec, StepStates,
    };
    let adam = AdamHyper::new(lr, 0.9, 0.999, 1e-8, wd, 1).unwrap();
    let spec = StepSpec::adam(&adam, StepBound::Policy(ClampPolicy::Fixed { bound }))
        .unwrap()
        .with_kernel::<adamw_f16::Entry>(adamw_f16::Hyper {
            eps: 1e-8,
            weight_decay: wd,
        })
        .unwrap()
        .guarded(GuardSpec {
            skip_non_finite: true,
            max_norm: None,
            loss_scale: Some(LossScale {
                initial,
                growth_interval,
            }),
        })
        .unwrap();
    StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 }).unwrap()
}
