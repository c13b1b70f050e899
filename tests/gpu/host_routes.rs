//! The host-side routes around the clamp that a review found (issue "No way around the clamp
//! from safe host code"), tried on the GPU after the fix. Those that no longer compile are
//! fixtures in `tests/ui` (a copied cust view launched, a parameter buffer as a state,
//! a graph outliving the runtime, an unaudited module without `unsafe`, a forged `UniformPtr`);
//! those that still compile are shown harmless or refused here, and `gpu-run.sh` runs them again
//! under `compute-sanitizer memcheck` (0 errors: nothing reads or writes freed memory).
//!
//! - A graph keeps every allocation it recorded: its buffers dropped (and fresh ones made in
//!   their place), a step state behind a `RefCell` replaced, a set synced to other tensors, the
//!   replay still updates the memory it recorded and nothing else.
//! - A `QAbsRef::Slot` buffer and a NaN-check binding outlive their handles.
//! - A `UniformPtr` copied out of a dropped `DeviceScalar` is refused; a launch into a capture
//!   adamant did not begin is refused.
//! - A set's tables validated for one kernel are rebuilt for another.
//! - The ceiling on the device: a per-tensor bound past 1e18 saturates there.
//!
//! Every test needs a CUDA GPU and is `#[ignore]`d with that reason.
#[path = "../support/mod.rs"]
mod support;

use std::cell::RefCell;

use adamant::runtime::cust::memory::DeviceBuffer;
use adamant::runtime::cust::stream::Stream;
use adamant::runtime::nan_check::{Check, NanChecker, SlotBindings, Source};
use adamant::runtime::{
    adam_scalars, AdamHyper, ClampPolicy, DeviceArray, DeviceRegion, DeviceScalar, Error,
    ParamBuffer, QAbsRef, Records, StepBound, StepSpec, StepStates, TensorSet, BOUND_CEILING,
};
use adamant_kernels::optimizers::{attn_adam_kernel, dqn_adam_update_kernel, iqn_adam_kernel};

const N: usize = 4096;

use support::runtime;

/// One group's buffers: weights at 0.5, a gradient of 1e5 (Adam's first moment alone would be
/// 1e4, far past the bound of 1), zero moments.
struct Group {
    p: ParamBuffer,
    g: DeviceArray,
    m: DeviceArray,
    v: DeviceArray,
}

fn group() -> Group {
    Group {
        p: ParamBuffer::filled(N, 0.5).unwrap(),
        g: DeviceArray::filled(N, 1e5).unwrap(),
        m: DeviceArray::zeroed(N).unwrap(),
        v: DeviceArray::zeroed(N).unwrap(),
    }
}

fn buffers(g: &mut Group) -> iqn_adam_kernel::Buffers<adamant::runtime::Owned<'_>> {
    iqn_adam_kernel::Buffers {
        p: &mut g.p,
        g: g.g.input(),
        m: &mut g.m,
        v: &mut g.v,
    }
}

const BOUND: ClampPolicy = ClampPolicy::Fixed { bound: 1.0 };

/// A record made for `iqn_adam_kernel` (lr 0.1, no decay) with a fixed `bound`.
fn iqn_spec(bound: f32) -> StepSpec {
    let hyper = AdamHyper::new(1e-1, 0.9, 0.999, 1e-8, 0.0, 1).unwrap();
    StepSpec::adam(&hyper, StepBound::Policy(ClampPolicy::Fixed { bound }))
        .and_then(|s| {
            s.with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper {
                eps: 1e-8,
                weight_decay: 0.0,
            })
        })
        .unwrap()
}

/// One record of [`iqn_spec`] with the bound 1.
fn iqn_states() -> StepStates {
    StepStates::new(&[iqn_spec(1.0)], QAbsRef::Owned { initial: 1.0 }).unwrap()
}

/// The stepped launches' uniforms (`iqn_adam_kernel` has no `#[uniform_ptr]`).
const K: iqn_adam_kernel::StepScalars = iqn_adam_kernel::StepScalars {};

