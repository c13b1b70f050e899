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
