//! `adamw_bf16_sr` (bf16 weights rounded stochastically, issue 26) on the GPU, against
//! references written apart from the device code:
//! - one launch: every stored weight is the f64 AdamW reference (`adamant::reference`), clamped,
//!   taken to f32 and rounded stochastically with the counter hash of `support::stochastic` and
//!   the rounding's definition (up when the 16 dropped bits plus the word's low 16 reach 2^16), then
//!   held within the bound; all within one bf16 step of it, at least 99 % equal; never past the
//!   bound, also a bound that is no bf16 value; the records read the stored weights;
//! - 200 captured steps (advance + stepped launch, replayed) equal 200 eager steps bit for bit,
//!   weights and moments: the step number and the seed come from the record, so each replay
//!   rounds with its own words;
//! - `adamw_bf16_sr_moments` (the moments in bf16 too, each buffer with its own words): the
//!   weight and both moments are the reference's rounded with their words, and its replays equal
//!   its eager steps;
//! - updates smaller than half a bf16 step: rounded to nearest (`adamw_bf16`) no weight ever
//!   moves; rounded stochastically the mean movement is the f64 run's within 2 %, and a run with
//!   another seed rounds differently.
//!
//! GPU only (`#[ignore]`).
use adamant::reference::{self, Elem, Hyper, KernelRef};
use adamant_kernels::half_weights::{adamw_bf16, adamw_bf16_sr, adamw_bf16_sr_moments};
use adamant_runtime::cust::memory::DeviceBuffer;
use adamant_runtime::cust::stream::Stream;
use adamant_runtime::{
    adam_scalars, AdamHyper, Adamant, ClampPolicy, DeviceRegion, QAbsRef, Records, StepBound,
    StepSpec, StepStates, Storage,
};
use half::bf16;

#[path = "../support/mod.rs"]
mod support;

use support::stochastic::{reference_store, reference_word};
use support::{download_raw as download, pseudo};

const N: usize = 40_003; // not a multiple of 4: the scalar tail runs too

/// `full` normally, `sanitized` under compute-sanitizer (`ADAMANT_SANITIZER_RUN`).
fn sanitized(full: usize, sanitized: usize) -> usize {
    if std::env::var_os("ADAMANT_SANITIZER_RUN").is_some() {
        sanitized
    } else {
        full
    }
}

/// bf16 weights and gradients and f32 moments, on the device, with their regions.
struct Buffers {
    p: DeviceBuffer<u16>,
    g: DeviceBuffer<u16>,
    m: DeviceBuffer<f32>,
    v: DeviceBuffer<f32>,
}

impl Buffers {
    fn new(p: &[bf16], g: &[bf16], m: &[f32], v: &[f32]) -> Buffers {
        let bits = |x: &[bf16]| x.iter().map(|b| b.to_bits()).collect::<Vec<u16>>();
        Buffers {
            p: DeviceBuffer::from_slice(&bits(p)).unwrap(),
            g: DeviceBuffer::from_slice(&bits(g)).unwrap(),
            m: DeviceBuffer::from_slice(m).unwrap(),
            v: DeviceBuffer::from_slice(v).unwrap(),
        }
    }

    /// The regions, in the order of the kernels' `Buffers` (p, g, m, v).
    fn regions(&self) -> [DeviceRegion; 4] {
        let n = self.p.len();
        [
            DeviceRegion::of(self.p.as_device_ptr().as_raw(), n, Storage::Bf16).unwrap(),
            DeviceRegion::of(self.g.as_device_ptr().as_raw(), n, Storage::Bf16).unwrap(),
            DeviceRegion::of(self.m.as_device_ptr().as_raw(), n, Storage::F32).unwrap(),
            DeviceRegion::of(self.v.as_device_ptr().as_raw(), n, Storage::F32).unwrap(),
        ]
    }

    fn sr(&self) -> adamw_bf16_sr::Buffers<adamant_runtime::Raw> {
        let [p, g, m, v] = self.regions();
        adamw_bf16_sr::Buffers { p, g, m, v }
    }

    fn weights(&self) -> Vec<u16> {
        download(&self.p)
    }

