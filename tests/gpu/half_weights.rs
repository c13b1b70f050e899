//! `adamw_bf16` and `adamw_f16` (16-bit weights and gradients, f32 moments) on the GPU against
//! the f64 reference
//! (`adamant::reference`, AdamW), rounded to bf16 by the `half` crate and held within the bound
//! here, independently of the device code: every stored weight within one bf16 step of the
//! reference and almost all equal, every stored weight within the bound (also a bound that is no
//! bf16 value), the moments as the f32 kernels keep them, the records reading the stored weights,
//! and a launch with f32 buffers for the bf16 ones refused; in f16, no weight rounded to
//! infinity while the clamp is on. GPU only (`#[ignore]`).
use adamant::reference::{self, Elem, Hyper, KernelRef};
use adamant_kernels::half_weights::adamw_bf16;
use adamant_runtime::cust::memory::DeviceBuffer;
use adamant_runtime::{
    adam_scalars, AdamHyper, Adamant, ClampPolicy, DeviceRegion, Error, Records, Storage,
};
use half::bf16;

#[path = "../support/mod.rs"]
mod support;

use support::{download_raw as download, pseudo};

const N: usize = 40_003; // not a multiple of 4: the scalar tail runs too

/// The reference's bf16 store: round to nearest even (the `half` crate), then, past the bound,
/// the bf16 value next to it toward zero (written from the contract, not the device code).
fn reference_store(x: f64, bound: f32) -> bf16 {
    let rounded = bf16::from_f64(x);
    if bound > 0.0 && rounded.to_f32().abs() > bound {
        bf16::from_bits(rounded.to_bits() - 1)
    } else {
        rounded
    }
}

/// The weights and gradients (16-bit patterns) and the f32 moments, on the device.
fn upload(
    p: &[u16],
    g: &[u16],
    m: &[f32],
    v: &[f32],
) -> (
    DeviceBuffer<u16>,
    DeviceBuffer<u16>,
    DeviceBuffer<f32>,
    DeviceBuffer<f32>,
) {
    let up16 = |x: &[u16]| DeviceBuffer::from_slice(x).unwrap();
    let up32 = |x: &[f32]| DeviceBuffer::from_slice(x).unwrap();
    (up16(p), up16(g), up32(m), up32(v))
}

