//! 16-bit buffers the runtime owns (`ParamBuffer::from_bits`, `DeviceArray::zeroed_as`, issue
//! 26): a safe stepped launch of a bf16 kernel on them equals the same launch on raw regions
//! bit for bit, for 50 steps (`adamw_bf16_sr`: bf16 weights rounded stochastically, bf16
//! gradients; `adamw_bf16_remainder`: a bf16 weight and its remainder, a companion buffer); a
//! buffer of another storage than the kernel declares is refused before anything is launched;
//! the f32-only readers (a NaN-check slot, `download`) refuse a 16-bit buffer; a checkpoint
//! saves and restores one in its own type.
//!
//! GPU only (`#[ignore]`).
use adamant_device::abi::OptimizerEntry;
use adamant_kernels::half_weights::{adamw_bf16_remainder, adamw_bf16_sr};
use adamant_runtime::checkpoint::Checkpoint;
use adamant_runtime::cust::memory::DeviceBuffer;
use adamant_runtime::nan_check::SlotBindings;
use adamant_runtime::{
    Adamant, DeviceArray, DeviceRegion, Error, Owned, ParamBuffer, QAbsRef, Raw, ReadBuffer,
    Records, StepStates, Storage,
};
use half::bf16;

#[path = "../support/mod.rs"]
mod support;

use support::{download_raw as download, pseudo};

const N: usize = 10_001;
const STEPS: usize = 50;

fn states<E: adamant_device::abi::OptimizerEntry>(hyper: E::Hyper) -> StepStates
where
    E::Hyper: Send + Sync + 'static,
{
    support::fixed_bound_states::<E>(hyper, 1e-3, 0.75, 0)
}

/// `STEPS` stepped launches of kernel `E` on `safe` (the runtime's buffers) and on `raw` (the
/// same values in memory the test owns), each with records of its own made from `hyper`; the
/// safe launches' records.
fn launch_both<E: OptimizerEntry>(
    rt: &Adamant,
    hyper: E::Hyper,
    scalars: &E::StepScalars,
    safe: &E::Buffers<Owned<'_>>,
    raw: &E::Buffers<Raw>,
) -> StepStates
where
    E::Hyper: Send + Sync + 'static,
{
    let s = rt.stream();
    let (safe_states, raw_states) = (states::<E>(hyper), states::<E>(hyper));
    let safe_records = Records::single::<E>().unwrap();
    let raw_records = Records::single::<E>().unwrap();
    for _ in 0..STEPS {
        safe_states.advance(rt, s).unwrap();
        rt.launch::<E>(s)
            .stepped(scalars, &safe_states, 0)
            .buffers(safe, &safe_records)
            .unwrap();
        raw_states.advance(rt, s).unwrap();
        // SAFETY: the test's own buffers, alive and synchronised below.
        unsafe {
            rt.launch::<E>(s)
                .stepped(scalars, &raw_states, 0)
                .raw_buffers(raw, &raw_records)
        }
        .unwrap();
    }
    rt.synchronize().unwrap();
    safe_states
}

/// `n` elements of `storage` at `ptr`, memory the test owns.
fn at(ptr: u64, storage: Storage) -> DeviceRegion {
    DeviceRegion::of(ptr, N, storage).unwrap()
}