    /// Every buffer's bits.
    fn bits(&self) -> Vec<Vec<u32>> {
        let wide = |x: Vec<u16>| x.into_iter().map(u32::from).collect::<Vec<u32>>();
        let f = |x: Vec<f32>| x.into_iter().map(f32::to_bits).collect::<Vec<u32>>();
        vec![
            wide(download(&self.p)),
            f(download(&self.m)),
            f(download(&self.v)),
        ]
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn each_weight_is_the_reference_rounded_with_its_counter_word() {
    let rt = Adamant::new().expect("a GPU");
    let bound = 0.08f32; // no bf16 value: its upper neighbour is past it
    let p0: Vec<bf16> = (0..N).map(|i| bf16::from_f32(pseudo(i, 1) * 0.1)).collect();
    let g0: Vec<bf16> = (0..N).map(|i| bf16::from_f32(pseudo(i, 2))).collect();
    let m0: Vec<f32> = (0..N).map(|i| pseudo(i, 3) * 0.1).collect();
    let v0: Vec<f32> = (0..N).map(|i| pseudo(i, 4).abs() * 0.01).collect();
    let buffers = Buffers::new(&p0, &g0, &m0, &v0);
    let (lr, wd, step, seed) = (3e-3f32, 0.01f32, 5u32, 0xC0FFEEu32);
    let hyper = AdamHyper::new(lr, 0.9, 0.999, 1e-8, wd, step as u64).unwrap();
    let scalars =
        adam_scalars!(adamw_bf16_sr, hyper, weight_decay: wd, step: step, rounding_seed: seed)
            .unwrap();
    let records = Records::single::<adamw_bf16_sr::Entry>().unwrap();
    // SAFETY: every region is live device memory until the synchronisation below.
    unsafe {
        rt.launch::<adamw_bf16_sr::Entry>(rt.stream())
            .plain(&scalars, ClampPolicy::Fixed { bound })
            .raw_buffers(&buffers.sr(), &records)
    }
    .unwrap();
    rt.synchronize().unwrap();
    let p1 = buffers.weights();

    let hp = Hyper::new(lr, 0.9, 0.999, 1e-8, wd, step as u64);
    let (mut exact, mut at_bound, mut up, mut max_stored) = (0usize, 0usize, 0usize, 0f32);
    for i in 0..N {
        let e = reference::step(
            KernelRef::Attn,
            Elem::new(p0[i].to_f64(), m0[i] as f64, v0[i] as f64, 0.0),
            g0[i].to_f64(),
            &hp,
            bound as f64,
        );
        let clamped = e.p as f32;
        let want = reference_store(clamped, reference_word(seed, step, 0, 0, i as u64), bound);
        let got = bf16::from_bits(p1[i]);
        assert!(
            got.to_f32().abs() <= bound,
            "element {i}: stored {got} is past the bound {bound}"
        );
        let steps = (p1[i] as i32 - want as i32).abs();
        assert!(
            steps <= 1,
            "element {i}: stored 0x{:04x}, reference 0x{want:04x} from {}",
            p1[i],
            e.p
        );
        exact += (steps == 0) as usize;
        up += (got.to_f32().abs() > clamped.abs()) as usize;
        if e.p.abs() >= bound as f64 {
            at_bound += 1;
            // Up would pass 0.08: the hold keeps the largest bf16 within it.
            assert_eq!(got.to_f32().abs(), 0.079589844, "element {i}");
        }
        max_stored = max_stored.max(got.to_f32().abs());
    }
    assert!(at_bound > 100, "the clamp acted on {at_bound} elements");
    assert!(
        exact * 100 >= N * 99,
        "{exact} of {N} stored weights equal the reference's stochastic rounding"
    );
    // Rounded up in magnitude about as often as down (the dropped fractions are spread evenly).
    assert!(
        (N * 35 / 100..N * 65 / 100).contains(&up),
        "{up} of {N} weights rounded up"
    );
    let record = rt_record_max(&records);
    assert_eq!(record, max_stored, "the records' largest stored |p|");
    println!(
        "max_error adamw_bf16_sr: {exact} of {N} weights equal the reference's stochastic \
         rounding, the rest one bf16 step away; {up} rounded up; {at_bound} held at the bound"
    );
}

fn rt_record_max(records: &Records) -> f32 {
    f32::from_bits(records.read().tensors[0].max_stored_bits)
}

/// A record for `kernel` with lr `lr`, a fixed bound and `hyper`.
fn states<E: adamant_device::abi::OptimizerEntry>(
    lr: f32,
    bound: f32,
    hyper: E::Hyper,
) -> StepStates
where
    E::Hyper: Send + Sync + 'static,
{
    let adam = AdamHyper::new(lr, 0.9, 0.999, 1e-8, 0.0, 1).unwrap();
    let spec = StepSpec::adam(&adam, StepBound::Policy(ClampPolicy::Fixed { bound }))
        .unwrap()
        .with_kernel::<E>(hyper)
        .unwrap();
    StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 }).unwrap()
}

