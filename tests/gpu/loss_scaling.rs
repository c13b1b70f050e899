//! fp16 training with dynamic loss scaling on the device (issue 26): `adamw_f16` (f16 weights and
//! gradients) stepped from a record guarded with `GuardSpec::loss_scale`, its f16 gradients
//! judged by the guard (`GradientGuard::per_record_raw`). Each step the test plays the backward:
//! it writes the true gradient times the record's current scale, rounded to f16, and at chosen
//! steps an overflow (an infinite f16 gradient). Checked against a model of PyTorch's
//! `GradScaler` rule and the f64 AdamW reference (`adamant::reference`), step by step:
//! - an overflowed step is skipped: weights and moments bit for bit as they were, `t` kept, the
//!   scale halved;
//! - a clean step unscales: the weights as the reference steps them with the gradient the kernel
//!   sees (`f16(g · S) / S`), within one f16 step and almost all equal; the guard reports the
//!   unscaled norm;
//! - after `growth_interval` clean steps in a row the scale doubles; the run recovers and trains.
//!
//! GPU only (`#[ignore]`).
use adamant::reference::{self, Elem, Hyper, KernelRef};
use adamant_kernels::half_weights::adamw_f16;
use adamant_runtime::cust::memory::{CopyDestination, DeviceBuffer};
use adamant_runtime::{Adamant, DeviceRegion, GradientGuard, Records, Storage};
use half::f16;

#[path = "../support/mod.rs"]
mod support;

use support::{download_raw as download, pseudo};

const N: usize = 10_001;
const LR: f32 = 1e-3;
const WD: f32 = 0.01;
const BOUND: f32 = 10.0;
const STEPS: usize = 14;
const OVERFLOWS: [usize; 3] = [3, 7, 8];
const INTERVAL: u32 = 3;

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn fp16_loss_scaling_skips_overflows_and_recovers() {
    let rt = Adamant::new().expect("a GPU");
    let p0: Vec<u16> = (0..N)
        .map(|i| f16::from_f32(pseudo(i, 1)).to_bits())
        .collect();
    let p = DeviceBuffer::from_slice(&p0).unwrap();
    let mut g = DeviceBuffer::from_slice(&vec![0u16; N]).unwrap();
    let m = DeviceBuffer::from_slice(&vec![0f32; N]).unwrap();
    let v = DeviceBuffer::from_slice(&vec![0f32; N]).unwrap();
    let region = |ptr: u64, storage| DeviceRegion::of(ptr, N, storage).unwrap();
    let buffers = adamw_f16::Buffers {
        p: region(p.as_device_ptr().as_raw(), Storage::F16),
        g: region(g.as_device_ptr().as_raw(), Storage::F16),
        m: region(m.as_device_ptr().as_raw(), Storage::F32),
        v: region(v.as_device_ptr().as_raw(), Storage::F32),
    };
    let scale0 = 1024.0f32;
    let states = support::loss_scaled_f16_states(LR, WD, BOUND, scale0, INTERVAL);
    assert!(states.loss_scale_address(0).is_ok());
    // SAFETY: `g` outlives every enqueue of the guard (the test synchronises before dropping).
    let guard = unsafe { GradientGuard::per_record_raw(&[(0, &[buffers.g][..])]) }.unwrap();
    let records = Records::single::<adamw_f16::Entry>().unwrap();

    // The model: PyTorch's GradScaler rule.
    let (mut scale, mut clean, mut t) = (scale0 as f64, 0u32, 0u32);
    let (mut exact, mut compared, mut grown) = (0usize, 0usize, 0usize);
    for step in 0..STEPS {
        let record = states.read_records().unwrap()[0];
        assert_eq!(
            record.guard.loss_scale as f64, scale,
            "step {step}: the scale"
        );
        assert_eq!(record.state.step, t, "step {step}: t");
        // The backward: the true gradient times the scale, in f16.
        let truth: Vec<f64> = (0..N)
            .map(|i| pseudo(i, 2 + step as u32) as f64 * 0.05)
            .collect();
        let mut scaled: Vec<u16> = truth
            .iter()
            .map(|x| f16::from_f64(x * scale).to_bits())
            .collect();
        let overflow = OVERFLOWS.contains(&step);
        if overflow {
            scaled[N / 2] = f16::INFINITY.to_bits();
        }
        g.copy_from(&scaled[..]).unwrap();
        let (p_before, m_before, v_before) = (download(&p), download(&m), download(&v));
        guard
            .enqueue_and_advance(&rt, rt.stream(), &states)
            .unwrap();
        // SAFETY: every region is live device memory until the synchronisation below.
        unsafe {
            rt.launch::<adamw_f16::Entry>(rt.stream())
                .stepped(&adamw_f16::StepScalars {}, &states, 0)
                .raw_buffers(&buffers, &records)
        }
        .unwrap();
        rt.synchronize().unwrap();
        let (p1, m1, v1) = (download(&p), download(&m), download(&v));
        let guard_record = states.last_guards()[0];
        if overflow {
            assert_eq!(
                p1, p_before,
                "step {step}: an overflowed step writes no weight"
            );
            assert_eq!(m1, m_before, "step {step}");
            assert_eq!(v1, v_before, "step {step}");
            assert_eq!(guard_record.skip, 1, "step {step}");
            assert_eq!(guard_record.first_non_finite, (N / 2) as u64, "step {step}");
            scale *= 0.5;
            clean = 0;
            continue;
        }
        t += 1;
        // The gradient the kernel sees: the f16 value times 1/S (exact: S is a power of two).
        let seen: Vec<f64> = scaled
            .iter()
            .map(|&b| f16::from_bits(b).to_f64() / scale)
            .collect();
        let norm = seen.iter().map(|x| x * x).sum::<f64>().sqrt();
        let rel = (guard_record.norm as f64 - norm).abs() / norm;
        assert!(
            rel < 1e-6,
            "step {step}: norm {} vs {norm}",
            guard_record.norm
        );
        let hp = Hyper::new(LR, 0.9, 0.999, 1e-8, WD, t as u64);
        for i in 0..N {
            let e = reference::step(
                KernelRef::Attn,
                Elem::new(
                    f16::from_bits(p_before[i]).to_f64(),
                    m_before[i] as f64,
                    v_before[i] as f64,
                    0.0,
                ),
                seen[i],
                &hp,
                BOUND as f64,
            );
            let want = f16::from_f64(e.p);
            let got = f16::from_bits(p1[i]);
            let steps = (got.to_bits() as i32 - want.to_bits() as i32).abs();
            assert!(
                steps <= 1,
                "step {step}, element {i}: {got} vs {want} ({})",
                e.p
            );
            exact += (steps == 0) as usize;
            compared += 1;
        }
        clean += 1;
        if clean == INTERVAL {
            scale *= 2.0;
            clean = 0;
            grown += 1;
        }
    }
    let last = states.read_records().unwrap()[0];
    assert_eq!(last.guard.loss_scale as f64, scale);
    assert_eq!(last.guard.scale_backoffs, OVERFLOWS.len() as u32);
    assert_eq!(last.guard.skipped_steps, OVERFLOWS.len() as u32);
    assert_eq!(last.state.step as usize, STEPS - OVERFLOWS.len());
    assert!(grown >= 2, "the scale grew {grown} times");
    assert!(
        exact * 100 >= compared * 99,
        "{exact} of {compared} weights equal the reference's f16"
    );
    println!(
        "fp16 loss scaling: {STEPS} steps, {} overflows skipped, final scale {scale}, {exact} of \
         {compared} weights equal the f64 reference",
        OVERFLOWS.len()
    );
}