fn all(x: &[f32], want: f32) -> bool {
    x.iter().all(|&v| v == want)
}

/// The review's route 2: after `drop(m)` the next allocation of the same size got `m`'s address
/// and the replay wrote Adam's first moment (1e4, unclamped) into a new parameter buffer. Now the
/// graph holds the old allocations: fresh buffers made after the drop are never written.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_graph_keeps_the_buffers_it_recorded_after_their_handles_are_dropped() {
    let rt = runtime();
    let mut g = group();
    let records = Records::single::<iqn_adam_kernel::Entry>().unwrap();
    let states = iqn_states();
    let graph = {
        let b = buffers(&mut g);
        rt.capture(vec![Box::new(|s: &Stream| {
            states.advance(&rt, s)?;
            rt.launch::<iqn_adam_kernel::Entry>(s)
                .stepped(&K, &states, 0)
                .buffers(&b, &records)
                .map(|_| ())
        })])
        .unwrap()
    };
    drop(states);
    assert!(graph.kept() >= 7, "buffers and records: {}", graph.kept());
    graph.launch(rt.stream()).unwrap();
    rt.synchronize().unwrap();
    let p_once = g.p.download().unwrap();
    assert!(p_once.iter().all(|x| x.abs() <= 1.0));
    drop(g);
    // New buffers of the same sizes, as a training loop would allocate next.
    let fresh: Vec<ParamBuffer> = (0..4)
        .map(|_| ParamBuffer::filled(N, 0.25).unwrap())
        .collect();
    for _ in 0..3 {
        graph.launch(rt.stream()).unwrap();
    }
    rt.synchronize().unwrap();
    assert_eq!(records.read().sequence, 4, "every replay ran and published");
    for (i, f) in fresh.iter().enumerate() {
        assert!(
            all(&f.download().unwrap(), 0.25),
            "fresh buffer {i} was written"
        );
    }
    // Every record says the weights stayed within the bound.
    let record = &records.read().tensors[0];
    assert!(f32::from_bits(record.max_stored_bits) <= 1.0, "{record:?}");
    drop(graph);
    rt.synchronize().unwrap();
}

/// A stepped launch reads its bound from the step state: a `StepStates` behind a `RefCell`,
/// replaced after the capture (the old one dropped), stays allocated for the graph, so the
/// replay still reads the bound it was recorded with.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_step_state_replaced_after_capture_stays_alive_for_the_graph() {
    let rt = runtime();
    let spec = iqn_spec;
    let owned = QAbsRef::Owned { initial: 1.0 };
    let cell = RefCell::new(StepStates::new(&[spec(1.0)], owned).unwrap());
    let mut g = group();
    // Weights past the recorded bound (1), within the replacement's (1e6): the replay's clamp
    // shows which record it read.
    g.p.upload(&vec![5.0; N]).unwrap();
    let records = Records::single::<iqn_adam_kernel::Entry>().unwrap();
    let graph = {
        let b = buffers(&mut g);
        rt.capture(vec![Box::new(|s: &Stream| {
            let states = cell.borrow();
            states.advance(&rt, s)?;
            rt.launch::<iqn_adam_kernel::Entry>(s)
                .stepped(&K, &states, 0)
                .buffers(&b, &records)
                .map(|_| ())
        })])
        .unwrap()
    };
    // The old records dropped; a new set with a far larger bound, allocated where they were.
    drop(cell.replace(StepStates::new(&[spec(1e6)], owned).unwrap()));
    let _more = StepStates::new(&[spec(1e6), spec(1e6)], owned).unwrap();
    for _ in 0..3 {
        graph.launch(rt.stream()).unwrap();
    }
    rt.synchronize().unwrap();
    let p = g.p.download().unwrap();
    // Adam's first steps on a constant gradient move each weight by lr (0.1): 5 → 4.9, clamped
    // to the recorded bound 1, then 0.9 and 0.8. With the replacement's bound the weights
    // would be 4.7.
    assert!(
        p.iter().all(|x| (x - 0.8).abs() < 1e-5),
        "the replay clamped with the recorded record's bound: {:?}",
        &p[..4]
    );
    assert_eq!(
        cell.borrow().read().unwrap()[0].step,
        0,
        "the new records were never advanced"
    );
}

