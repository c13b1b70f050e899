//! Per-tensor clamp bounds on the GPU: a multi-tensor launch whose set has clamp scales clamps
//! tensor `t` to `bound × scales[t]` (saturated at the ceiling), for every kernel, plain and
//! stepped, eager and replayed from a graph, as the f64 reference does at that tensor's bound;
//! scales of one are the unscaled launch bit for bit; the records report each tensor's stored
//! maximum under its own bound; and bad scales are refused with nothing launched or uploaded.
//! Every test needs a CUDA GPU and is ignored without one.
#[path = "../support/mod.rs"]
mod support;

use adamant::kernels::optimizers::iqn_adam_kernel;
use adamant::reference::{KernelRef, RefState};
use adamant::runtime::{
    Adamant, ClampPolicy, Error, QAbsRef, StepBound, StepSpec, StepStates, TensorSet,
};
use cust::stream::Stream;
use rand::rngs::SmallRng;
use rand::SeedableRng;

use multi_step::*;
use support::multi_step;

const BOUND: f32 = 1.5;

/// One scale per size of [`SIZES`]: small and large, one that is not a power of two, and one
/// whose product with the bound is close under the ceiling (9e17: a scale past it is refused).
const SCALES: [f32; 10] = [0.25, 0.5, 1.0, 2.0, 0.1, 3.0, 1e-3, 7.0, 6e17, 0.75];

/// The tensor's bound, from the formula in f64: the product of two f32 is exact in f64, so
/// rounding it once to f32 is what an f32 multiply gives; past the ceiling it saturates.
fn tensor_bound(bound: f32, scale: f32) -> f32 {
    let ceiling = f64::from(adamant::runtime::BOUND_CEILING);
    (f64::from(bound) * f64::from(scale)).min(ceiling) as f32
}

fn bounds(bound: f32, scales: &[f32]) -> Vec<f32> {
    scales.iter().map(|&s| tensor_bound(bound, s)).collect()
}

/// Host tensors with each tensor's edge cases (3 × its bound, NaN, −inf) at its own bound.
fn tensors_for(rng: &mut SmallRng, bounds: &[f32]) -> Vec<HostTensor> {
    SIZES
        .iter()
        .zip(bounds)
        .map(|(&n, &b)| random(rng, n, b.min(1e30)))
        .collect()
}

