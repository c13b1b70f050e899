//! The multi-tensor entries (`<kernel>_multi`) on the GPU: one launch over a set of separately
//! allocated tensors of awkward sizes must give, tensor by tensor, what the f64 reference gives;
//! the same through a recorded graph; and the device tables are rebuilt only when the set
//! changes. Every test needs a CUDA GPU and is ignored without one.
use adamant::kernels::abi::UniformPtr;
use adamant::kernels::optimizers::{
    attn_adam_kernel, curiosity_adam_step, dqn_adam_update_kernel, iql_adam_kernel, iqn_adam_kernel,
};
use adamant::reference::{self as r, KernelRef, RefState};
use adamant::runtime::{adam_scalars, AdamHyper, Adamant, Branch, ClampPolicy, Error, TensorSet};
use cust::memory::{CopyDestination, DeviceBuffer};
use cust::stream::Stream;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Sizes around the vector width and the chunk size (2048), plus a multi-chunk tensor.
const SIZES: [usize; 10] = [1, 3, 4, 5, 2047, 2048, 2049, 4099, 10_000, 70_001];

struct HostTensor {
    p: Vec<f32>,
    g: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
    v_max: Vec<f32>,
}

struct DevTensor {
    p: DeviceBuffer<f32>,
    g: DeviceBuffer<f32>,
    m: DeviceBuffer<f32>,
    v: DeviceBuffer<f32>,
    v_max: DeviceBuffer<f32>,
}

fn random(rng: &mut SmallRng, n: usize, bound: f32) -> HostTensor {
    let mut gen = |lo: f32, hi: f32| (0..n).map(|_| rng.gen_range(lo..hi)).collect::<Vec<_>>();
    let mut p = gen(-2.0, 2.0);
    // A few weights past the bound and non-finite ones, so the clamp acts in every tensor.
    for (i, x) in p.iter_mut().enumerate() {
        match i % 97 {
            0 => *x = bound * 3.0,
            1 => *x = f32::NAN,
            2 => *x = f32::NEG_INFINITY,
            _ => {}
        }
    }
    HostTensor {
        p,
        g: gen(-1.0, 1.0),
        m: gen(-0.1, 0.1),
        v: gen(0.0, 0.05),
        v_max: gen(0.0, 0.06),
    }
}

fn upload(t: &HostTensor) -> DevTensor {
    let up = |x: &[f32]| DeviceBuffer::from_slice(x).unwrap();
    DevTensor {
        p: up(&t.p),
        g: up(&t.g),
        m: up(&t.m),
        v: up(&t.v),
        v_max: up(&t.v_max),
    }
}

fn download(t: &DevTensor) -> HostTensor {
    let down = |b: &DeviceBuffer<f32>| {
        let mut h = vec![0.0f32; b.len()];
        b.copy_to(&mut h[..]).unwrap();
        h
    };
    HostTensor {
        p: down(&t.p),
        g: down(&t.g),
        m: down(&t.m),
        v: down(&t.v),
        v_max: down(&t.v_max),
    }
}

fn hyper(kernel: KernelRef) -> AdamHyper {
    let wd = if kernel == KernelRef::Curiosity {
        0.0
    } else {
        0.01
    };
    AdamHyper::new(2e-3, 0.9, 0.999, 1e-8, wd, 3).unwrap()
}

const GRAD_CLIP: f32 = 0.5;

