//! Prepared launches (`Launch::prepare`, `Prepared::enqueue`): checked once, enqueued again and
//! again. Against the launch they stand for, on the GPU: a prepared stepped Adam trains bit for
//! bit as the stepped launch does, step after step, with a learning rate set between enqueues
//! and with its enqueues captured into a graph; a plain launch whose scalars change every step
//! is refused before anything runs, and one whose scalars are fixed (the soft update's `tau`)
//! is prepared and matches its own launch.
//!
//! Every test needs a CUDA GPU and is `#[ignore]`d with that reason.
#[path = "../support/mod.rs"]
mod support;

use adamant::kernels::soft_update::soft_update_kernel;
use adamant::runtime::cust::stream::Stream;
use adamant::runtime::{
    adam_scalars, AdamHyper, ClampPolicy, DeviceArray, Error, Owned, ParamBuffer, Records,
    StepStates,
};
use adamant_kernels::optimizers::{attn_adam_kernel, iqn_adam_kernel};

use support::runtime;

const N: usize = 4099;

/// One tensor's buffers: weights in [-1, 1] and gradients in [-5, 5] varying by element
/// (`support::pseudo`), so the clamp at 1 catches some, and zero moments.
struct Group {
    p: ParamBuffer,
    g: DeviceArray,
    m: DeviceArray,
    v: DeviceArray,
}

fn group() -> Group {
    let p: Vec<f32> = (0..N).map(|i| support::pseudo(i, 0)).collect();
    let g: Vec<f32> = (0..N).map(|i| 5.0 * support::pseudo(i, 1)).collect();
    Group {
        p: ParamBuffer::from_host(&p).unwrap(),
        g: DeviceArray::from_host(&g).unwrap(),
        m: DeviceArray::zeroed(N).unwrap(),
        v: DeviceArray::zeroed(N).unwrap(),
    }
}

fn buffers(g: &mut Group) -> iqn_adam_kernel::Buffers<Owned<'_>> {
    iqn_adam_kernel::Buffers {
        p: &mut g.p,
        g: g.g.input(),
        m: &mut g.m,
        v: &mut g.v,
    }
}

fn bits(a: &[f32]) -> Vec<u32> {
    a.iter().map(|x| x.to_bits()).collect()
}

/// One record for `iqn_adam_kernel`: lr 1e-2, a fixed bound of 1 (`support::fixed_bound_states`).
fn states() -> StepStates {
    support::fixed_bound_states::<iqn_adam_kernel::Entry>(
        iqn_adam_kernel::Hyper {
            eps: 1e-8,
            weight_decay: 0.01,
        },
        1e-2,
        1.0,
        0,
    )
}