/// The review's `TensorSet` synced again after capture: the graph keeps the tables (and the
/// tensors) it recorded; the set's new tables belong to the new tensors only.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_set_synced_again_after_capture_leaves_the_graph_its_own_tables() {
    let rt = runtime();
    let (mut a, mut b) = (vec![group(), group()], vec![group()]);
    let mut set = TensorSet::new();
    let states = iqn_states();
    let graph = {
        let tensors: Vec<_> = a.iter_mut().map(buffers).collect();
        states.advance(&rt, rt.stream()).unwrap();
        rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
            .stepped(&K, &states, 0)
            .set(&mut set, &tensors)
            .unwrap();
        rt.synchronize().unwrap();
        rt.capture(vec![Box::new(|s: &Stream| {
            states.advance(&rt, s)?;
            rt.launch::<iqn_adam_kernel::Entry>(s)
                .stepped(&K, &states, 0)
                .set(&mut set, &tensors)
                .map(|_| ())
        })])
        .unwrap()
    };
    let b_before = b[0].m.download().unwrap();
    // Rebuilt for other tensors: the old tables are freed by the set but kept by the graph.
    {
        let tensors: Vec<_> = b.iter_mut().map(buffers).collect();
        assert!(set.sync::<iqn_adam_kernel::Entry>(&tensors).unwrap());
    }
    let a_before = a[1].m.download().unwrap();
    graph.launch(rt.stream()).unwrap();
    rt.synchronize().unwrap();
    assert_ne!(
        a[1].m.download().unwrap(),
        a_before,
        "the replay updated its own tensors"
    );
    assert!(a
        .iter()
        .all(|t| t.p.download().unwrap().iter().all(|x| x.abs() <= 1.0)));
    assert_eq!(
        b[0].m.download().unwrap(),
        b_before,
        "the new set's tensors were untouched"
    );
}

/// `QAbsRef::Slot` reads the caller's buffer at every advance, and a NaN-check binding reads its
/// buffer at every check: both keep a share of it, so dropping the handle frees nothing they
/// read (memcheck: 0 errors), and they read what it held.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_q_abs_ref_slot_and_a_check_binding_outlive_their_handles() {
    let rt = runtime();
    let isv = DeviceArray::from_host(&[0.0, 3.0, 0.0]).unwrap();
    let hyper = AdamHyper::pytorch_defaults(1).unwrap();
    let spec = StepSpec::adam(&hyper, StepBound::FromQAbsRef).unwrap();
    let states = StepStates::new(
        &[spec],
        QAbsRef::Slot {
            buffer: &isv,
            index: 1,
        },
    )
    .unwrap();
    drop(isv);
    let _fresh = DeviceArray::filled(3, f32::NAN).unwrap();
    states.advance(&rt, rt.stream()).unwrap();
    rt.synchronize().unwrap();
    assert_eq!(
        states.read().unwrap()[0].bound,
        300.0,
        "100 × the kept slot's 3.0"
    );

    mod table {
        use super::*;
        adamant::runtime::slot_table! {
            "routes";
            0 activations: Check::NonFinite, Source::Activation { what: "a layer's output" };
        }
    }
    let mut data = vec![0.5f32; N];
    data[17] = f32::NAN;
    let watched = DeviceArray::from_host(&data).unwrap();
    let mut bindings = SlotBindings::new(table::TABLE);
    bindings.bind(table::slot::activations, &watched).unwrap();
    let mut checker = NanChecker::new(&rt, table::TABLE.all(), &bindings).unwrap();
    drop((watched, bindings));
    let _fresh = DeviceArray::filled(N, 0.5).unwrap();
    checker.enqueue(rt.stream(), 1.0).unwrap();
    let report = checker.report().unwrap();
    let slot = &report.slots[0];
    assert!(slot.tripped(), "the kept buffer's NaN: {report}");
    assert_eq!(slot.first_bad, Some(17));
}