/// One multi-tensor step of `kernel` over `tensors` on `stream`, through the typed entry.
fn step(
    rt: &Adamant,
    stream: &Stream,
    kernel: KernelRef,
    set: &mut TensorSet,
    tensors: &mut [DevTensor],
    policy: ClampPolicy,
) -> adamant::runtime::Result<()> {
    let h = hyper(kernel);
    macro_rules! run {
        ($k:ident, $scalars:expr) => {{
            let buffers: Vec<_> = tensors
                .iter_mut()
                .map(|t| $k::Buffers {
                    p: &mut *t.p,
                    g: &mut *t.g,
                    m: &mut *t.m,
                    v: &mut *t.v,
                })
                .collect();
            rt.launch_multi::<$k::Entry>(stream, set, &buffers, &$scalars, policy)
                .map(|_| ())
        }};
    }
    let wd = h.weight_decay;
    match kernel {
        KernelRef::Dqn => run!(
            dqn_adam_update_kernel,
            adam_scalars!(dqn_adam_update_kernel, h, weight_decay: wd, grad_scale: UniformPtr::NULL).unwrap()
        ),
        KernelRef::Iqn => run!(
            iqn_adam_kernel,
            adam_scalars!(iqn_adam_kernel, h, weight_decay: wd).unwrap()
        ),
        KernelRef::Iql => run!(
            iql_adam_kernel,
            adam_scalars!(iql_adam_kernel, h, weight_decay: wd, grad_clip: GRAD_CLIP).unwrap()
        ),
        KernelRef::Attn => run!(
            attn_adam_kernel,
            adam_scalars!(attn_adam_kernel, h, weight_decay: wd).unwrap()
        ),
        KernelRef::Curiosity => {
            let scalars = adam_scalars!(curiosity_adam_step, h).unwrap();
            let buffers: Vec<_> = tensors
                .iter_mut()
                .map(|t| curiosity_adam_step::Buffers {
                    p: &mut *t.p,
                    g: &mut *t.g,
                    m: &mut *t.m,
                    v: &mut *t.v,
                    v_max: &mut *t.v_max,
                })
                .collect();
            rt.launch_multi::<curiosity_adam_step::Entry>(stream, set, &buffers, &scalars, policy)
                .map(|_| ())
        }
    }
}

fn reference_of(kernel: KernelRef, t: &HostTensor, bound: f32) -> RefState {
    let h = hyper(kernel);
    let mut hp = r::Hyper::new(h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.step);
    if kernel == KernelRef::Iql {
        hp = hp.with_grad_clip(GRAD_CLIP);
    }
    let v_max = kernel.amsgrad().then_some(&t.v_max[..]);
    let mut state = RefState::from_f32(&t.p, &t.m, &t.v, v_max);
    r::step_slices(kernel, &mut state, &t.g, &hp, bound);
    state
}

