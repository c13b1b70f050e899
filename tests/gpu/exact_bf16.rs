//! bf16 weights kept exact by a companion buffer on the GPU (issue 26's 26 B and 28 B paths):
//! `adamw_bf16_remainder` (a 16-bit remainder) and `adamw_bf16_master` (an f32 master), each
//! against the f64 AdamW reference (`adamant::reference`) and the store's definition written in
//! the tests (`support::split`, `half`'s rounding to nearest even):
//! - the master (the remainder joined to its weight, or the f32 master) within f32 rounding of
//!   the reference, clamped; every weight and master within the bound (0.08, no bf16 value);
//! - the two buffers consistent element by element: the weight is the master's own rounding
//!   (ties away and held, for a remainder; to nearest even and held, for a master);
//! - the moments as the f32 kernels keep them; the records' largest stored weight and catches;
//! - a launch whose companion has the wrong storage or length is refused, nothing written.
//!
//! GPU only (`#[ignore]`).
use adamant::reference::{self, Elem, Hyper, KernelRef};
use adamant_device::storage::split_join;
use adamant_kernels::half_weights::{adamw_bf16_master, adamw_bf16_remainder};
use adamant_runtime::cust::memory::DeviceBuffer;
use adamant_runtime::{
    adam_scalars, AdamHyper, Adamant, ClampPolicy, DeviceRegion, Error, Records, Storage,
};
use half::bf16;

#[path = "../support/mod.rs"]
mod support;

use support::split::split_reference;
use support::{download_raw as download, pseudo};

const N: usize = 40_003; // not a multiple of 4: the scalar tail runs too
const BOUND: f32 = 0.08;
const LR: f32 = 3e-3;
const WD: f32 = 0.01;
const STEP: u64 = 5;

/// The starting state: f32 masters around the bound (so the clamp and the hold act), bf16
/// gradients, f32 moments.
struct Start {
    p: Vec<f32>,
    g: Vec<bf16>,
    m: Vec<f32>,
    v: Vec<f32>,
}

fn start() -> Start {
    Start {
        p: (0..N).map(|i| pseudo(i, 1) * 0.1).collect(),
        g: (0..N).map(|i| bf16::from_f32(pseudo(i, 2))).collect(),
        m: (0..N).map(|i| pseudo(i, 3) * 0.1).collect(),
        v: (0..N).map(|i| pseudo(i, 4).abs() * 0.01).collect(),
    }
}

fn up<T: adamant_runtime::cust::memory::DeviceCopy>(x: &[T]) -> DeviceBuffer<T> {
    DeviceBuffer::from_slice(x).unwrap()
}

fn region<T: adamant_runtime::cust::memory::DeviceCopy>(
    b: &DeviceBuffer<T>,
    storage: Storage,
) -> DeviceRegion {
    DeviceRegion::of(b.as_device_ptr().as_raw(), b.len(), storage).unwrap()
}

/// The reference for element `i`: the clamped new value (f64), and the moments with their
/// error scales.
fn expected(s: &Start, i: usize) -> (f64, [(f64, f64); 2]) {
    let hp = Hyper::new(LR, 0.9, 0.999, 1e-8, WD, STEP);
    let (e, scale) = reference::step_with_scale(
        KernelRef::Attn,
        Elem::new(s.p[i] as f64, s.m[i] as f64, s.v[i] as f64, 0.0),
        Elem::default(),
        s.g[i].to_f64(),
        &hp,
        BOUND as f64,
    );
    (e.p, [(e.m, scale.m), (e.v, scale.v)])
}

/// The moments within a few f32 roundings of the reference's terms, as the f32 kernels.
fn assert_moments(i: usize, m: f32, v: f32, want: [(f64, f64); 2]) {
    for (name, d, (r, s)) in [("m", m, want[0]), ("v", v, want[1])] {
        assert!(
            (d as f64 - r).abs() <= 4.0 * f32::EPSILON as f64 * s,
            "element {i}: {name} {d} vs {r} (scale {s})"
        );
    }
}

