//! 1500 steps of real fp16 training with dynamic loss scaling on the device (issue 26): the MLP
//! of `support::mlp` fitted by `adamw_f16` (f16 weights and gradients, f32 moments), each step
//! guarded by `GuardSpec::loss_scale` with PyTorch's `GradScaler` start (2^16): the host plays
//! the backward, uploading `f16(gradient × scale)` with the scale the record holds, and at three
//! chosen steps an overflow (an infinite gradient element) besides the ones the scale itself
//! causes (2^16 times this model's early gradients passes f16's 65,504). Against the same run in
//! f32 (`attn_adam_kernel`):
//! - every overflowed step is skipped and halves the scale (the record's backoffs and skipped
//!   steps count them, injected ones included), and the scale grows back after each run of clean
//!   steps;
//! - every stored weight stays finite and within the bound;
//! - the final loss (mean of the last 50 steps) is within 5 % of the f32 run's.
//!
//! GPU only (`#[ignore]`).
use adamant_kernels::half_weights::adamw_f16;
use adamant_runtime::cust::memory::{CopyDestination, DeviceBuffer};
use adamant_runtime::{Adamant, DeviceRegion, GradientGuard, Records, Storage};
use half::f16;

#[path = "../support/mod.rs"]
mod support;

use support::download_raw as download;
use support::mlp::{f32_adamw_run, final_loss, init, train, PARAMS};

const STEPS: usize = 1500;
const LR: f32 = 3e-3;
const WD: f32 = 0.01;
const BOUND: f32 = 4.0;
/// Steps whose gradient gets an infinite element on top of whatever the scale does.
const INJECTED: [usize; 3] = [100, 101, 900];
/// Clean steps before the scale doubles (PyTorch's default is 2000; shorter here, so the scale
/// grows back several times within the run).
const GROWTH_INTERVAL: u32 = 100;

fn region<T: adamant_runtime::cust::memory::DeviceCopy>(
    b: &DeviceBuffer<T>,
    storage: Storage,
) -> DeviceRegion {
    DeviceRegion::of(b.as_device_ptr().as_raw(), b.len(), storage).unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn fp16_with_dynamic_loss_scaling_trains_like_f32() {
    let rt = Adamant::new().expect("a GPU");
    let s = rt.stream();
    let p0: Vec<f32> = (0..PARAMS).map(init).collect();
    let zeros = vec![0f32; PARAMS];
    let up = |x: &[f32]| DeviceBuffer::from_slice(x).unwrap();

    // f32: AdamW on f32 weights and gradients.
    let f32_losses = f32_adamw_run(&rt, STEPS, LR, WD, BOUND);

    // fp16 with a dynamic loss scale on the device.
    let bits: Vec<u16> = p0.iter().map(|&x| f16::from_f32(x).to_bits()).collect();
    let p16 = DeviceBuffer::from_slice(&bits).unwrap();
    let mut g16 = DeviceBuffer::from_slice(&vec![0u16; PARAMS]).unwrap();
    let (m, v) = (up(&zeros), up(&zeros));
    let buffers = adamw_f16::Buffers {
        p: region(&p16, Storage::F16),
        g: region(&g16, Storage::F16),
        m: region(&m, Storage::F32),
        v: region(&v, Storage::F32),
    };
    let states = support::loss_scaled_f16_states(LR, WD, BOUND, 65536.0, GROWTH_INTERVAL);
    // SAFETY: `g16` outlives every enqueue of the guard (synchronised each step).
    let guard = unsafe { GradientGuard::per_record_raw(&[(0, &[buffers.g][..])]) }.unwrap();
    let records = Records::single::<adamw_f16::Entry>().unwrap();
    let widen = |b: &[u16]| -> Vec<f32> { b.iter().map(|&x| f16::from_bits(x).to_f32()).collect() };
    let (mut step, mut overflowed, mut scales) = (0usize, 0usize, Vec::with_capacity(STEPS));
    let f16_losses = train(
        &rt,
        STEPS,
        BOUND,
        &mut || widen(&download(&p16)),
        &mut |grad| {
            let scale = states.read_records()?[0].guard.loss_scale as f64;
            scales.push(scale);
            let mut scaled: Vec<u16> = grad
                .iter()
                .map(|&x| f16::from_f64(x * scale).to_bits())
                .collect();
            if INJECTED.contains(&step) {
                scaled[PARAMS / 3] = f16::NEG_INFINITY.to_bits();
            }
            overflowed += scaled.iter().any(|&b| !f16::from_bits(b).is_finite()) as usize;
            g16.copy_from(&scaled[..]).unwrap();
            step += 1;
            guard.enqueue_and_advance(&rt, s, &states)?;
            // SAFETY: every region is live device memory until the synchronisation in `train`.
            unsafe {
                rt.launch::<adamw_f16::Entry>(s)
                    .stepped(&adamw_f16::StepScalars {}, &states, 0)
                    .raw_buffers(&buffers, &records)
            }
            .map(|_| ())
        },
    );
    let last = states.read_records().unwrap()[0];
    assert!(
        overflowed > INJECTED.len(),
        "the scale itself overflowed f16 ({overflowed} steps)"
    );
    assert_eq!(
        last.guard.skipped_steps as usize, overflowed,
        "every overflow skipped"
    );
    assert_eq!(
        last.guard.scale_backoffs as usize, overflowed,
        "every overflow halves"
    );
    assert_eq!(
        last.state.step as usize,
        STEPS - overflowed,
        "t counts the steps taken"
    );
    let grown = scales.windows(2).filter(|w| w[1] > w[0]).count();
    assert!(grown >= 3, "the scale grew back {grown} times: {scales:?}");
    let (f32_final, f16_final) = (final_loss(&f32_losses), final_loss(&f16_losses));
    let rel = (f16_final - f32_final) / f32_final;
    println!(
        "fp16 training with loss scaling: {STEPS} steps, {overflowed} overflows skipped ({} \
         injected), the scale grew {grown} times (final {}), final loss f32 {f32_final:.6}, \
         fp16 {f16_final:.6} ({:+.2} %); first loss {:.4}",
        INJECTED.len(),
        last.guard.loss_scale,
        100.0 * rel,
        f32_losses[0]
    );
    assert!(
        rel.abs() < 0.05,
        "fp16's final loss {f16_final} is not within 5 % of f32's {f32_final}"
    );
}
