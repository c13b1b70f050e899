//! 1500 steps of real training in every storage path of issue 26, against the same run in f32:
//! an MLP (`support::mlp`) fitted by AdamW, the gradient computed on the host in f64 from the
//! weights the model reads (bf16 ones for the 16-bit paths) and uploaded in the gradient's
//! storage type (bf16), then one advance and one stepped launch per step. The f32 run is
//! `attn_adam_kernel` (AdamW); the others are `adamw_bf16_remainder` (26 B: exact f32 master),
//! `adamw_bf16_master` (28 B), `adamw_bf16_sr_moments` (14 B, stochastic) and `adamw_bf16`
//! (22 B, to nearest). The goals: the remainder path's final loss within 1 % of the f32
//! run's, the 14 B path's within 5 %; every weight finite and within the bound throughout.
//!
//! GPU only (`#[ignore]`).
use adamant_kernels::half_weights::{
    adamw_bf16, adamw_bf16_master, adamw_bf16_remainder, adamw_bf16_sr_moments,
};
use adamant_runtime::cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy};
use adamant_runtime::{Adamant, DeviceRegion, Records, StepStates, Storage};
use half::bf16;

#[path = "../support/mod.rs"]
mod support;

use support::download_raw as download;
use support::mlp::{f32_adamw_run, final_loss, init, train, PARAMS};

const STEPS: usize = 1500;
const LR: f32 = 3e-3;
const WD: f32 = 0.01;
const BOUND: f32 = 4.0;

fn up<T: DeviceCopy>(x: &[T]) -> DeviceBuffer<T> {
    DeviceBuffer::from_slice(x).unwrap()
}

fn region<T: DeviceCopy>(b: &DeviceBuffer<T>, storage: Storage) -> DeviceRegion {
    DeviceRegion::of(b.as_device_ptr().as_raw(), b.len(), storage).unwrap()
}

fn record<E: adamant_device::abi::OptimizerEntry>(hyper: E::Hyper) -> StepStates
where
    E::Hyper: Send + Sync + 'static,
{
    support::fixed_bound_states::<E>(hyper, LR, BOUND, 0)
}

fn bf16_bits(x: &[f64]) -> Vec<u16> {
    x.iter().map(|&v| bf16::from_f64(v).to_bits()).collect()
}