/// A `UniformPtr` is `Copy`: one copied out of a `DeviceScalar` that was dropped would point a
/// kernel at freed memory. Every launch looks it up among the live scalars and refuses it.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_uniform_ptr_of_a_dropped_scalar_is_refused() {
    let rt = runtime();
    let mut g = group();
    let records = Records::single::<dqn_adam_update_kernel::Entry>().unwrap();
    let hyper = AdamHyper::pytorch_defaults(1).unwrap();
    let scale = DeviceScalar::new(0.5).unwrap();
    let ptr = scale.uniform_ptr();
    let mut launch = |grad_scale| {
        let k =
            adam_scalars!(dqn_adam_update_kernel, hyper, weight_decay: 0.0, grad_scale: grad_scale)
                .unwrap();
        let b = dqn_adam_update_kernel::Buffers {
            p: &mut g.p,
            g: g.g.input(),
            m: &mut g.m,
            v: &mut g.v,
        };
        rt.launch::<dqn_adam_update_kernel::Entry>(rt.stream())
            .plain(&k, BOUND)
            .buffers(&b, &records)
    };
    launch(ptr).unwrap();
    rt.synchronize().unwrap();
    drop(scale);
    let _fresh = DeviceArray::filled(1, f32::NAN).unwrap();
    match launch(ptr) {
        Err(Error::StaleUniform { kernel, name, .. }) => {
            assert_eq!((kernel, name), ("dqn_adam_update_kernel", "grad_scale"))
        }
        other => panic!("expected StaleUniform, got {other:?}"),
    }
    rt.synchronize().unwrap();
    assert_eq!(records.read().sequence, 1, "the refused launch never ran");
}

/// A stream captured by other code: no graph of adamant's would keep the launch's memory, so the
/// launch is refused (the capture itself needs `unsafe` driver calls).
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_launch_into_a_capture_adamant_did_not_begin_is_refused() {
    use adamant::runtime::cust::sys;
    let rt = runtime();
    let mut g = group();
    let records = Records::single::<iqn_adam_kernel::Entry>().unwrap();
    let states = iqn_states();
    states.advance(&rt, rt.stream()).unwrap();
    rt.synchronize().unwrap();
    let stream = adamant::runtime::cust::stream::Stream::new(
        adamant::runtime::cust::stream::StreamFlags::NON_BLOCKING,
        None,
    )
    .unwrap();
    let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    // SAFETY: a stream of ours; the capture is ended below.
    let begun = unsafe { sys::cuStreamBeginCapture_v2(stream.as_inner(), mode) };
    assert_eq!(begun, sys::CUresult::CUDA_SUCCESS);
    let b = buffers(&mut g);
    let refused = rt
        .launch::<iqn_adam_kernel::Entry>(&stream)
        .stepped(&K, &states, 0)
        .buffers(&b, &records);
    let mut graph: sys::CUgraph = std::ptr::null_mut();
    // SAFETY: ends the capture begun above.
    let ended = unsafe { sys::cuStreamEndCapture(stream.as_inner(), &mut graph) };
    assert_eq!(ended, sys::CUresult::CUDA_SUCCESS);
    match refused {
        Err(Error::InKernel {
            kernel: "iqn_adam_kernel_stepped",
            source,
        }) => match *source {
            Error::Capture { operation } => {
                assert!(operation.contains("other than"), "{operation}")
            }
            other => panic!("expected Capture, got {other:?}"),
        },
        other => panic!("expected Capture naming iqn_adam_kernel_stepped, got {other:?}"),
    }
    if !graph.is_null() {
        // SAFETY: the empty graph the capture gave us, never instantiated.
        unsafe { sys::cuGraphDestroy(graph) };
    }
}