/// The master within f32 rounding of the clamped reference (or, held, within half a bf16 step
/// below it).
fn assert_master(i: usize, master: f32, reference: f64) {
    let tolerance = 8.0 * f32::EPSILON as f64 * reference.abs().max(1e-3);
    let held_room = reference.abs() * 2f64.powi(-8);
    let d = (master as f64 - reference).abs();
    assert!(
        d <= tolerance || (d <= held_room && master.abs() <= BOUND),
        "element {i}: master {master:e} against the reference {reference:e}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn the_remainder_path_keeps_an_exact_master_within_the_bound() {
    let rt = Adamant::new().expect("a GPU");
    let s = start();
    // Each master split into its bf16 weight and remainder, with no bound: exact.
    let halves: Vec<(u16, u16)> =
        s.p.iter()
            .map(|&x| adamant_device::storage::split_store(x, 0.0))
            .collect();
    let high: Vec<u16> = halves.iter().map(|h| h.0).collect();
    let low: Vec<u16> = halves.iter().map(|h| h.1).collect();
    let g: Vec<u16> = s.g.iter().map(|x| x.to_bits()).collect();
    let (dp, dr, dg, dm, dv) = (up(&high), up(&low), up(&g), up(&s.m), up(&s.v));
    let buffers = adamw_bf16_remainder::Buffers {
        p: region(&dp, Storage::Bf16),
        g: region(&dg, Storage::Bf16),
        m: region(&dm, Storage::F32),
        v: region(&dv, Storage::F32),
        p_remainder: region(&dr, Storage::Bf16Remainder),
    };
    let hyper = AdamHyper::new(LR, 0.9, 0.999, 1e-8, WD, STEP).unwrap();
    let scalars = adam_scalars!(adamw_bf16_remainder, hyper, weight_decay: WD).unwrap();
    let records = Records::single::<adamw_bf16_remainder::Entry>().unwrap();
    let launch = || {
        rt.launch::<adamw_bf16_remainder::Entry>(rt.stream())
            .plain(&scalars, ClampPolicy::Fixed { bound: BOUND })
    };
    // The remainder given as bf16 weights, and one element short: refused, nothing written.
    let wrong_storage = adamw_bf16_remainder::Buffers {
        p_remainder: region(&dr, Storage::Bf16),
        ..buffers
    };
    // SAFETY: every region is live device memory until the synchronisation below.
    let refused = unsafe { launch().raw_buffers(&wrong_storage, &records) };
    assert!(
        matches!(
            refused,
            Err(Error::StorageMismatch {
                buffer: "p_remainder",
                ..
            })
        ),
        "{refused:?}"
    );
    let short = adamw_bf16_remainder::Buffers {
        p_remainder: DeviceRegion::of(dr.as_device_ptr().as_raw(), N - 1, Storage::Bf16Remainder)
            .unwrap(),
        ..buffers
    };
    // SAFETY: as above.
    let refused = unsafe { launch().raw_buffers(&short, &records) };
    assert!(
        matches!(refused, Err(Error::LengthMismatch { .. })),
        "{refused:?}"
    );
    assert_eq!(download(&dp), high, "nothing written by a refused launch");

    // SAFETY: as above.
    unsafe { launch().raw_buffers(&buffers, &records) }.unwrap();
    rt.synchronize().unwrap();
    let (h1, l1, m1, v1) = (download(&dp), download(&dr), download(&dm), download(&dv));
    let (mut held, mut max_stored) = (0usize, 0f32);
    for i in 0..N {
        let weight = bf16::from_bits(h1[i]).to_f32();
        let master = split_join(h1[i], l1[i]);
        assert!(
            weight.abs() <= BOUND,
            "element {i}: weight {weight} past {BOUND}"
        );
        assert!(
            master.abs() <= BOUND,
            "element {i}: master {master} past {BOUND}"
        );
        // The two halves are one stored master: the weight is its rounding, ties away, held.
        let (want_weight, want_master) = split_reference(master, BOUND);
        assert_eq!(
            (weight.to_bits(), master.to_bits()),
            (want_weight.to_bits(), want_master.to_bits()),
            "element {i}: weight 0x{:04x} and remainder 0x{:04x} disagree",
            h1[i],
            l1[i]
        );
        let (p_ref, moments) = expected(&s, i);
        assert_master(i, master, p_ref);
        assert_moments(i, m1[i], v1[i], moments);
        held += (l1[i] == 0x7FFF && weight.abs() < master.abs()) as usize;
        max_stored = max_stored.max(weight.abs());
    }
    assert!(held > 100, "the hold acted on {held} elements");
    let record = records.read().tensors[0];
    assert_eq!(f32::from_bits(record.max_stored_bits), max_stored);
    assert!(record.clamped > 0, "the records count the clamp's catches");
    println!("adamw_bf16_remainder: {N} masters exact and within the bound, {held} held");
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn the_master_path_writes_the_bf16_copy_of_its_clamped_master() {
    let rt = Adamant::new().expect("a GPU");
    let s = start();
    let g: Vec<u16> = s.g.iter().map(|x| x.to_bits()).collect();
    // The bf16 copy is only written: it starts as garbage (NaN patterns).
    let garbage = vec![0x7FC1u16; N];
    let (dp, dmaster, dg, dm, dv) = (up(&garbage), up(&s.p), up(&g), up(&s.m), up(&s.v));
    let buffers = adamw_bf16_master::Buffers {
        p: region(&dp, Storage::Bf16),
        g: region(&dg, Storage::Bf16),
        m: region(&dm, Storage::F32),
        v: region(&dv, Storage::F32),
        p_master: region(&dmaster, Storage::F32),
    };
    let hyper = AdamHyper::new(LR, 0.9, 0.999, 1e-8, WD, STEP).unwrap();
    let scalars = adam_scalars!(adamw_bf16_master, hyper, weight_decay: WD).unwrap();
    let records = Records::single::<adamw_bf16_master::Entry>().unwrap();
    let launch = || {
        rt.launch::<adamw_bf16_master::Entry>(rt.stream())
            .plain(&scalars, ClampPolicy::Fixed { bound: BOUND })
    };
    // The master given as bf16: refused.
    let wrong = adamw_bf16_master::Buffers {
        p_master: region(&dmaster, Storage::Bf16),
        ..buffers
    };
    // SAFETY: every region is live device memory until the synchronisation below.
    let refused = unsafe { launch().raw_buffers(&wrong, &records) };
    assert!(
        matches!(
            refused,
            Err(Error::StorageMismatch {
                buffer: "p_master",
                ..
            })
        ),
        "{refused:?}"
    );
    // SAFETY: as above.
    unsafe { launch().raw_buffers(&buffers, &records) }.unwrap();
    rt.synchronize().unwrap();
    let (p1, master1, m1, v1) = (
        download(&dp),
        download(&dmaster),
        download(&dm),
        download(&dv),
    );
    let mut max_stored = 0f32;
    for i in 0..N {
        let copy = bf16::from_bits(p1[i]);
        let master = master1[i];
        assert!(
            copy.to_f32().abs() <= BOUND,
            "element {i}: copy {copy} past {BOUND}"
        );
        assert!(
            master.abs() <= BOUND,
            "element {i}: master {master} past {BOUND}"
        );
        // The copy is the master rounded to nearest even (`half`), held within the bound.
        let mut want = bf16::from_f32(master);
        if want.to_f32().abs() > BOUND {
            want = bf16::from_bits(want.to_bits() - 1);
        }
        assert_eq!(
            copy.to_bits(),
            want.to_bits(),
            "element {i}: copy of {master:e}"
        );
        let (p_ref, moments) = expected(&s, i);
        assert_master(i, master, p_ref);
        assert_moments(i, m1[i], v1[i], moments);
        max_stored = max_stored.max(copy.to_f32().abs());
    }
    let record = records.read().tensors[0];
    assert_eq!(f32::from_bits(record.max_stored_bits), max_stored);
    assert!(record.clamped > 0, "the records count the clamp's catches");
    println!("adamw_bf16_master: {N} masters within the bound, each copy its own rounding");
}