fn bits(f: impl Fn(usize) -> f32) -> Vec<u16> {
    (0..N).map(|i| bf16::from_f32(f(i)).to_bits()).collect()
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_safe_sixteen_bit_launch_equals_the_raw_one() {
    let rt = Adamant::new().expect("a GPU");
    let s = rt.stream();
    let (p0, g0) = (bits(|i| pseudo(i, 1)), bits(|i| pseudo(i, 2) * 0.1));
    let hyper = adamw_bf16_sr::Hyper {
        eps: 1e-8,
        weight_decay: 0.01,
        rounding_seed: 77,
    };

    // Safe: the runtime's buffers, each of its storage type.
    let mut p = ParamBuffer::from_bits(&p0, Storage::Bf16).unwrap();
    let g = DeviceArray::from_bits(&g0, Storage::Bf16).unwrap();
    let (mut m, mut v) = (
        DeviceArray::zeroed(N).unwrap(),
        DeviceArray::zeroed(N).unwrap(),
    );
    // Raw: the same values in memory the test owns.
    let (rp, rg) = (
        DeviceBuffer::from_slice(&p0).unwrap(),
        DeviceBuffer::from_slice(&g0).unwrap(),
    );
    let (rm, rv) = (
        DeviceBuffer::from_slice(&vec![0f32; N]).unwrap(),
        DeviceBuffer::from_slice(&vec![0f32; N]).unwrap(),
    );
    let raw = adamw_bf16_sr::Buffers {
        p: at(rp.as_device_ptr().as_raw(), Storage::Bf16),
        g: at(rg.as_device_ptr().as_raw(), Storage::Bf16),
        m: at(rm.as_device_ptr().as_raw(), Storage::F32),
        v: at(rv.as_device_ptr().as_raw(), Storage::F32),
    };
    let safe = adamw_bf16_sr::Buffers {
        p: &mut p,
        g: g.input(),
        m: &mut m,
        v: &mut v,
    };
    let safe_states = launch_both::<adamw_bf16_sr::Entry>(
        &rt,
        hyper,
        &adamw_bf16_sr::StepScalars {},
        &safe,
        &raw,
    );
    let safe_p = p.download_bits().unwrap();
    assert_eq!(safe_p, download(&rp), "weights");
    assert_ne!(safe_p, p0, "the weights moved");
    assert_eq!(m.download().unwrap(), download(&rm), "m");
    assert_eq!(v.download().unwrap(), download(&rv), "v");
    assert!(safe_p
        .iter()
        .all(|&b| bf16::from_bits(b).to_f32().abs() <= 0.75));
    println!("safe 16-bit launch: {STEPS} steps of adamw_bf16_sr equal the raw launch's");

    // A checkpoint keeps each buffer in its own type, and restores it.
    let mut ck = Checkpoint::new();
    ck.save_steps(&safe_states, s).unwrap();
    let shared = adamw_bf16_sr::Buffers {
        p: &p,
        g: g.input(),
        m: &m,
        v: &v,
    };
    ck.save_tensor::<adamw_bf16_sr::Entry>("w", &shared, Some((&safe_states, 0)), s)
        .unwrap();
    assert_eq!(ck.get("w").unwrap().kind.name(), "BF16");
    let mut q = ParamBuffer::zeroed_as(N, Storage::Bf16).unwrap();
    let (mut m2, mut v2) = (
        DeviceArray::zeroed(N).unwrap(),
        DeviceArray::zeroed(N).unwrap(),
    );
    let mut restore = ck.restore();
    let mut b = adamw_bf16_sr::Buffers {
        p: &mut q,
        g: g.input(),
        m: &mut m2,
        v: &mut v2,
    };
    restore.tensor::<adamw_bf16_sr::Entry>("w", &mut b).unwrap();
    restore.commit(s).unwrap();
    assert_eq!(q.download_bits().unwrap(), safe_p);
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_safe_companion_launch_equals_the_raw_one() {
    let rt = Adamant::new().expect("a GPU");
    let halves: Vec<(u16, u16)> = (0..N)
        .map(|i| adamant_device::storage::split_store(pseudo(i, 3) * 0.5, 0.0))
        .collect();
    let (high, low): (Vec<u16>, Vec<u16>) = halves.into_iter().unzip();
    let g0 = bits(|i| pseudo(i, 4) * 0.05);
    let hyper = adamw_bf16_remainder::Hyper {
        eps: 1e-8,
        weight_decay: 0.01,
    };
    let mut p = ParamBuffer::from_bits(&high, Storage::Bf16).unwrap();
    let mut rem = ParamBuffer::from_bits(&low, Storage::Bf16Remainder).unwrap();
    let g = DeviceArray::from_bits(&g0, Storage::Bf16).unwrap();
    let (mut m, mut v) = (
        DeviceArray::zeroed(N).unwrap(),
        DeviceArray::zeroed(N).unwrap(),
    );
    let (rp, rl, rg) = (
        DeviceBuffer::from_slice(&high).unwrap(),
        DeviceBuffer::from_slice(&low).unwrap(),
        DeviceBuffer::from_slice(&g0).unwrap(),
    );
    let (rm, rv) = (
        DeviceBuffer::from_slice(&vec![0f32; N]).unwrap(),
        DeviceBuffer::from_slice(&vec![0f32; N]).unwrap(),
    );
    let raw = adamw_bf16_remainder::Buffers {
        p: at(rp.as_device_ptr().as_raw(), Storage::Bf16),
        g: at(rg.as_device_ptr().as_raw(), Storage::Bf16),
        m: at(rm.as_device_ptr().as_raw(), Storage::F32),
        v: at(rv.as_device_ptr().as_raw(), Storage::F32),
        p_remainder: at(rl.as_device_ptr().as_raw(), Storage::Bf16Remainder),
    };
    let safe = adamw_bf16_remainder::Buffers {
        p: &mut p,
        g: g.input(),
        m: &mut m,
        v: &mut v,
        p_remainder: &mut rem,
    };
    launch_both::<adamw_bf16_remainder::Entry>(
        &rt,
        hyper,
        &adamw_bf16_remainder::StepScalars {},
        &safe,
        &raw,
    );
    assert_eq!(p.download_bits().unwrap(), download(&rp), "weights");
    assert_eq!(rem.download_bits().unwrap(), download(&rl), "remainders");
    assert_eq!(m.download().unwrap(), download(&rm), "m");
}

/// A buffer of another storage type than the kernel declares is refused naming the buffer, and
/// nothing is launched; the f32-only readers refuse a 16-bit buffer.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_buffer_of_another_storage_is_refused() {
    let rt = Adamant::new().expect("a GPU");
    let s = rt.stream();
    let p0 = bits(|i| pseudo(i, 5));
    let hyper = adamw_bf16_sr::Hyper {
        eps: 1e-8,
        weight_decay: 0.01,
        rounding_seed: 1,
    };
    let states = states::<adamw_bf16_sr::Entry>(hyper);
    let records = Records::single::<adamw_bf16_sr::Entry>().unwrap();
    states.advance(&rt, s).unwrap();
    // f32 weights for a bf16 kernel.
    let mut p32 = ParamBuffer::zeroed(N).unwrap();
    let g = DeviceArray::from_bits(&p0, Storage::Bf16).unwrap();
    let (mut m, mut v) = (
        DeviceArray::zeroed(N).unwrap(),
        DeviceArray::zeroed(N).unwrap(),
    );
    let b = adamw_bf16_sr::Buffers {
        p: &mut p32,
        g: g.input(),
        m: &mut m,
        v: &mut v,
    };
    let err = rt
        .launch::<adamw_bf16_sr::Entry>(s)
        .stepped(&adamw_bf16_sr::StepScalars {}, &states, 0)
        .buffers(&b, &records)
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::StorageMismatch {
                buffer: "p",
                declared: Storage::Bf16,
                given: Storage::F32,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        p32.download().unwrap(),
        vec![0.0; N],
        "nothing was launched"
    );
    // bf16 moments where the kernel keeps f32 ones.
    let mut p16 = ParamBuffer::from_bits(&p0, Storage::Bf16).unwrap();
    let mut m16 = DeviceArray::zeroed_as(N, Storage::Bf16).unwrap();
    let b = adamw_bf16_sr::Buffers {
        p: &mut p16,
        g: g.input(),
        m: &mut m16,
        v: &mut v,
    };
    let err = rt
        .launch::<adamw_bf16_sr::Entry>(s)
        .stepped(&adamw_bf16_sr::StepScalars {}, &states, 0)
        .buffers(&b, &records)
        .unwrap_err();
    assert!(
        matches!(err, Error::StorageMismatch { buffer: "m", .. }),
        "{err}"
    );
    assert_eq!(p16.download_bits().unwrap(), p0, "nothing was launched");
    // The f32-only readers.
    assert!(matches!(p16.download(), Err(Error::BufferStorage { .. })));
    assert!(matches!(
        m.upload_bits(&p0),
        Err(Error::BufferStorage { .. })
    ));
    // The NaN check widens a bf16 buffer (it watches 16-bit weights too), but a remainder is
    // no number by itself: refused, naming the slot, and the slot keeps its binding.
    let mut bindings = SlotBindings::new(adamant::rl::SEED_TABLE);
    let slot = adamant::rl::SEED_TABLE.id(0).unwrap();
    bindings.bind(slot, &g).expect("a bf16 buffer is watchable");
    let remainder = DeviceArray::from_bits(&p0, Storage::Bf16Remainder).unwrap();
    let err = bindings.bind(slot, &remainder).unwrap_err();
    assert!(
        matches!(
            err,
            Error::BufferStorage {
                storage: Storage::Bf16Remainder,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        bindings.region(slot).unwrap().unwrap().storage,
        Storage::Bf16,
        "the refused binding replaced the slot's"
    );
    assert!(matches!(
        StepStates::new(
            &[],
            QAbsRef::Slot {
                buffer: &g,
                index: 0
            }
        ),
        Err(Error::BufferStorage { .. })
    ));
    assert_eq!(g.len(), N);
    assert_eq!(ReadBuffer::storage(&g), Storage::Bf16);
}
