//! The multi-tensor entries (`<kernel>_multi`) on the GPU: one launch over a set of separately
//! allocated tensors of awkward sizes must give, tensor by tensor, what the f64 reference gives;
//! the same through a recorded graph; and the device tables are rebuilt only when the set
//! changes. Every test needs a CUDA GPU and is ignored without one.
use adamant::reference::{KernelRef, RefState};
use adamant::runtime::{Adamant, Branch, ClampPolicy, Error, TensorSet};
use cust::stream::Stream;
use rand::rngs::SmallRng;
use rand::SeedableRng;

#[path = "support/multi_step.rs"]
mod multi_step;
use multi_step::*;

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
    tensors[1].g = adamant::runtime::DeviceArray::from_host(&host[1].g[..19]).unwrap();
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
    assert!(
        matches!(
            &err,
            Error::InKernel { kernel: "attn_adam_kernel_multi", source }
                if matches!(**source, Error::InvalidClamp { .. })
        ),
        "{err}"
    );
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