fn sr_hyper(seed: u32) -> adamw_bf16_sr::Hyper {
    adamw_bf16_sr::Hyper {
        eps: 1e-8,
        weight_decay: 0.0,
        rounding_seed: seed,
    }
}

/// One advance and one stepped launch of `adamw_bf16_sr` on `b`.
fn sr_step(
    rt: &Adamant,
    s: &Stream,
    b: &Buffers,
    states: &StepStates,
    records: &Records,
) -> adamant_runtime::Result<()> {
    states.advance(rt, s)?;
    // SAFETY: the buffers outlive every launch and replay (the tests synchronise before they
    // drop them), and nothing else touches them.
    unsafe {
        rt.launch::<adamw_bf16_sr::Entry>(s)
            .stepped(&adamw_bf16_sr::StepScalars {}, states, 0)
            .raw_buffers(&b.sr(), records)
    }
    .map(|_| ())
}

/// Weights near 1 (a bf16 step of 2^-7) and a constant gradient of either sign: Adam moves each
/// weight by `lr` per step, about a hundredth of a bf16 step at lr 1e-4.
fn small_update_run() -> (Vec<bf16>, Vec<bf16>, Vec<f32>, Vec<f32>) {
    let p0: Vec<bf16> = (0..N)
        .map(|i| bf16::from_f32(1.0 + (i % 64) as f32 / 128.0))
        .collect();
    let g0: Vec<bf16> = (0..N)
        .map(|i| bf16::from_f32(if i % 2 == 0 { 0.1 } else { -0.1 }))
        .collect();
    (p0, g0, vec![0.0; N], vec![0.0; N])
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn replays_equal_eager_steps_and_small_updates_survive() {
    let rt = Adamant::new().expect("a GPU");
    let steps = sanitized(200, 12);
    let (lr, bound) = (1e-4f32, 100.0f32);
    let (p0, g0, m0, v0) = small_update_run();
    let [eager, replayed, other_seed, nearest] = [(); 4].map(|_| Buffers::new(&p0, &g0, &m0, &v0));
    let (se, sr_states, so) = (
        states::<adamw_bf16_sr::Entry>(lr, bound, sr_hyper(2026)),
        states::<adamw_bf16_sr::Entry>(lr, bound, sr_hyper(2026)),
        states::<adamw_bf16_sr::Entry>(lr, bound, sr_hyper(7)),
    );
    let sn = states::<adamw_bf16::Entry>(
        lr,
        bound,
        adamw_bf16::Hyper {
            eps: 1e-8,
            weight_decay: 0.0,
        },
    );
    let records = || Records::single::<adamw_bf16_sr::Entry>().unwrap();
    let (re, rr, ro) = (records(), records(), records());
    let rn = Records::single::<adamw_bf16::Entry>().unwrap();
    for _ in 0..steps {
        sr_step(&rt, rt.stream(), &eager, &se, &re).unwrap();
        sr_step(&rt, rt.stream(), &other_seed, &so, &ro).unwrap();
        sn.advance(&rt, rt.stream()).unwrap();
        let [p, g, m, v] = nearest.regions();
        // SAFETY: as in `sr_step`.
        unsafe {
            rt.launch::<adamw_bf16::Entry>(rt.stream())
                .stepped(&adamw_bf16::StepScalars {}, &sn, 0)
                .raw_buffers(&adamw_bf16::Buffers { p, g, m, v }, &rn)
        }
        .unwrap();
    }
    let graph = rt
        .capture(vec![Box::new(|s: &Stream| {
            sr_step(&rt, s, &replayed, &sr_states, &rr)
        })])
        .unwrap();
    for _ in 0..steps {
        graph.launch(rt.stream()).unwrap();
    }
    rt.synchronize().unwrap();
    drop(graph);

    // Replayed = eager, bit for bit, in every buffer.
    let (e, r) = (eager.bits(), replayed.bits());
    for (buffer, (a, b)) in e.iter().zip(&r).enumerate() {
        let differing = a.iter().zip(b).filter(|(x, y)| x != y).count();
        assert_eq!(
            differing, 0,
            "buffer {buffer} differs between eager and replayed steps in {differing} elements"
        );
    }
    // Rounded to nearest, an update of a hundredth of a step is lost every step.
    let moved_nearest = nearest
        .weights()
        .iter()
        .zip(&p0)
        .filter(|(a, b)| **a != b.to_bits())
        .count();
    assert_eq!(moved_nearest, 0, "weights rounded to nearest moved");
    // Stochastically, each weight moves by `steps · lr` in expectation, against its gradient.
    let w = eager.weights();
    let mean_moved: f64 = (0..N)
        .map(|i| {
            let toward = if i % 2 == 0 { -1.0 } else { 1.0 };
            toward * (bf16::from_bits(w[i]).to_f64() - p0[i].to_f64())
        })
        .sum::<f64>()
        / N as f64;
    let expected = steps as f64 * lr as f64;
    assert!(
        (mean_moved - expected).abs() <= 0.02 * expected,
        "mean movement {mean_moved:e}, the f64 run's {expected:e}"
    );
    // Another seed rounds other elements up: most weights end elsewhere.
    let other = other_seed.weights();
    let differ = w.iter().zip(&other).filter(|(a, b)| a != b).count();
    assert!(
        differ * 2 > N,
        "only {differ} of {N} weights depend on the seed"
    );
    println!(
        "stochastic rounding: {steps} replays equal {steps} eager steps bit for bit; mean \
         movement {mean_moved:e} (f64 {expected:e}); nearest moved none; another seed changes \
         {differ} of {N} weights"
    );
}

/// Weights, gradients and both moments in bf16 (the 14 B path), on the device.
struct Lean {
    b: [DeviceBuffer<u16>; 4],
}

impl Lean {
    fn new(values: [&[bf16]; 4]) -> Lean {
        Lean {
            b: values.map(|v| {
                let bits: Vec<u16> = v.iter().map(|x| x.to_bits()).collect();
                DeviceBuffer::from_slice(&bits).unwrap()
            }),
        }
    }

    fn buffers(&self) -> adamw_bf16_sr_moments::Buffers<adamant_runtime::Raw> {
        let [p, g, m, v] = [0, 1, 2, 3].map(|i| {
            let b = &self.b[i];
            DeviceRegion::of(b.as_device_ptr().as_raw(), b.len(), Storage::Bf16).unwrap()
        });
        adamw_bf16_sr_moments::Buffers { p, g, m, v }
    }

    /// p, m and v, as downloaded.
    fn bits(&self) -> [Vec<u16>; 3] {
        [0, 2, 3].map(|i| download(&self.b[i]))
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn bf16_moments_are_the_reference_rounded_with_their_own_words() {
    let rt = Adamant::new().expect("a GPU");
    let bound = 0.08f32;
    let b = |k: u32, scale: f32, abs: bool| -> Vec<bf16> {
        (0..N)
            .map(|i| {
                let x = pseudo(i, k) * scale;
                bf16::from_f32(if abs { x.abs() } else { x })
            })
            .collect()
    };
    let (p0, g0, m0, v0) = (
        b(1, 0.1, false),
        b(2, 1.0, false),
        b(3, 0.1, false),
        b(4, 0.01, true),
    );
    let lean = Lean::new([&p0, &g0, &m0, &v0]);
    let (lr, wd, step, seed) = (3e-3f32, 0.01f32, 9u32, 77u32);
    let hyper = AdamHyper::new(lr, 0.9, 0.999, 1e-8, wd, step as u64).unwrap();
    let scalars = adam_scalars!(
        adamw_bf16_sr_moments, hyper, weight_decay: wd, step: step, rounding_seed: seed
    )
    .unwrap();
    let records = Records::single::<adamw_bf16_sr_moments::Entry>().unwrap();
    // SAFETY: every region is live device memory until the synchronisation below.
    unsafe {
        rt.launch::<adamw_bf16_sr_moments::Entry>(rt.stream())
            .plain(&scalars, ClampPolicy::Fixed { bound })
            .raw_buffers(&lean.buffers(), &records)
    }
    .unwrap();
    rt.synchronize().unwrap();
    let [p1, m1, v1] = lean.bits();
    let hp = Hyper::new(lr, 0.9, 0.999, 1e-8, wd, step as u64);
    let mut exact = [0usize; 3];
    for i in 0..N {
        let (e, scale) = reference::step_with_scale(
            KernelRef::Attn,
            Elem::new(p0[i].to_f64(), m0[i].to_f64(), v0[i].to_f64(), 0.0),
            Elem::default(),
            g0[i].to_f64(),
            &hp,
            bound as f64,
        );
        // Stochastic ordinals: p 0, m 1, v 2. Only the weight is clamped.
        for (k, (got, value, s, ordinal, b)) in [
            (p1[i], e.p, scale.p, 0u32, bound),
            (m1[i], e.m, scale.m, 1, 0.0),
            (v1[i], e.v, scale.v, 2, 0.0),
        ]
        .into_iter()
        .enumerate()
        {
            let word = reference_word(seed, step, 0, ordinal, i as u64);
            let want = reference_store(value as f32, word, b);
            let steps = (got as i32 - want as i32).abs();
            // The device computes in f32: its value may be off the f64 one by a few roundings
            // of the terms it sums (`scale`), which for a moment whose terms nearly cancel is
            // many bf16 steps of the result. A rounding with a fixed word is monotone, so the
            // stored value lies between the roundings of the two ends of that interval.
            let tol = 4.0 * f32::EPSILON as f64 * s;
            let (lo, hi) = (
                bf16::from_bits(reference_store((value - tol) as f32, word, b)).to_f32(),
                bf16::from_bits(reference_store((value + tol) as f32, word, b)).to_f32(),
            );
            let stored = bf16::from_bits(got).to_f32();
            assert!(
                steps <= 1 || (lo <= stored && stored <= hi),
                "element {i}, stochastic buffer {ordinal}: stored 0x{got:04x}, reference 0x{want:04x} from \
                 {value} (f32 interval ±{tol:e}: {lo:e}..={hi:e})"
            );
            exact[k] += (steps == 0) as usize;
        }
        assert!(
            bf16::from_bits(p1[i]).to_f32().abs() <= bound,
            "element {i}"
        );
        assert!(
            bf16::from_bits(v1[i]).to_f32() >= 0.0,
            "element {i}: v below 0"
        );
    }
    for (name, e) in ["p", "m", "v"].into_iter().zip(exact) {
        assert!(e * 100 >= N * 99, "{name}: {e} of {N} equal the reference");
    }
    println!(
        "max_error adamw_bf16_sr_moments: p/m/v {exact:?} of {N} equal the reference's \
         stochastic rounding, the rest one bf16 step away"
    );

    // Replays of a captured step equal eager steps, bit for bit, in all three buffers.
    let steps = sanitized(100, 8);
    let (eager, replayed) = (
        Lean::new([&p0, &g0, &m0, &v0]),
        Lean::new([&p0, &g0, &m0, &v0]),
    );
    let hyper = adamw_bf16_sr_moments::Hyper {
        eps: 1e-8,
        weight_decay: wd,
        rounding_seed: seed,
    };
    let (se, sr) = (
        states::<adamw_bf16_sr_moments::Entry>(lr, bound, hyper),
        states::<adamw_bf16_sr_moments::Entry>(lr, bound, hyper),
    );
    let records = || Records::single::<adamw_bf16_sr_moments::Entry>().unwrap();
    let (re, rr) = (records(), records());
    let lean_step = |s: &Stream, t: &Lean, states: &StepStates, r: &Records| {
        states.advance(&rt, s)?;
        // SAFETY: the buffers outlive every launch and replay (synchronised below).
        unsafe {
            rt.launch::<adamw_bf16_sr_moments::Entry>(s)
                .stepped(&adamw_bf16_sr_moments::StepScalars {}, states, 0)
                .raw_buffers(&t.buffers(), r)
        }
        .map(|_| ())
    };
    for _ in 0..steps {
        lean_step(rt.stream(), &eager, &se, &re).unwrap();
    }
    let graph = rt
        .capture(vec![Box::new(|s: &Stream| {
            lean_step(s, &replayed, &sr, &rr)
        })])
        .unwrap();
    for _ in 0..steps {
        graph.launch(rt.stream()).unwrap();
    }
    rt.synchronize().unwrap();
    drop(graph);
    for (name, (a, b)) in ["p", "m", "v"]
        .into_iter()
        .zip(eager.bits().iter().zip(replayed.bits().iter()))
    {
        let differing = a.iter().zip(b).filter(|(x, y)| x != y).count();
        assert_eq!(differing, 0, "{name}: {differing} elements differ");
    }
    println!("adamw_bf16_sr_moments: {steps} replays equal {steps} eager steps bit for bit");
}