fn policy_of(bound: f32) -> ClampPolicy {
    ClampPolicy::Fixed { bound }
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn every_kernel_clamps_each_tensor_to_its_own_bound() {
    let rt = Adamant::new().expect("needs a CUDA GPU");
    let mut rng = SmallRng::seed_from_u64(31);
    let policy = ClampPolicy::Fixed { bound: BOUND };
    let per_tensor = bounds(BOUND, &SCALES);
    for kernel in KernelRef::ALL {
        let host = tensors_for(&mut rng, &per_tensor);
        let reference: Vec<RefState> = host
            .iter()
            .zip(&per_tensor)
            .map(|(t, &b)| reference_of(kernel, t, b))
            .collect();
        let mut tensors: Vec<DevTensor> = host.iter().map(upload).collect();
        let mut set = TensorSet::new();
        sync_set(kernel, &mut set, &mut tensors).unwrap();
        set.set_clamp_scales(&SCALES).unwrap();
        assert_eq!(set.clamp_scales(), Some(&SCALES[..]));
        step(&rt, rt.stream(), kernel, &mut set, &mut tensors, policy).unwrap();
        rt.synchronize().unwrap();
        assert_matches(kernel, "per-tensor bounds", &reference, &tensors);
        for (t, (dev, &b)) in tensors.iter().zip(&per_tensor).enumerate() {
            let p = download(dev).p;
            assert!(
                p.iter().all(|x| x.is_nan() || x.abs() <= b),
                "{} tensor {t}: a weight past its bound {b}",
                kernel.name()
            );
        }
        println!(
            "clamp_scales kernel={}_multi tensors={} bounds={per_tensor:?} ok",
            kernel.name(),
            SIZES.len()
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn scales_of_one_are_the_unscaled_launch_bit_for_bit() {
    let rt = Adamant::new().expect("needs a CUDA GPU");
    let mut rng = SmallRng::seed_from_u64(32);
    let policy = ClampPolicy::Fixed { bound: BOUND };
    for kernel in [KernelRef::Dqn, KernelRef::Curiosity] {
        let host: Vec<HostTensor> = SIZES.iter().map(|&n| random(&mut rng, n, BOUND)).collect();
        let mut plain: Vec<DevTensor> = host.iter().map(upload).collect();
        let mut ones: Vec<DevTensor> = host.iter().map(upload).collect();
        let mut cleared: Vec<DevTensor> = host.iter().map(upload).collect();
        let (mut s_plain, mut s_ones, mut s_cleared) =
            (TensorSet::new(), TensorSet::new(), TensorSet::new());
        step(&rt, rt.stream(), kernel, &mut s_plain, &mut plain, policy).unwrap();
        sync_set(kernel, &mut s_ones, &mut ones).unwrap();
        s_ones.set_clamp_scales(&[1.0; SIZES.len()]).unwrap();
        step(&rt, rt.stream(), kernel, &mut s_ones, &mut ones, policy).unwrap();
        sync_set(kernel, &mut s_cleared, &mut cleared).unwrap();
        s_cleared.set_clamp_scales(&SCALES).unwrap();
        s_cleared.clear_clamp_scales().unwrap();
        assert_eq!(s_cleared.clamp_scales(), None);
        step(
            &rt,
            rt.stream(),
            kernel,
            &mut s_cleared,
            &mut cleared,
            policy,
        )
        .unwrap();
        rt.synchronize().unwrap();
        for t in 0..SIZES.len() {
            let want = download(&plain[t]);
            for (what, got) in [("ones", &ones[t]), ("cleared", &cleared[t])] {
                let got = download(got);
                assert_eq!(
                    bits(&got.p),
                    bits(&want.p),
                    "{} {what} tensor {t}: p",
                    kernel.name()
                );
                assert_eq!(
                    bits(&got.m),
                    bits(&want.m),
                    "{} {what} tensor {t}: m",
                    kernel.name()
                );
                assert_eq!(
                    bits(&got.v),
                    bits(&want.v),
                    "{} {what} tensor {t}: v",
                    kernel.name()
                );
            }
        }
        assert_eq!(s_ones.records(), s_plain.records(), "{}", kernel.name());
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn records_report_each_tensors_maximum_under_its_own_bound() {
    let rt = Adamant::new().expect("needs a CUDA GPU");
    let mut rng = SmallRng::seed_from_u64(33);
    let kernel = KernelRef::Attn;
    let per_tensor = bounds(BOUND, &SCALES);
    let mut host = tensors_for(&mut rng, &per_tensor);
    // No NaN weights here, so that each maximum is a number to compare.
    for t in &mut host {
        for x in &mut t.p {
            if x.is_nan() {
                *x = 0.5;
            }
        }
    }
    let mut tensors: Vec<DevTensor> = host.iter().map(upload).collect();
    let mut set = TensorSet::new();
    sync_set(kernel, &mut set, &mut tensors).unwrap();
    set.set_clamp_scales(&SCALES).unwrap();
    let policy = ClampPolicy::Fixed { bound: BOUND };
    step(&rt, rt.stream(), kernel, &mut set, &mut tensors, policy).unwrap();
    rt.synchronize().unwrap();
    let records = set.records().expect("a launched set has records");
    assert_eq!(records.tensors.len(), SIZES.len());
    for (t, (record, dev)) in records.tensors.iter().zip(&tensors).enumerate() {
        let p = download(dev).p;
        let max = p.iter().map(|x| x.abs().to_bits()).max().unwrap();
        assert_eq!(
            record.max_stored_bits,
            max,
            "tensor {t}: recorded max |p| {} vs stored {}",
            f32::from_bits(record.max_stored_bits),
            f32::from_bits(max)
        );
        // Element 0 is 3 × the tensor's bound, clamped to it (the −inf weight too): the maximum
        // stored is the tensor's bound.
        assert!(record.clamped >= 1, "tensor {t}: {record:?}");
        assert_eq!(f32::from_bits(max), per_tensor[t], "tensor {t}: max |p|");
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn stepped_launches_multiply_the_steps_bound() {
    let rt = Adamant::new().expect("needs a CUDA GPU");
    let mut rng = SmallRng::seed_from_u64(34);
    let h = hyper(KernelRef::Iqn);
    let spec = StepSpec::adam(&h, StepBound::Policy(ClampPolicy::Fixed { bound: BOUND }))
        .and_then(|s| {
            s.with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper {
                eps: h.eps,
                weight_decay: h.weight_decay,
            })
        })
        .unwrap();
    let states = StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 }).unwrap();
    let per_tensor = bounds(BOUND, &SCALES);
    let host = tensors_for(&mut rng, &per_tensor);
    let mut tensors: Vec<DevTensor> = host.iter().map(upload).collect();
    let mut set = TensorSet::new();
    sync_set(KernelRef::Iqn, &mut set, &mut tensors).unwrap();
    set.set_clamp_scales(&SCALES).unwrap();
    let scalars = iqn_adam_kernel::StepScalars {};
    states.advance(&rt, rt.stream()).unwrap();
    {
        let buffers = buffers!(iqn_adam_kernel, tensors);
        rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
            .stepped(&scalars, &states, 0)
            .set(&mut set, &buffers)
            .unwrap();
    }
    rt.synchronize().unwrap();
    // The first advance brings the record to the spec's step: the plain launches' step.
    assert_eq!(u64::from(states.read().unwrap()[0].step), h.step);
    let reference: Vec<RefState> = host
        .iter()
        .zip(&per_tensor)
        .map(|(t, &b)| reference_of(KernelRef::Iqn, t, b))
        .collect();
    assert_matches(
        KernelRef::Iqn,
        "stepped, per-tensor bounds",
        &reference,
        &tensors,
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_captured_step_clamps_each_replay_with_the_sets_scales() {
    let rt = Adamant::new().expect("needs a CUDA GPU");
    let mut rng = SmallRng::seed_from_u64(35);
    let kernel = KernelRef::Iql;
    let policy = ClampPolicy::Fixed { bound: BOUND };
    let host: Vec<HostTensor> = SIZES.iter().map(|&n| random(&mut rng, n, BOUND)).collect();
    let mut tensors: Vec<DevTensor> = host.iter().map(upload).collect();
    let mut set = TensorSet::new();
    sync_set(kernel, &mut set, &mut tensors).unwrap();
    let reversed: Vec<f32> = SCALES.iter().rev().copied().collect();
    // The step of each replay (the record's first advance gives `hyper`'s step, 3).
    let reference = |before: &[HostTensor], scales: &[f32], step: u64| -> Vec<RefState> {
        before
            .iter()
            .zip(bounds(BOUND, scales))
            .map(|(t, b)| reference_at(kernel, t, b, step))
            .collect()
    };
    let states = states_for(kernel, policy);
    set.set_clamp_scales(&SCALES).unwrap();
    let graph = rt
        .capture(vec![Box::new(|s: &Stream| {
            step_stepped(&rt, s, kernel, &mut set, &mut tensors, &states)
        })])
        .unwrap();
    let before: Vec<HostTensor> = tensors.iter().map(download).collect();
    graph.launch(rt.stream()).unwrap();
    rt.synchronize().unwrap();
    assert_matches(
        kernel,
        "graph replay",
        &reference(&before, &SCALES, 3),
        &tensors,
    );
    // New scales go to a new table: the graph keeps the one its launch validated (its bounds
    // were checked against it), while eager launches take the new one.
    set.set_clamp_scales(&reversed).unwrap();
    let before: Vec<HostTensor> = tensors.iter().map(download).collect();
    graph.launch(rt.stream()).unwrap();
    rt.synchronize().unwrap();
    assert_matches(
        kernel,
        "graph replay after new scales",
        &reference(&before, &SCALES, 4),
        &tensors,
    );
    let before: Vec<HostTensor> = tensors.iter().map(download).collect();
    step_stepped(&rt, rt.stream(), kernel, &mut set, &mut tensors, &states).unwrap();
    rt.synchronize().unwrap();
    assert_matches(
        kernel,
        "eager, new scales",
        &reference(&before, &reversed, 5),
        &tensors,
    );
    drop(graph);
    assert_eq!(set.rebuilds(), 1, "the tables were rebuilt for new scales");
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn bad_scales_are_refused_and_nothing_is_launched_or_uploaded() {
    let rt = Adamant::new().expect("needs a CUDA GPU");
    let mut rng = SmallRng::seed_from_u64(36);
    let kernel = KernelRef::Attn;
    let host: Vec<HostTensor> = [10usize, 20, 30]
        .iter()
        .map(|&n| random(&mut rng, n, BOUND))
        .collect();
    let mut tensors: Vec<DevTensor> = host.iter().map(upload).collect();
    let mut set = TensorSet::new();

    // Before the set has tables there is nothing to scale.
    let err = set.set_clamp_scales(&[1.0, 2.0, 3.0]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ClampScales {
                scales: 3,
                tensors: 0,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("sync it first"), "{err}");
    sync_set(kernel, &mut set, &mut tensors).unwrap();

    // Wrong length, and each kind of bad scale, naming the tensor; the table keeps its ones.
    let err = set.set_clamp_scales(&[1.0, 2.0]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ClampScales {
                scales: 2,
                tensors: 3,
                ..
            }
        ),
        "{err}"
    );
    for bad in [0.0f32, -1.0, f32::NAN, f32::INFINITY, 1e-39] {
        let err = set.set_clamp_scales(&[1.0, bad, 1.0]).unwrap_err();
        assert!(
            matches!(err, Error::InvalidClampScale { tensor: 1, .. }),
            "{bad}: {err}"
        );
    }
    assert_eq!(set.clamp_scales(), None);

    // A scale that rounds this launch's bound to 0 is refused at the launch.
    set.set_clamp_scales(&[1.0, 1.0, 1e-30]).unwrap();
    let tiny = ClampPolicy::Fixed { bound: 1e-20 };
    let err = step(&rt, rt.stream(), kernel, &mut set, &mut tensors, tiny).unwrap_err();
    assert!(
        matches!(err, Error::InvalidClampScale { tensor: 2, .. }),
        "{err}"
    );
    // And one that lifts it above the ceiling, where it could never bite (a review's bypass:
    // scale 3e38), is refused at the launch too.
    set.set_clamp_scales(&[1.0, 3e38, 1.0]).unwrap();
    let err = step(
        &rt,
        rt.stream(),
        kernel,
        &mut set,
        &mut tensors,
        policy_of(BOUND),
    )
    .unwrap_err();
    assert!(
        matches!(err, Error::InvalidClampScale { tensor: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("ceiling"), "{err}");

    // Scales set for these tensors do not carry over to others.
    let mut others: Vec<DevTensor> = host[..2].iter().map(upload).collect();
    let policy = ClampPolicy::Fixed { bound: BOUND };
    let err = step(&rt, rt.stream(), kernel, &mut set, &mut others, policy).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ClampScales {
                scales: 3,
                tensors: 2,
                ..
            }
        ),
        "{err}"
    );
    rt.synchronize().unwrap();
    for (t, (dev, want)) in tensors.iter().zip(&host).enumerate() {
        assert_eq!(bits(&download(dev).p), bits(&want.p), "tensor {t} changed");
    }
    for (t, (dev, want)) in others.iter().zip(&host).enumerate() {
        assert_eq!(
            bits(&download(dev).p),
            bits(&want.p),
            "other tensor {t} changed"
        );
    }
    assert_eq!(
        set.records().map(|r| r.sequence),
        Some(0),
        "a launch published"
    );

    // Cleared, the set may be rebuilt for the other tensors.
    set.clear_clamp_scales().unwrap();
    step(&rt, rt.stream(), kernel, &mut set, &mut others, policy).unwrap();
    rt.synchronize().unwrap();
    assert_eq!(set.records().map(|r| r.sequence), Some(1));
}