/// The four buffers as regions: weights and gradients of the storage type `half`, f32 moments.
fn regions(
    p: &DeviceBuffer<u16>,
    g: &DeviceBuffer<u16>,
    m: &DeviceBuffer<f32>,
    v: &DeviceBuffer<f32>,
    half: Storage,
) -> [DeviceRegion; 4] {
    let region = |ptr: u64, storage| DeviceRegion::of(ptr, N, storage).unwrap();
    [
        region(p.as_device_ptr().as_raw(), half),
        region(g.as_device_ptr().as_raw(), half),
        region(m.as_device_ptr().as_raw(), Storage::F32),
        region(v.as_device_ptr().as_raw(), Storage::F32),
    ]
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn bf16_weights_match_the_f64_reference_and_never_pass_the_bound() {
    let rt = Adamant::new().expect("a GPU");
    // 0.08 is no bf16 value (its nearest, 0.080078125, is above it); weights start around it
    // so the clamp and the hold both act.
    let bound = 0.08f32;
    let p0: Vec<bf16> = (0..N).map(|i| bf16::from_f32(pseudo(i, 1) * 0.1)).collect();
    let g0: Vec<bf16> = (0..N).map(|i| bf16::from_f32(pseudo(i, 2))).collect();
    let m0: Vec<f32> = (0..N).map(|i| pseudo(i, 3) * 0.1).collect();
    let v0: Vec<f32> = (0..N).map(|i| pseudo(i, 4).abs() * 0.01).collect();
    let bits = |v: &[bf16]| v.iter().map(|x| x.to_bits()).collect::<Vec<u16>>();
    let (p, g, m, v) = upload(&bits(&p0), &bits(&g0), &m0, &v0);
    let [rp, rg, rm, rv] = regions(&p, &g, &m, &v, Storage::Bf16);
    let buffers = adamw_bf16::Buffers {
        p: rp,
        g: rg,
        m: rm,
        v: rv,
    };
    let (lr, wd, step) = (3e-3f32, 0.01f32, 5u64);
    let hyper = AdamHyper::new(lr, 0.9, 0.999, 1e-8, wd, step).unwrap();
    let scalars = adam_scalars!(adamw_bf16, hyper, weight_decay: wd).unwrap();
    let records = Records::single::<adamw_bf16::Entry>().unwrap();
    let launch = || {
        rt.launch::<adamw_bf16::Entry>(rt.stream())
            .plain(&scalars, ClampPolicy::Fixed { bound })
    };

    // An f32 region of the right length for the bf16 weights: refused, nothing written.
    let scratch = DeviceBuffer::from_slice(&vec![0f32; N]).unwrap();
    let wrong = adamw_bf16::Buffers {
        p: DeviceRegion::new(scratch.as_device_ptr().as_raw(), N).unwrap(),
        ..buffers
    };
    // SAFETY: every region is live device memory until the synchronisation below.
    let refused = unsafe { launch().raw_buffers(&wrong, &records) };
    assert!(
        matches!(
            refused,
            Err(Error::StorageMismatch {
                kernel: "adamw_bf16",
                buffer: "p",
                ..
            })
        ),
        "{refused:?}"
    );

    // SAFETY: as above.
    unsafe { launch().raw_buffers(&buffers, &records) }.unwrap();
    rt.synchronize().unwrap();
    let (p1, m1, v1) = (download(&p), download(&m), download(&v));
    assert_eq!(download(&g), bits(&g0), "the gradient is only read");

    let hp = Hyper::new(lr, 0.9, 0.999, 1e-8, wd, step);
    let (mut exact, mut at_bound, mut max_stored) = (0usize, 0usize, 0f32);
    // Raw values clearly past the bound, and clearly within it (the device's f32 raw value and
    // the f64 reference may fall on either side of the bound within a few ulps of it).
    let (mut surely_caught, mut maybe_caught) = (0usize, 0usize);
    for i in 0..N {
        let (e, scale) = reference::step_with_scale(
            KernelRef::Attn,
            Elem::new(p0[i].to_f64(), m0[i] as f64, v0[i] as f64, 0.0),
            Elem::default(),
            g0[i].to_f64(),
            &hp,
            bound as f64,
        );
        let (p_ref, m_ref, v_ref) = (e.p, e.m, e.v);
        let want = reference_store(p_ref, bound);
        let got = bf16::from_bits(p1[i]);
        assert!(
            got.to_f32().abs() <= bound,
            "element {i}: stored {got} is past the bound {bound}"
        );
        let steps = (got.to_bits() as i32 - want.to_bits() as i32).abs();
        assert!(
            steps <= 1,
            "element {i}: stored {got} (0x{:04x}), reference {want} (0x{:04x}) from {p_ref}",
            got.to_bits(),
            want.to_bits()
        );
        exact += (steps == 0) as usize;
        let raw = reference::step(
            KernelRef::Attn,
            Elem::new(p0[i].to_f64(), m0[i] as f64, v0[i] as f64, 0.0),
            g0[i].to_f64(),
            &hp,
            0.0,
        )
        .p
        .abs();
        surely_caught += (raw > bound as f64 * (1.0 + 1e-5)) as usize;
        maybe_caught += (raw > bound as f64 * (1.0 - 1e-5)) as usize;
        if p_ref.abs() >= bound as f64 {
            at_bound += 1;
            // The largest bf16 within 0.08, not 0.08's nearest (0.080078125).
            assert_eq!(got.to_f32().abs(), 0.079589844, "element {i}");
        }
        max_stored = max_stored.max(got.to_f32().abs());
        // The moments are f32, as in the f32 kernels: within a few f32 roundings of the terms
        // they are summed from (the reference's error scale; `m`'s two terms may cancel).
        for (name, d, r, s) in [("m", m1[i], m_ref, scale.m), ("v", v1[i], v_ref, scale.v)] {
            assert!(
                (d as f64 - r).abs() <= 4.0 * f32::EPSILON as f64 * s,
                "element {i}: {name} {d} vs {r} (scale {s})"
            );
        }
    }
    assert!(at_bound > 100, "the clamp acted on {at_bound} elements");
    assert!(
        exact * 1000 >= N * 995,
        "{exact} of {N} stored weights equal the reference's bf16"
    );
    // The records read the stored bf16 weights (the largest is the largest bf16 within the
    // bound, not the bound), and count the clamp's catches, not the roundings.
    let record = records.read().tensors[0];
    assert_eq!(f32::from_bits(record.max_stored_bits), max_stored);
    let caught = record.clamped as usize;
    assert!(
        (surely_caught..=maybe_caught).contains(&caught),
        "the records count {caught} clamp catches, the reference {surely_caught}..={maybe_caught}"
    );
    println!(
        "max_error adamw_bf16: {exact} of {N} weights equal the f64 reference rounded to bf16, \
         the rest one bf16 step away; {at_bound} held at the bound"
    );
}

/// The f16 reference store, as [`reference_store`] for bf16.
fn reference_store_f16(x: f64, bound: f32) -> half::f16 {
    let rounded = half::f16::from_f64(x);
    if bound > 0.0 && rounded.to_f32().abs() > bound {
        half::f16::from_bits(rounded.to_bits() - 1)
    } else {
        rounded
    }
}

/// `adamw_f16` with weights at f16's edge: a third start at 65,504 (its largest finite value)
/// with a gradient that pushes them up by about 38, past the rounding range (lr 200): rounded
/// to nearest they would become infinity, and within a bound of 1e6 they are stored as 65,504;
/// the rest are ordinary weights, within one f16 step of the f64 reference rounded by the
/// `half` crate and almost all equal to it. No stored weight is infinite.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn f16_weights_never_overflow_to_infinity_while_the_clamp_is_on() {
    use adamant_kernels::half_weights::adamw_f16;
    use half::f16;
    let rt = Adamant::new().expect("a GPU");
    let bound = 1e6f32;
    let edge = |i: usize| i.is_multiple_of(3);
    let p0: Vec<f16> = (0..N)
        .map(|i| {
            f16::from_f32(if edge(i) {
                65504.0
            } else {
                pseudo(i, 1) * 100.0
            })
        })
        .collect();
    let g0: Vec<f16> = (0..N)
        .map(|i| f16::from_f32(if edge(i) { -1.0 } else { pseudo(i, 2) }))
        .collect();
    let m0: Vec<f32> = (0..N)
        .map(|i| if edge(i) { -0.5 } else { pseudo(i, 3) * 0.1 })
        .collect();
    let v0: Vec<f32> = (0..N)
        .map(|i| {
            if edge(i) {
                0.25
            } else {
                pseudo(i, 4).abs() * 0.01
            }
        })
        .collect();
    let bits = |v: &[f16]| v.iter().map(|x| x.to_bits()).collect::<Vec<u16>>();
    let (p, g, m, v) = upload(&bits(&p0), &bits(&g0), &m0, &v0);
    let [rp, rg, rm, rv] = regions(&p, &g, &m, &v, Storage::F16);
    let buffers = adamw_f16::Buffers {
        p: rp,
        g: rg,
        m: rm,
        v: rv,
    };
    let (lr, wd, step) = (200.0f32, 0.0f32, 5u64);
    let hyper = AdamHyper::new(lr, 0.9, 0.999, 1e-8, wd, step).unwrap();
    let scalars = adam_scalars!(adamw_f16, hyper, weight_decay: wd).unwrap();
    let records = Records::single::<adamw_f16::Entry>().unwrap();
    // SAFETY: every region is live device memory until the synchronisation below.
    unsafe {
        rt.launch::<adamw_f16::Entry>(rt.stream())
            .plain(&scalars, ClampPolicy::Fixed { bound })
            .raw_buffers(&buffers, &records)
    }
    .unwrap();
    rt.synchronize().unwrap();
    let p1 = download(&p);
    let hp = Hyper::new(lr, 0.9, 0.999, 1e-8, wd, step);
    let (mut exact, mut held, mut max_stored) = (0usize, 0usize, 0f32);
    for i in 0..N {
        let e = reference::step(
            KernelRef::Attn,
            Elem::new(p0[i].to_f64(), m0[i] as f64, v0[i] as f64, 0.0),
            g0[i].to_f64(),
            &hp,
            bound as f64,
        );
        let want = reference_store_f16(e.p, bound);
        let got = f16::from_bits(p1[i]);
        assert!(
            got.is_finite(),
            "element {i}: stored {got} (reference {})",
            e.p
        );
        let steps = (got.to_bits() as i32 - want.to_bits() as i32).abs();
        assert!(
            steps <= 1,
            "element {i}: stored {got}, reference {want} from {}",
            e.p
        );
        exact += (steps == 0) as usize;
        if edge(i) {
            assert!(e.p > 65520.0, "element {i}: the update reaches {}", e.p);
            assert_eq!(got.to_f32(), 65504.0, "element {i}");
            held += 1;
        }
        max_stored = max_stored.max(got.to_f32().abs());
    }
    assert!(
        exact * 1000 >= N * 995,
        "{exact} of {N} equal the reference's f16"
    );
    let record = records.read().tensors[0];
    assert_eq!(f32::from_bits(record.max_stored_bits), max_stored);
    assert_eq!(max_stored, 65504.0);
    assert_eq!(
        record.clamped, 0,
        "1e6 catches nothing: the hold is no clamp catch"
    );
    println!(
        "max_error adamw_f16: {exact} of {N} weights equal the f64 reference rounded to f16; \
         {held} that would round to infinity stored as 65504"
    );
}