/// The two groups' weights and moments are the same bits, and so are their records.
fn assert_same(a: &Group, b: &Group, ra: &Records, rb: &Records, what: &str) {
    for (x, y, name) in [(&a.m, &b.m, "m"), (&a.v, &b.v, "v")] {
        assert_eq!(
            bits(&x.download().unwrap()),
            bits(&y.download().unwrap()),
            "{what}: {name}"
        );
    }
    let (pa, pb) = (a.p.download().unwrap(), b.p.download().unwrap());
    assert_eq!(bits(&pa), bits(&pb), "{what}: p");
    assert!(pa.iter().all(|x| x.abs() <= 1.0), "{what}: the clamp held");
    assert_eq!(ra.read(), rb.read(), "{what}: records");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_prepared_stepped_launch_trains_as_its_launch_does_eager_and_captured() {
    let rt = runtime();
    let s = rt.stream();
    let (mut a, mut b) = (group(), group());
    let (sa, sb) = (states(), states());
    let (ra, rb) = (
        Records::single::<iqn_adam_kernel::Entry>().unwrap(),
        Records::single::<iqn_adam_kernel::Entry>().unwrap(),
    );
    let scalars = iqn_adam_kernel::StepScalars {};
    let launched = |a: &mut Group| {
        sa.advance(&rt, s).unwrap();
        rt.launch::<iqn_adam_kernel::Entry>(s)
            .stepped(&scalars, &sa, 0)
            .buffers(&buffers(a), &ra)
            .unwrap();
    };
    sb.advance(&rt, s).unwrap();
    let mut prepared = rt
        .launch::<iqn_adam_kernel::Entry>(s)
        .stepped(&scalars, &sb, 0)
        .prepare(buffers(&mut b), &rb)
        .unwrap();
    assert_eq!(prepared.info().kernel, "iqn_adam_kernel_stepped");
    assert_eq!(prepared.info().elements, N);
    for step in 0..40 {
        if step == 20 {
            // A learning rate set between enqueues is the one the next enqueue reads.
            sa.set_lr(s, 0, 3e-3).unwrap();
            sb.set_lr(s, 0, 3e-3).unwrap();
        }
        launched(&mut a);
        if step > 0 {
            sb.advance(&rt, s).unwrap();
        }
        prepared.enqueue().unwrap();
    }
    // Captured: the advance and the enqueue, replayed.
    let graph = rt
        .capture_step(
            Box::new(|s: &Stream| sb.advance(&rt, s)),
            vec![],
            Box::new(|_: &Stream| prepared.enqueue().map(|_| ())),
        )
        .unwrap();
    for _ in 0..10 {
        launched(&mut a);
        graph.launch(s).unwrap();
    }
    rt.synchronize().unwrap();
    drop(graph);
    drop(prepared);
    assert_eq!(rb.read().sequence, 50);
    assert_eq!(sb.read().unwrap()[0].step, 50);
    assert_same(&a, &b, &ra, &rb, "50 steps, 10 of them replayed");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_plain_launch_is_prepared_only_when_its_scalars_are_fixed() {
    let rt = runtime();
    let s = rt.stream();
    // Adam's bias corrections change every step: refused, nothing enqueued.
    let mut a = group();
    let records = Records::single::<attn_adam_kernel::Entry>().unwrap();
    let hyper = AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.01, 3).unwrap();
    let scalars = adam_scalars!(attn_adam_kernel, hyper, weight_decay: 0.01).unwrap();
    let before = a.p.download().unwrap();
    let refused = rt
        .launch::<attn_adam_kernel::Entry>(s)
        .plain(&scalars, ClampPolicy::Fixed { bound: 1.0 })
        .prepare(
            attn_adam_kernel::Buffers {
                p: &mut a.p,
                g: a.g.input(),
                m: &mut a.m,
                v: &mut a.v,
            },
            &records,
        );
    match refused {
        Err(Error::FrozenScalar { kernel, scalar, .. }) => {
            assert_eq!(kernel, "attn_adam_kernel");
            assert!(!scalar.is_empty());
        }
        Err(other) => panic!("expected FrozenScalar, got {other}"),
        Ok(_) => panic!("a plain Adam launch was prepared"),
    }
    rt.synchronize().unwrap();
    assert_eq!(records.read().sequence, 0, "nothing ran");
    assert_eq!(bits(&a.p.download().unwrap()), bits(&before));

    // The soft update's tau is a #[hyper]: its plain launch is prepared, and matches.
    let online =
        DeviceArray::from_host(&(0..N).map(|i| i as f32 * 1e-3).collect::<Vec<_>>()).unwrap();
    let (mut ta, mut tb) = (group(), group());
    let (ra, rb) = (
        Records::single::<soft_update_kernel::Entry>().unwrap(),
        Records::single::<soft_update_kernel::Entry>().unwrap(),
    );
    let tau = soft_update_kernel::Scalars { tau: 0.3 };
    let policy = ClampPolicy::Fixed { bound: 2.0 };
    let mut prepared = rt
        .launch::<soft_update_kernel::Entry>(s)
        .plain(&tau, policy)
        .prepare(
            soft_update_kernel::Buffers {
                target: &mut tb.p,
                online: online.input(),
            },
            &rb,
        )
        .unwrap();
    for _ in 0..5 {
        rt.launch::<soft_update_kernel::Entry>(s)
            .plain(&tau, policy)
            .buffers(
                &soft_update_kernel::Buffers {
                    target: &mut ta.p,
                    online: online.input(),
                },
                &ra,
            )
            .unwrap();
        prepared.enqueue().unwrap();
    }
    rt.synchronize().unwrap();
    drop(prepared);
    assert_eq!(
        bits(&ta.p.download().unwrap()),
        bits(&tb.p.download().unwrap())
    );
    assert_eq!(ra.read(), rb.read());
    assert_eq!(rb.read().sequence, 5);
}
