//! Every optimizer launch's diagnostics record on the GPU, against the f64 reference of the same
//! facts (`adamant::record_reference`): for each of the five kernels through its typed launcher,
//! for an unaligned launch (the scalar loop), for a multi-tensor set (per-tensor records and
//! in-tensor indices), and across launches (the records reset inside each launch). Faults are
//! injected into every buffer: NaN and inf in g, m, v and v_max, a NaN and an infinite weight,
//! weights past the bound.
#[path = "../support/mod.rs"]
mod support;

use adamant::record_reference::{differences, expected_record};
use adamant::reference::{Elem, Hyper, KernelRef};
use adamant::rl::SeedLaunchers;
use adamant::runtime::{
    adam_scalars, AdamHyper, Adamant, ClampPolicy, Error, GroupBuffer, ParamGroup, Records,
    TensorSet,
};
use adamant::runtime::{DeviceArray, ParamBuffer};
use adamant_device::diagnostics::TensorRecord;
use adamant_kernels::optimizers::{attn_adam_kernel, iqn_adam_kernel};
use cust::memory::DeviceBuffer;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const BOUND: f32 = 100.0; // ClampPolicy::from_isv(0.5)

use support::runtime;

/// Host state of one tensor.
#[derive(Clone)]
struct State {
    p: Vec<f32>,
    g: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
    v_max: Vec<f32>,
}