fn assert_matches(kernel: KernelRef, what: &str, reference: &[RefState], tensors: &[DevTensor]) {
    for (i, (want, dev)) in reference.iter().zip(tensors).enumerate() {
        let got = download(dev);
        let v_max = kernel.amsgrad().then_some(&got.v_max[..]);
        let errors = want.max_errors(&got.p, &got.m, &got.v, v_max);
        assert!(
            errors.passes(),
            "{} {what}: tensor {i} ({} elements): {errors:?}",
            kernel.name(),
            got.p.len()
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn multi_tensor_step_matches_reference_per_tensor() {
    let rt = Adamant::new().expect("needs a CUDA GPU");
    let mut rng = SmallRng::seed_from_u64(21);
    let policy = ClampPolicy::Fixed { bound: 1.5 };
    for kernel in KernelRef::ALL {
        let host: Vec<HostTensor> = SIZES.iter().map(|&n| random(&mut rng, n, 1.5)).collect();
        let reference: Vec<RefState> = host.iter().map(|t| reference_of(kernel, t, 1.5)).collect();
        let mut tensors: Vec<DevTensor> = host.iter().map(upload).collect();
        let mut set = TensorSet::new();
        step(&rt, rt.stream(), kernel, &mut set, &mut tensors, policy).unwrap();
        rt.synchronize().unwrap();
        assert_eq!(set.elements(), SIZES.iter().sum::<usize>());
        assert_matches(kernel, "eager", &reference, &tensors);
        println!(
            "multi_tensor kernel={}_multi tensors={} chunks={} ok",
            kernel.name(),
            SIZES.len(),
            set.chunks()
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn graph_replay_matches_reference_and_tables_are_reused() {
    let rt = Adamant::new().expect("needs a CUDA GPU");
    let mut rng = SmallRng::seed_from_u64(22);
    let policy = ClampPolicy::from_isv(0.01); // bound 100
    let (k1, k2) = (KernelRef::Iqn, KernelRef::Curiosity);
    let host1: Vec<HostTensor> = SIZES.iter().map(|&n| random(&mut rng, n, 100.0)).collect();
    let host2: Vec<HostTensor> = SIZES
        .iter()
        .rev()
        .map(|&n| random(&mut rng, n, 100.0))
        .collect();
    let mut t1: Vec<DevTensor> = host1.iter().map(upload).collect();
    let mut t2: Vec<DevTensor> = host2.iter().map(upload).collect();
    let (mut set1, mut set2) = (TensorSet::new(), TensorSet::new());
    // Build the tables before capturing (a step with lr = 0 would still change p through the
    // clamp; the set is synced by a capture-free call instead).
    {
        let ref1: Vec<RefState> = host1.iter().map(|t| reference_of(k1, t, 100.0)).collect();
        let ref2: Vec<RefState> = host2.iter().map(|t| reference_of(k2, t, 100.0)).collect();
        step(&rt, rt.stream(), k1, &mut set1, &mut t1, policy).unwrap();
        step(&rt, rt.stream(), k2, &mut set2, &mut t2, policy).unwrap();
        rt.synchronize().unwrap();
        assert_matches(k1, "eager", &ref1, &t1);
        assert_matches(k2, "eager", &ref2, &t2);
    }
    // Two replays of a graph with both kernels in parallel branches, each checked.
    let before1: Vec<HostTensor> = t1.iter().map(download).collect();
    let before2: Vec<HostTensor> = t2.iter().map(download).collect();
    {
        let branches: Vec<Branch> = vec![
            Box::new(|s: &Stream| step(&rt, s, k1, &mut set1, &mut t1, policy)),
            Box::new(|s: &Stream| step(&rt, s, k2, &mut set2, &mut t2, policy)),
        ];
        let graph = rt.capture(branches).unwrap();
        assert!(graph.nodes() >= 2, "{} nodes", graph.nodes());
        graph.launch(rt.stream()).unwrap();
        rt.synchronize().unwrap();
    }
    let ref1: Vec<RefState> = before1.iter().map(|t| reference_of(k1, t, 100.0)).collect();
    let ref2: Vec<RefState> = before2.iter().map(|t| reference_of(k2, t, 100.0)).collect();
    assert_matches(k1, "graph replay", &ref1, &t1);
    assert_matches(k2, "graph replay", &ref2, &t2);
    assert_eq!(
        (set1.rebuilds(), set2.rebuilds()),
        (1, 1),
        "tables rebuilt without a change"
    );

    // A changed set is rebuilt eagerly, and refused during a capture.
    let mut shorter: Vec<DevTensor> = t1.drain(..5).collect();
    step(&rt, rt.stream(), k1, &mut set1, &mut shorter, policy).unwrap();
    assert_eq!(set1.rebuilds(), 2);
    let err = rt
        .capture(vec![Box::new(|s: &Stream| {
            step(&rt, s, k1, &mut set1, &mut t1, policy)
        })])
        .err()
        .expect("a changed set during capture is refused");
    assert!(matches!(err, Error::Capture { .. }), "{err}");
    // The runtime's stream works normally after the aborted capture.
    step(&rt, rt.stream(), k1, &mut set1, &mut shorter, policy).unwrap();
    rt.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn bad_multi_tensor_inputs_launch_nothing() {
    let rt = Adamant::new().expect("needs a CUDA GPU");
    let mut rng = SmallRng::seed_from_u64(23);
    let host: Vec<HostTensor> = [10usize, 20]
        .iter()
        .map(|&n| random(&mut rng, n, 1.0))
        .collect();
    let mut tensors: Vec<DevTensor> = host.iter().map(upload).collect();
    // Tensor 1's gradient is one element short.
    tensors[1].g = DeviceBuffer::from_slice(&host[1].g[..19]).unwrap();
    let mut set = TensorSet::new();
    let err = step(
        &rt,
        rt.stream(),
        KernelRef::Attn,
        &mut set,
        &mut tensors,
        ClampPolicy::from_isv(1.0),
    )
    .unwrap_err();
    match &err {
        Error::InTensor { tensor: 1, source } => {
            assert!(
                matches!(
                    **source,
                    Error::LengthMismatch {
                        buffer: "g",
                        found: 19,
                        expected: 20,
                        ..
                    }
                ),
                "{err}"
            )
        }
        other => panic!("expected InTensor(1, LengthMismatch), got {other}"),
    }
    let err = step(
        &rt,
        rt.stream(),
        KernelRef::Attn,
        &mut set,
        &mut tensors,
        ClampPolicy::from_isv(-1.0),
    )
    .unwrap_err();
    assert!(matches!(err, Error::InvalidClamp { .. }), "{err}");
    rt.synchronize().unwrap();
    let now = download(&tensors[0]);
    assert!(
        now.p
            .iter()
            .zip(&host[0].p)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "tensor 0 changed"
    );
    // An empty set launches nothing.
    let mut none: Vec<DevTensor> = vec![];
    step(
        &rt,
        rt.stream(),
        KernelRef::Attn,
        &mut TensorSet::new(),
        &mut none,
        ClampPolicy::from_isv(1.0),
    )
    .unwrap();
}