fn widen(bits: &[u16]) -> Vec<f32> {
    bits.iter().map(|&b| bf16::from_bits(b).to_f32()).collect()
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn every_storage_path_trains_like_f32() {
    let rt = Adamant::new().expect("a GPU");
    let p0: Vec<f32> = (0..PARAMS).map(init).collect();
    let zeros = vec![0f32; PARAMS];
    let s = rt.stream();

    // f32: AdamW on f32 weights and gradients.
    let f32_losses = f32_adamw_run(&rt, STEPS, LR, WD, BOUND);

    // 26 B: bf16 weights and remainders (the master exact), bf16 gradients.
    let halves: Vec<(u16, u16)> = p0
        .iter()
        .map(|&x| adamant_device::storage::split_store(x, 0.0))
        .collect();
    let high: Vec<u16> = halves.iter().map(|h| h.0).collect();
    let low: Vec<u16> = halves.iter().map(|h| h.1).collect();
    let (ph, pl, mut g16) = (up(&high), up(&low), up(&vec![0u16; PARAMS]));
    let (m, v) = (up(&zeros), up(&zeros));
    let states = record::<adamw_bf16_remainder::Entry>(adamw_bf16_remainder::Hyper {
        eps: 1e-8,
        weight_decay: WD,
    });
    let records = Records::single::<adamw_bf16_remainder::Entry>().unwrap();
    let b = adamw_bf16_remainder::Buffers {
        p: region(&ph, Storage::Bf16),
        g: region(&g16, Storage::Bf16),
        m: region(&m, Storage::F32),
        v: region(&v, Storage::F32),
        p_remainder: region(&pl, Storage::Bf16Remainder),
    };
    let remainder_losses = train(
        &rt,
        STEPS,
        BOUND,
        &mut || widen(&download(&ph)),
        &mut |grad| {
            g16.copy_from(&bf16_bits(grad)[..]).unwrap();
            states.advance(&rt, s)?;
            // SAFETY: as above.
            unsafe {
                rt.launch::<adamw_bf16_remainder::Entry>(s)
                    .stepped(&adamw_bf16_remainder::StepScalars {}, &states, 0)
                    .raw_buffers(&b, &records)
            }
            .map(|_| ())
        },
    );

    // 28 B: an f32 master and its bf16 copy, bf16 gradients.
    let copy0: Vec<u16> = p0.iter().map(|&x| bf16::from_f32(x).to_bits()).collect();
    let (pc, pm) = (up(&copy0), up(&p0));
    let (m, v) = (up(&zeros), up(&zeros));
    let states = record::<adamw_bf16_master::Entry>(adamw_bf16_master::Hyper {
        eps: 1e-8,
        weight_decay: WD,
    });
    let records = Records::single::<adamw_bf16_master::Entry>().unwrap();
    let b = adamw_bf16_master::Buffers {
        p: region(&pc, Storage::Bf16),
        g: region(&g16, Storage::Bf16),
        m: region(&m, Storage::F32),
        v: region(&v, Storage::F32),
        p_master: region(&pm, Storage::F32),
    };
    let master_losses = train(
        &rt,
        STEPS,
        BOUND,
        &mut || widen(&download(&pc)),
        &mut |grad| {
            g16.copy_from(&bf16_bits(grad)[..]).unwrap();
            states.advance(&rt, s)?;
            // SAFETY: as above.
            unsafe {
                rt.launch::<adamw_bf16_master::Entry>(s)
                    .stepped(&adamw_bf16_master::StepScalars {}, &states, 0)
                    .raw_buffers(&b, &records)
            }
            .map(|_| ())
        },
    );

    // 14 B: bf16 weights and moments, all stochastic.
    let (pb, m16, v16) = (up(&copy0), up(&vec![0u16; PARAMS]), up(&vec![0u16; PARAMS]));
    let states = record::<adamw_bf16_sr_moments::Entry>(adamw_bf16_sr_moments::Hyper {
        eps: 1e-8,
        weight_decay: WD,
        rounding_seed: 2026,
    });
    let records = Records::single::<adamw_bf16_sr_moments::Entry>().unwrap();
    let b = adamw_bf16_sr_moments::Buffers {
        p: region(&pb, Storage::Bf16),
        g: region(&g16, Storage::Bf16),
        m: region(&m16, Storage::Bf16),
        v: region(&v16, Storage::Bf16),
    };
    let lean_losses = train(
        &rt,
        STEPS,
        BOUND,
        &mut || widen(&download(&pb)),
        &mut |grad| {
            g16.copy_from(&bf16_bits(grad)[..]).unwrap();
            states.advance(&rt, s)?;
            // SAFETY: as above.
            unsafe {
                rt.launch::<adamw_bf16_sr_moments::Entry>(s)
                    .stepped(&adamw_bf16_sr_moments::StepScalars {}, &states, 0)
                    .raw_buffers(&b, &records)
            }
            .map(|_| ())
        },
    );

    // 22 B, to nearest: bf16 weights whose small updates round away (reported, no goal).
    let pn = up(&copy0);
    let (m, v) = (up(&zeros), up(&zeros));
    let states = record::<adamw_bf16::Entry>(adamw_bf16::Hyper {
        eps: 1e-8,
        weight_decay: WD,
    });
    let records = Records::single::<adamw_bf16::Entry>().unwrap();
    let b = adamw_bf16::Buffers {
        p: region(&pn, Storage::Bf16),
        g: region(&g16, Storage::Bf16),
        m: region(&m, Storage::F32),
        v: region(&v, Storage::F32),
    };
    let nearest_losses = train(
        &rt,
        STEPS,
        BOUND,
        &mut || widen(&download(&pn)),
        &mut |grad| {
            g16.copy_from(&bf16_bits(grad)[..]).unwrap();
            states.advance(&rt, s)?;
            // SAFETY: as above.
            unsafe {
                rt.launch::<adamw_bf16::Entry>(s)
                    .stepped(&adamw_bf16::StepScalars {}, &states, 0)
                    .raw_buffers(&b, &records)
            }
            .map(|_| ())
        },
    );

    let reference = final_loss(&f32_losses);
    let rel = |l: &[f64]| (final_loss(l) - reference) / reference;
    println!(
        "mixed precision, {STEPS} steps, final loss (mean of the last 50): f32 {reference:.6}; \
         26 B remainder {:.6} ({:+.3} %); 28 B master {:.6} ({:+.3} %); 14 B stochastic {:.6} \
         ({:+.3} %); 22 B nearest {:.6} ({:+.3} %); first loss {:.6}",
        final_loss(&remainder_losses),
        100.0 * rel(&remainder_losses),
        final_loss(&master_losses),
        100.0 * rel(&master_losses),
        final_loss(&lean_losses),
        100.0 * rel(&lean_losses),
        final_loss(&nearest_losses),
        100.0 * rel(&nearest_losses),
        f32_losses[0],
    );
    assert!(reference < 0.5 * f32_losses[0], "the f32 run trained");
    assert!(
        rel(&remainder_losses).abs() <= 0.01,
        "26 B: {}",
        rel(&remainder_losses)
    );
    assert!(
        rel(&master_losses).abs() <= 0.01,
        "28 B: {}",
        rel(&master_losses)
    );
    assert!(
        rel(&lean_losses).abs() <= 0.05,
        "14 B: {}",
        rel(&lean_losses)
    );
}