/// Weights well inside the bound (|p| < 50) or well past it (150..300), so that no element's
/// verdict depends on rounding; then the faults, at indices spread over the vector loop, the
/// scalar tail and (for long tensors) several blocks.
fn state(rng: &mut SmallRng, n: usize, faults: bool) -> State {
    let mut s = State {
        p: (0..n)
            .map(|_| {
                if rng.gen_bool(0.01) {
                    rng.gen_range(150.0..300.0) * if rng.gen_bool(0.5) { 1.0 } else { -1.0 }
                } else {
                    rng.gen_range(-50.0..50.0)
                }
            })
            .collect(),
        g: (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect(),
        m: (0..n).map(|_| rng.gen_range(-0.1..0.1)).collect(),
        v: (0..n).map(|_| rng.gen_range(0.0..0.05)).collect(),
        v_max: (0..n).map(|_| rng.gen_range(0.05..0.06)).collect(),
    };
    if faults {
        let at = |f: f64| ((n as f64 * f) as usize).min(n - 1);
        s.g[at(0.9)] = f32::NAN;
        s.g[at(0.3)] = f32::INFINITY;
        s.m[at(0.5)] = f32::NAN;
        s.v[at(0.7)] = f32::INFINITY;
        s.v_max[at(0.2)] = f32::NAN;
        s.p[at(0.6)] = f32::NAN;
        s.p[at(0.4)] = -f32::INFINITY;
        s.p[n - 1] = 250.0; // the last element: the scalar tail when n is not a multiple of 4
    }
    s
}

fn elems(s: &State) -> Vec<Elem> {
    (0..s.p.len())
        .map(|i| Elem::from_f32(s.p[i], s.m[i], s.v[i], s.v_max[i]))
        .collect()
}

fn hyper(kernel: KernelRef) -> AdamHyper {
    let wd = if kernel == KernelRef::Curiosity {
        0.0
    } else {
        0.01
    };
    AdamHyper::new(3e-3, 0.9, 0.999, 1e-8, wd, 1).unwrap()
}

fn reference_hyper(h: &AdamHyper) -> Hyper {
    Hyper::new(h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.step)
}

fn assert_record(what: &str, kernel: KernelRef, before: &State, hp: &Hyper, got: &TensorRecord) {
    let want = expected_record(kernel, &elems(before), &before.g, hp, BOUND as f64);
    let diffs = differences(&want, got);
    assert!(
        diffs.is_empty(),
        "{what}: {diffs:#?}\nexpected {want:#?}\ngot {got:#?}"
    );
}

fn group(kernel: KernelRef, s: &State) -> ParamGroup {
    let mut g = if kernel.amsgrad() {
        ParamGroup::new_amsgrad(kernel.name(), &s.p).unwrap()
    } else {
        ParamGroup::new(kernel.name(), &s.p).unwrap()
    };
    g.upload(GroupBuffer::Grads, &s.g).unwrap();
    g.upload(GroupBuffer::M, &s.m).unwrap();
    g.upload(GroupBuffer::V, &s.v).unwrap();
    if kernel.amsgrad() {
        g.upload(GroupBuffer::VMax, &s.v_max).unwrap();
    }
    g
}

fn launch(rt: &Adamant, kernel: KernelRef, g: &mut ParamGroup, h: &AdamHyper) {
    let policy = ClampPolicy::from_isv(0.5);
    let s = rt.stream();
    match kernel {
        KernelRef::Dqn => rt.dqn_adam_update(s, g, h, None, policy),
        KernelRef::Iqn => rt.iqn_adam(s, g, h, policy),
        KernelRef::Iql => rt.iql_adam(s, g, h, 0.0, policy),
        KernelRef::Attn => rt.attn_adam(s, g, h, policy),
        KernelRef::Curiosity => rt.curiosity_adam(s, g, h, policy),
    }
    .unwrap();
}

fn download(g: &ParamGroup) -> State {
    let get = |b| g.download(b).unwrap();
    State {
        p: get(GroupBuffer::Params),
        g: get(GroupBuffer::Grads),
        m: get(GroupBuffer::M),
        v: get(GroupBuffer::V),
        v_max: if g.has_amsgrad() {
            get(GroupBuffer::VMax)
        } else {
            vec![0.0; g.len()]
        },
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn every_kernels_record_matches_the_f64_reference() {
    let rt = runtime();
    let mut rng = SmallRng::seed_from_u64(0x5EC0);
    for kernel in KernelRef::ALL {
        // Under compute-sanitizer (it instruments every access) the largest size is skipped.
        let mut sizes = vec![1usize, 7, 1003, 70_001];
        if std::env::var_os("ADAMANT_SANITIZER_RUN").is_none() {
            sizes.push(1 << 20);
        }
        for n in sizes {
            for faults in [false, true] {
                let before = state(&mut rng, n, faults && n > 4);
                let mut g = group(kernel, &before);
                let h = hyper(kernel);
                launch(&rt, kernel, &mut g, &h);
                rt.synchronize().unwrap();
                let records = g.records();
                assert_eq!(records.sequence, 1, "{}: one launch", kernel.name());
                assert_eq!(records.tensors.len(), 1);
                let what = format!("{} n={n} faults={faults}", kernel.name());
                assert_record(
                    &what,
                    kernel,
                    &before,
                    &reference_hyper(&h),
                    &records.tensors[0],
                );
                // The stored maximum is the maximum of what was stored.
                let stored = download(&g).p;
                let max = stored
                    .iter()
                    .fold(0u32, |m, x| m.max(x.to_bits() & 0x7fff_ffff));
                assert_eq!(records.tensors[0].max_stored_bits, max, "{what}");
            }
        }
        println!(
            "records kernel={} sizes=5 faults=on/off: match the f64 reference",
            kernel.name()
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn each_launch_reports_only_itself() {
    // Step 1 sees a NaN gradient at 17; step 2 gets clean gradients, but m and v keep the NaN
    // step 1 wrote (and so does p): the second record must count g clean and m, v, p as they are.
    let rt = runtime();
    let mut rng = SmallRng::seed_from_u64(7);
    let kernel = KernelRef::Iqn;
    let mut before = state(&mut rng, 4099, false);
    before.g[17] = f32::NAN;
    let mut g = group(kernel, &before);
    let h = hyper(kernel);
    launch(&rt, kernel, &mut g, &h);
    rt.synchronize().unwrap();
    let first = g.records();
    assert_eq!(first.tensors[0].buffers()[1].non_finite, 1);
    let mut second = download(&g);
    second.g = state(&mut rng, 4099, false).g;
    g.upload(GroupBuffer::Grads, &second.g).unwrap();
    let h2 = AdamHyper { step: 2, ..h };
    launch(&rt, kernel, &mut g, &h2);
    rt.synchronize().unwrap();
    let records = g.records();
    assert_eq!(records.sequence, 2);
    let rec = &records.tensors[0];
    assert_eq!(
        rec.buffers()[1].non_finite,
        0,
        "g is clean at step 2: {rec:?}"
    );
    for b in [0, 2, 3] {
        assert_eq!(rec.buffers()[b].non_finite, 1, "buffer {b}: {rec:?}");
        assert_eq!(rec.buffers()[b].first_non_finite, 17, "buffer {b}");
    }
    assert_record("step 2", kernel, &second, &reference_hyper(&h2), rec);
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn an_unaligned_launch_records_through_the_scalar_loop() {
    // Buffers one element into their allocations are not 16-byte aligned: every element goes
    // through the scalar loop, whose indices must still be the launch's own.
    let rt = runtime();
    let mut rng = SmallRng::seed_from_u64(11);
    let n = 5000;
    let before = state(&mut rng, n + 1, true);
    let bufs: Vec<DeviceBuffer<f32>> = [&before.p, &before.g, &before.m, &before.v]
        .iter()
        .map(|x| DeviceBuffer::from_slice(x).unwrap())
        .collect();
    let h = hyper(KernelRef::Iqn);
    let scalars = adam_scalars!(iqn_adam_kernel, &h, weight_decay: h.weight_decay).unwrap();
    let records = Records::single::<iqn_adam_kernel::Entry>().unwrap();
    // Offset by one element: 4-byte aligned only. The runtime's own buffers start at an
    // allocation, so only memory of other code (a raw launch) can be unaligned.
    let one_in = |i: usize| {
        let b: &DeviceBuffer<f32> = &bufs[i];
        adamant::runtime::DeviceRegion::new(b.as_device_ptr().as_raw() + 4, n).unwrap()
    };
    let b = iqn_adam_kernel::Buffers {
        p: one_in(0),
        g: one_in(1),
        m: one_in(2),
        v: one_in(3),
    };
    // SAFETY: the cust buffers outlive the launch (synchronised below).
    unsafe {
        rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
            .plain(&scalars, ClampPolicy::from_isv(0.5))
            .raw_buffers(&b, &records)
    }
    .unwrap();
    rt.synchronize().unwrap();
    let shifted = State {
        p: before.p[1..].to_vec(),
        g: before.g[1..].to_vec(),
        m: before.m[1..].to_vec(),
        v: before.v[1..].to_vec(),
        v_max: before.v_max[1..].to_vec(),
    };
    let got = records.read();
    assert_eq!(got.sequence, 1);
    assert_record(
        "unaligned",
        KernelRef::Iqn,
        &shifted,
        &reference_hyper(&h),
        &got.tensors[0],
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_multi_tensor_launch_records_each_tensor_with_its_own_indices() {
    let rt = runtime();
    let mut rng = SmallRng::seed_from_u64(23);
    let sizes = [5000usize, 6151, 3, 70_000];
    let states: Vec<State> = sizes
        .iter()
        .enumerate()
        .map(|(t, &n)| state(&mut rng, n, t % 2 == 1))
        .collect();
    let mut device: Vec<(ParamBuffer, [DeviceArray; 3])> = states
        .iter()
        .map(|s| {
            let p = ParamBuffer::from_host(&s.p).unwrap();
            (
                p,
                [&s.g, &s.m, &s.v].map(|x| DeviceArray::from_host(x).unwrap()),
            )
        })
        .collect();
    let h = hyper(KernelRef::Attn);
    let scalars = adam_scalars!(attn_adam_kernel, &h, weight_decay: h.weight_decay).unwrap();
    let mut set = TensorSet::new();
    for step in 0..2 {
        let tensors: Vec<_> = device
            .iter_mut()
            .map(|(p, [g, m, v])| attn_adam_kernel::Buffers {
                p,
                g: g.input(),
                m,
                v,
            })
            .collect();
        rt.launch::<attn_adam_kernel::Entry>(rt.stream())
            .plain(&scalars, ClampPolicy::from_isv(0.5))
            .set(&mut set, &tensors)
            .unwrap();
        rt.synchronize().unwrap();
        if step == 0 {
            let records = set.records().expect("built");
            assert_eq!(records.sequence, 1);
            assert_eq!(records.tensors.len(), sizes.len());
            for (t, s) in states.iter().enumerate() {
                let what = format!("tensor {t} ({} elements)", s.p.len());
                assert_record(
                    &what,
                    KernelRef::Attn,
                    s,
                    &reference_hyper(&h),
                    &records.tensors[t],
                );
            }
        }
    }
    assert_eq!(
        set.records().unwrap().sequence,
        2,
        "the second launch published too"
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn records_of_another_shape_are_refused_before_launch() {
    let rt = runtime();
    let n = 1024;
    let mut p = ParamBuffer::from_host(&vec![0.5f32; n]).unwrap();
    let mut bufs: Vec<DeviceArray> = (0..3)
        .map(|_| DeviceArray::from_host(&vec![0.5f32; n]).unwrap())
        .collect();
    let h = hyper(KernelRef::Iqn);
    let scalars = adam_scalars!(iqn_adam_kernel, &h, weight_decay: h.weight_decay).unwrap();
    for records in [Records::new(1, 5).unwrap(), Records::new(2, 4).unwrap()] {
        let [g, m, v] = &mut bufs[..] else {
            unreachable!()
        };
        let b = iqn_adam_kernel::Buffers {
            p: &mut p,
            g: g.input(),
            m,
            v,
        };
        let refused = rt
            .launch::<iqn_adam_kernel::Entry>(rt.stream())
            .plain(&scalars, ClampPolicy::from_isv(0.5))
            .buffers(&b, &records);
        match refused {
            Err(Error::RecordsMismatch {
                kernel: "iqn_adam_kernel",
                ..
            }) => {}
            other => panic!("expected RecordsMismatch, got {other:?}"),
        }
        assert_eq!(records.read().sequence, 0);
    }
    rt.synchronize().unwrap();
    let p = p.download().unwrap();
    assert!(p.iter().all(|&x| x == 0.5), "nothing was launched");
}