/// Tables validated for one kernel are not reused by another, even over the same regions: the
/// second kernel's launch rebuilds (and validates) them under its own descriptor.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_set_validated_for_one_kernel_is_rebuilt_for_another() {
    let rt = runtime();
    let owned: Vec<DeviceBuffer<f32>> = (0..4)
        .map(|_| DeviceBuffer::from_slice(&vec![0.25f32; N]).unwrap())
        .collect();
    let r = |i: usize| DeviceRegion::new(owned[i].as_device_ptr().as_raw(), N).unwrap();
    let hyper = AdamHyper::pytorch_defaults(1).unwrap();
    let iqn = iqn_adam_kernel::Buffers {
        p: r(0),
        g: r(1),
        m: r(2),
        v: r(3),
    };
    let attn = attn_adam_kernel::Buffers {
        p: r(0),
        g: r(1),
        m: r(2),
        v: r(3),
    };
    let mut set = TensorSet::new();
    // SAFETY: the cust buffers outlive the launches (synchronised below).
    unsafe {
        let k = adam_scalars!(iqn_adam_kernel, hyper, weight_decay: 0.0).unwrap();
        rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
            .plain(&k, BOUND)
            .raw_set(&mut set, &[iqn])
            .unwrap();
        let k = adam_scalars!(attn_adam_kernel, hyper, weight_decay: 0.0).unwrap();
        rt.launch::<attn_adam_kernel::Entry>(rt.stream())
            .plain(&k, BOUND)
            .raw_set(&mut set, &[attn])
            .unwrap();
    }
    rt.synchronize().unwrap();
    assert_eq!(
        set.rebuilds(),
        2,
        "attn_adam_kernel validated the tables again"
    );
}

/// The ceiling on the device: a stepped multi-tensor launch whose step bound (9e17, from
/// `Q_ABS_REF` = 9e15) times the tensor's scale (2) passes 1e18 clamps that tensor at 1e18.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_tensor_bound_past_the_ceiling_saturates_there_on_the_device() {
    let rt = runtime();
    let hyper = AdamHyper::new(0.0, 0.9, 0.999, 1e-8, 0.0, 1).unwrap();
    let spec = StepSpec::adam(&hyper, StepBound::FromQAbsRef)
        .and_then(|s| {
            s.with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper {
                eps: 1e-8,
                weight_decay: 0.0,
            })
        })
        .unwrap();
    let states = StepStates::new(&[spec], QAbsRef::Owned { initial: 9e15 }).unwrap();
    // No infinite weight: L2 decay of 0 times an infinite weight is NaN before the clamp.
    let weights = [3e18f32, -5e18, 0.5, 1.5e18, -2e18, 9e17];
    let mut p = ParamBuffer::from_host(&weights).unwrap();
    let g = DeviceArray::zeroed(weights.len()).unwrap();
    let (mut m, mut v) = (
        DeviceArray::zeroed(weights.len()).unwrap(),
        DeviceArray::zeroed(weights.len()).unwrap(),
    );
    let mut set = TensorSet::new();
    let k = iqn_adam_kernel::StepScalars {};
    let tensors = [iqn_adam_kernel::Buffers {
        p: &mut p,
        g: g.input(),
        m: &mut m,
        v: &mut v,
    }];
    set.sync::<iqn_adam_kernel::Entry>(&tensors).unwrap();
    set.set_clamp_scales(&[2.0]).unwrap();
    states.advance(&rt, rt.stream()).unwrap();
    rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
        .stepped(&k, &states, 0)
        .set(&mut set, &tensors)
        .unwrap();
    rt.synchronize().unwrap();
    assert_eq!(states.read().unwrap()[0].bound, 100.0f32 * 9e15);
    let c = BOUND_CEILING;
    assert_eq!(p.download().unwrap(), [c, -c, 0.5, c, -c, 9e17]);
}
