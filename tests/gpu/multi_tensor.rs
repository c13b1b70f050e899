//! The multi-tensor entries (`<kernel>_multi`) on the GPU: one launch over a set of separately
//! allocated tensors of awkward sizes must give, tensor by tensor, what the f64 reference gives;
//! the same through a recorded graph; and the device tables are rebuilt only when the set
//! changes. Every test needs a CUDA GPU and is ignored without one.
#[path = "../support/mod.rs"]
mod support;

use adamant::reference::{KernelRef, RefState};
use adamant::runtime::{Adamant, Branch, ClampPolicy, Error, TensorSet};
use cust::stream::Stream;
use rand::rngs::SmallRng;
use rand::SeedableRng;

use multi_step::*;
use support::multi_step;

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
    // One step-state record per kernel: the first advance gives step 3 (`hyper`'s), and every
    // later step (eager or replayed) the next one.
    let (states1, states2) = (states_for(k1, policy), states_for(k2, policy));
    let mut step_number = hyper(k1).step;
    {
        let ref1: Vec<RefState> = host1.iter().map(|t| reference_of(k1, t, 100.0)).collect();
        let ref2: Vec<RefState> = host2.iter().map(|t| reference_of(k2, t, 100.0)).collect();
        step_stepped(&rt, rt.stream(), k1, &mut set1, &mut t1, &states1).unwrap();
        step_stepped(&rt, rt.stream(), k2, &mut set2, &mut t2, &states2).unwrap();
        rt.synchronize().unwrap();
        assert_matches(k1, "eager", &ref1, &t1);
        assert_matches(k2, "eager", &ref2, &t2);
    }
    // A graph with both kernels in parallel branches, replayed twice: each replay is the next
    // step (its own bias corrections, read from the records every replay advances).
    {
        let branches: Vec<Branch> = vec![
            Box::new(|s: &Stream| step_stepped(&rt, s, k1, &mut set1, &mut t1, &states1)),
            Box::new(|s: &Stream| step_stepped(&rt, s, k2, &mut set2, &mut t2, &states2)),
        ];
        let graph = rt.capture(branches).unwrap();
        assert!(graph.nodes() >= 4, "{} nodes", graph.nodes());
        for replay in 1..=2 {
            step_number += 1;
            let before1: Vec<HostTensor> = t1.iter().map(download).collect();
            let before2: Vec<HostTensor> = t2.iter().map(download).collect();
            graph.launch(rt.stream()).unwrap();
            rt.synchronize().unwrap();
            let ref1: Vec<RefState> = before1
                .iter()
                .map(|t| reference_at(k1, t, 100.0, step_number))
                .collect();
            let ref2: Vec<RefState> = before2
                .iter()
                .map(|t| reference_at(k2, t, 100.0, step_number))
                .collect();
            let what = format!("graph replay {replay} (step {step_number})");
            assert_matches(k1, &what, &ref1, &t1);
            assert_matches(k2, &what, &ref2, &t2);
        }
    }
    assert_eq!(states1.read().unwrap()[0].step as u64, step_number);
    assert_eq!(
        (set1.rebuilds(), set2.rebuilds()),
        (1, 1),
        "tables rebuilt without a change"
    );

    // A plain launch of an Adam kernel is refused in a capture: its bias corrections would be
    // replayed frozen.
    let err = rt
        .capture(vec![Box::new(|s: &Stream| {
            step(&rt, s, k1, &mut set1, &mut t1, policy)
        })])
        .err()
        .expect("a plain Adam launch during capture is refused");
    assert!(
        matches!(&err, Error::Capture { operation } if operation.contains("bias_correction1") || operation.contains("`lr`")),
        "{err}"
    );

    // A changed set is rebuilt eagerly, and refused during a capture.
    let mut shorter: Vec<DevTensor> = t1.drain(..5).collect();
    step(&rt, rt.stream(), k1, &mut set1, &mut shorter, policy).unwrap();
    assert_eq!(set1.rebuilds(), 2);
    let err = rt
        .capture(vec![Box::new(|s: &Stream| {
            step_stepped(&rt, s, k1, &mut set1, &mut t1, &states1)
        })])
        .err()
        .expect("a changed set during capture is refused");
    assert!(
        matches!(&err, Error::Capture { operation } if operation.contains("tensor set changed")),
        "{err}"
    );
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
