//! The fused entry (`adamant_fused_step`, `fused_optimizer!`) on the GPU: one launch over six
//! groups, each with its own rule and step record (a group with `lr = 0` among them), must leave
//! every buffer and every diagnostics record bit for bit as the per-rule launches it replaces
//! (each rule's stepped multi-tensor entry over its group), eager and replayed from a graph, for
//! 1000 steps. The per-rule launches are themselves checked against the f64 reference in
//! `gpu_multi_tensor`. Every test needs a CUDA GPU and is ignored without one.
#[path = "../support/mod.rs"]
mod support;

use adamant::device::abi::UniformPtr;
use adamant::kernels::fused::adamant_fused_step;
use adamant::kernels::optimizers::{
    attn_adam_kernel, curiosity_adam_step, dqn_adam_update_kernel, iql_adam_kernel, iqn_adam_kernel,
};
use adamant::kernels::soft_update::soft_update_kernel;
use adamant::reference::KernelRef;
use adamant::runtime::{
    AdamHyper, Adamant, Branch, ClampPolicy, Error, FusedSet, FusedTensor, Owned, QAbsRef,
    StepBound, StepSpec, StepStates, TensorSet,
};
use cust::stream::Stream;
use rand::rngs::SmallRng;
use rand::SeedableRng;

use multi_step::*;
use support::multi_step;

/// Sizes of each group's tensors: one element, a partial group of four, two chunks and a bit,
/// three chunks and a bit (chunks are 2048 elements).
const FUSED_SIZES: [usize; 4] = [1, 3, 4097, 6149];
const BOUND: f32 = 1.5;
/// The groups, in record order: the five Adam rules (attention with `lr = 0`) and a soft update.
const GROUPS: usize = 6;

/// One world: every group's tensors (the soft update's as `p` = target, `g` = online) and its
/// records.
struct World {
    groups: Vec<Vec<DevTensor>>,
    states: StepStates,
}

fn specs() -> Vec<StepSpec> {
    let bound = StepBound::Policy(ClampPolicy::Fixed { bound: BOUND });
    let spec = |h: &AdamHyper| StepSpec::adam(h, bound).unwrap();
    let h = |k| hyper(k);
    let (dqn, iqn, iql, cur) = (
        h(KernelRef::Dqn),
        h(KernelRef::Iqn),
        h(KernelRef::Iql),
        h(KernelRef::Curiosity),
    );
    let attn = AdamHyper::new(0.0, 0.9, 0.999, 1e-8, 0.01, 3).unwrap();
    vec![
        spec(&dqn)
            .with_kernel::<dqn_adam_update_kernel::Entry>(dqn_adam_update_kernel::Hyper {
                eps: dqn.eps,
                weight_decay: dqn.weight_decay,
            })
            .unwrap(),
        spec(&iqn)
            .with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper {
                eps: iqn.eps,
                weight_decay: iqn.weight_decay,
            })
            .unwrap(),
        spec(&iql)
            .with_kernel::<iql_adam_kernel::Entry>(iql_adam_kernel::Hyper {
                eps: iql.eps,
                weight_decay: iql.weight_decay,
                grad_clip: GRAD_CLIP,
            })
            .unwrap(),
        spec(&attn)
            .with_kernel::<attn_adam_kernel::Entry>(attn_adam_kernel::Hyper {
                eps: attn.eps,
                weight_decay: attn.weight_decay,
            })
            .unwrap(),
        spec(&cur)
            .with_kernel::<curiosity_adam_step::Entry>(curiosity_adam_step::Hyper { eps: cur.eps })
            .unwrap(),
        spec(&dqn)
            .with_kernel::<soft_update_kernel::Entry>(soft_update_kernel::Hyper { tau: 0.3 })
            .unwrap(),
    ]
}

fn world(host: &[Vec<HostTensor>]) -> World {
    World {
        groups: host
            .iter()
            .map(|g| g.iter().map(upload).collect())
            .collect(),
        states: StepStates::new(&specs(), QAbsRef::Owned { initial: 1.0 }).unwrap(),
    }
}

const DQN_S: dqn_adam_update_kernel::StepScalars = dqn_adam_update_kernel::StepScalars {
    grad_scale: UniformPtr::NULL,
};

/// The soft-update group's buffers: each tensor's `p` is the target, its `g` the online net.
fn soft_buffers(group: &mut [DevTensor]) -> Vec<soft_update_kernel::Buffers<Owned<'_>>> {
    group
        .iter_mut()
        .map(|t| soft_update_kernel::Buffers {
            target: &mut t.p,
            online: t.g.input(),
        })
        .collect()
}

/// The per-rule step: each group's rule's stepped multi-tensor entry, with its own tables.
fn per_rule(
    rt: &Adamant,
    s: &Stream,
    w: &mut World,
    sets: &mut [TensorSet],
) -> adamant::runtime::Result<()> {
    let World { groups, states } = w;
    let [g0, g1, g2, g3, g4, g5] = &mut groups[..] else {
        unreachable!("six groups")
    };
    let [s0, s1, s2, s3, s4, s5] = sets else {
        unreachable!("six sets")
    };
    macro_rules! run {
        ($k:ident, $scalars:expr, $g:expr, $set:expr, $record:expr $(, $v_max:ident)?) => {{
            let b = buffers!($k, $g $(, $v_max)?);
            rt.launch::<$k::Entry>(s).stepped(&$scalars, states, $record).set($set, &b)?;
        }};
    }
    run!(dqn_adam_update_kernel, DQN_S, g0, s0, 0);
    run!(iqn_adam_kernel, iqn_adam_kernel::StepScalars {}, g1, s1, 1);
    run!(iql_adam_kernel, iql_adam_kernel::StepScalars {}, g2, s2, 2);
    run!(
        attn_adam_kernel,
        attn_adam_kernel::StepScalars {},
        g3,
        s3,
        3
    );
    run!(
        curiosity_adam_step,
        curiosity_adam_step::StepScalars {},
        g4,
        s4,
        4,
        v_max
    );
    let soft = soft_buffers(g5);
    rt.launch::<soft_update_kernel::Entry>(s)
        .stepped(&soft_update_kernel::StepScalars {}, states, 5)
        .set(s5, &soft)?;
    Ok(())
}

/// The fused step: every tensor of every group in one launch, in group order.
fn fused(
    rt: &Adamant,
    s: &Stream,
    w: &mut World,
    set: &mut FusedSet,
) -> adamant::runtime::Result<()> {
    let World { groups, states } = w;
    let [g0, g1, g2, g3, g4, g5] = &mut groups[..] else {
        unreachable!("six groups")
    };
    let (b0, b1, b2, b3) = (
        buffers!(dqn_adam_update_kernel, g0),
        buffers!(iqn_adam_kernel, g1),
        buffers!(iql_adam_kernel, g2),
        buffers!(attn_adam_kernel, g3),
    );
    let b4 = buffers!(curiosity_adam_step, g4, v_max);
    let b5 = soft_buffers(g5);
    let mut tensors = FusedTensor::group::<dqn_adam_update_kernel::Entry>(&b0, &DQN_S, 0)?;
    tensors.extend(FusedTensor::group::<iqn_adam_kernel::Entry>(
        &b1,
        &iqn_adam_kernel::StepScalars {},
        1,
    )?);
    tensors.extend(FusedTensor::group::<iql_adam_kernel::Entry>(
        &b2,
        &iql_adam_kernel::StepScalars {},
        2,
    )?);
    tensors.extend(FusedTensor::group::<attn_adam_kernel::Entry>(
        &b3,
        &attn_adam_kernel::StepScalars {},
        3,
    )?);
    let cur = curiosity_adam_step::StepScalars {};
    tensors.extend(FusedTensor::group::<curiosity_adam_step::Entry>(
        &b4, &cur, 4,
    )?);
    let soft = soft_update_kernel::StepScalars {};
    tensors.extend(FusedTensor::group::<soft_update_kernel::Entry>(
        &b5, &soft, 5,
    )?);
    rt.launch_fused::<adamant_fused_step::Entry>(s, set, &tensors, states)?;
    Ok(())
}

/// Every buffer of both worlds, bit for bit.
fn assert_same_buffers(what: &str, a: &World, b: &World) {
    for (g, (ga, gb)) in a.groups.iter().zip(&b.groups).enumerate() {
        for (t, (ta, tb)) in ga.iter().zip(gb).enumerate() {
            let (x, y) = (download(ta), download(tb));
            for (name, u, v) in [
                ("p", &x.p, &y.p),
                ("g", &x.g, &y.g),
                ("m", &x.m, &y.m),
                ("v", &x.v, &y.v),
                ("v_max", &x.v_max, &y.v_max),
            ] {
                let bits = |s: &[f32]| s.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                if let Some(i) = (0..u.len()).find(|&i| u[i].to_bits() != v[i].to_bits()) {
                    panic!(
                        "{what}: group {g} tensor {t} `{name}` differs at {i}: per-rule {} vs fused {}",
                        u[i], v[i]
                    );
                }
                assert_eq!(bits(u), bits(v));
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn fused_step_is_bit_identical_to_the_per_rule_launches_eager_and_captured() {
    let rt = Adamant::new().expect("needs a CUDA GPU");
    let mut rng = SmallRng::seed_from_u64(2512);
    let host: Vec<Vec<HostTensor>> = (0..GROUPS)
        .map(|_| {
            FUSED_SIZES
                .iter()
                .map(|&n| random(&mut rng, n, BOUND))
                .collect()
        })
        .collect();
    let (mut a, mut b, mut c) = (world(&host), world(&host), world(&host));
    let mut sets: Vec<TensorSet> = (0..GROUPS).map(|_| TensorSet::new()).collect();
    let mut fset = FusedSet::new();
    // The same launch on a grid of 3 blocks and chunks of 1024: each block takes many chunks
    // of many tensors in turn, flushing its record at every change of tensor.
    let mut capped = FusedSet::with_chunk_elements(1024)
        .unwrap()
        .with_max_blocks(std::num::NonZeroU32::new(3).unwrap());
    let s = rt.stream();
    // Under compute-sanitizer (which instruments every access) a few steps of each kind.
    let sanitized = std::env::var_os("ADAMANT_SANITIZER_RUN").is_some();
    let (eager, replays) = if sanitized { (10, 10) } else { (500, 500) };
    for _ in 0..eager {
        a.states.advance(&rt, s).unwrap();
        per_rule(&rt, s, &mut a, &mut sets).unwrap();
        b.states.advance(&rt, s).unwrap();
        fused(&rt, s, &mut b, &mut fset).unwrap();
        c.states.advance(&rt, s).unwrap();
        fused(&rt, s, &mut c, &mut capped).unwrap();
    }
    rt.synchronize().unwrap();
    assert_eq!(fset.rebuilds(), 1, "the fused tables are built once");
    assert_same_buffers("eager", &a, &b);
    assert_same_records(&sets, &fset);
    assert_same_buffers("eager, capped grid", &a, &c);
    assert_same_records(&sets, &capped);
    // The same steps replayed from two graphs (advance, then the launches).
    {
        let (wa, wb, wc) = (&mut a, &mut b, &mut c);
        let (sets, fset, capped) = (&mut sets, &mut fset, &mut capped);
        let rt = &rt;
        let ga = rt
            .capture(vec![Box::new(move |s: &Stream| {
                wa.states.advance(rt, s)?;
                per_rule(rt, s, wa, sets)
            }) as Branch<'_>])
            .unwrap();
        let gb = rt
            .capture(vec![Box::new(move |s: &Stream| {
                wb.states.advance(rt, s)?;
                fused(rt, s, wb, fset)
            }) as Branch<'_>])
            .unwrap();
        let gc = rt
            .capture(vec![Box::new(move |s: &Stream| {
                wc.states.advance(rt, s)?;
                fused(rt, s, wc, capped)
            }) as Branch<'_>])
            .unwrap();
        for _ in 0..replays {
            ga.launch(s).unwrap();
            gb.launch(s).unwrap();
            gc.launch(s).unwrap();
        }
        rt.synchronize().unwrap();
    }
    assert_same_buffers("replayed", &a, &b);
    assert_same_records(&sets, &fset);
    assert_same_buffers("replayed, capped grid", &a, &c);
    assert_same_records(&sets, &capped);
    let steps = a.states.read().unwrap();
    assert_eq!(
        steps[0].step as usize,
        2 + eager + replays,
        "records advanced every step"
    );
    assert_eq!(b.states.read().unwrap(), steps);
    // The lr = 0 group's weights moved only by the clamp (AdamW's decay is lr·wd = 0 too).
    let frozen = download(&b.groups[3][2]);
    let start = &host[3][2].p;
    for (i, (x, y)) in frozen.p.iter().zip(start).enumerate() {
        let clamped = if y.abs() > BOUND {
            BOUND.copysign(*y)
        } else {
            *y
        };
        assert!(
            x.to_bits() == clamped.to_bits() || (x.is_nan() && y.is_nan()),
            "lr = 0: element {i} moved from {y} to {x}"
        );
    }
    println!(
        "fused: {} steps eager + {} replayed, {} tensors in {} groups, bit-identical to the per-rule launches",
        eager, replays, GROUPS * FUSED_SIZES.len(), GROUPS
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_fused_launch_refuses_bad_tensors_and_launches_nothing() {
    let rt = Adamant::new().expect("needs a CUDA GPU");
    let mut rng = SmallRng::seed_from_u64(2513);
    let host: Vec<Vec<HostTensor>> = (0..GROUPS)
        .map(|_| {
            FUSED_SIZES
                .iter()
                .map(|&n| random(&mut rng, n, BOUND))
                .collect()
        })
        .collect();
    let mut w = world(&host);
    let s = rt.stream();
    let mut set = FusedSet::new();
    // Not advanced yet: the records' step is 0.
    {
        let g = &mut w.groups[1];
        let b = buffers!(iqn_adam_kernel, g);
        let t = vec![FusedTensor::new::<iqn_adam_kernel::Entry>(
            &b[0],
            &iqn_adam_kernel::StepScalars {},
            1,
        )
        .unwrap()];
        let e = rt
            .launch_fused::<adamant_fused_step::Entry>(s, &mut set, &t, &w.states)
            .unwrap_err();
        assert!(e.to_string().contains("never advanced"), "{e}");
    }
    w.states.advance(&rt, s).unwrap();
    let before = download(&w.groups[1][2]);
    let g = &mut w.groups[1];
    let b = buffers!(iqn_adam_kernel, g);
    // A record made for another kernel (record 2 is iql's).
    let t = vec![FusedTensor::new::<iqn_adam_kernel::Entry>(
        &b[2],
        &iqn_adam_kernel::StepScalars {},
        2,
    )
    .unwrap()];
    let e = rt
        .launch_fused::<adamant_fused_step::Entry>(s, &mut set, &t, &w.states)
        .unwrap_err();
    assert!(
        matches!(&e, Error::InTensor { tensor: 0, source } if matches!(**source, Error::RecordKernel { .. })),
        "{e}"
    );
    // A record past the end.
    let t = vec![FusedTensor::new::<iqn_adam_kernel::Entry>(
        &b[2],
        &iqn_adam_kernel::StepScalars {},
        9,
    )
    .unwrap()];
    let e = rt
        .launch_fused::<adamant_fused_step::Entry>(s, &mut set, &t, &w.states)
        .unwrap_err();
    assert!(e.to_string().contains("record 9 does not exist"), "{e}");
    // A kernel that is not one of the entry's rules (a downstream crate's).
    let mut momentum = adamant::runtime::DeviceArray::from_host(&before.m).unwrap();
    let mut p = adamant::runtime::ParamBuffer::from_host(&before.p).unwrap();
    let grads = adamant::runtime::DeviceArray::from_host(&before.g).unwrap();
    let sgd = custom_optimizer_kernels::sgd_momentum_kernel::Buffers {
        p: &mut p,
        g: grads.input(),
        momentum_buffer: &mut momentum,
    };
    let t = vec![
        FusedTensor::new::<custom_optimizer_kernels::sgd_momentum_kernel::Entry>(
            &sgd,
            &custom_optimizer_kernels::sgd_momentum_kernel::StepScalars {},
            0,
        )
        .unwrap(),
    ];
    let e = rt
        .launch_fused::<adamant_fused_step::Entry>(s, &mut set, &t, &w.states)
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::NotARule {
                tensor: 0,
                rule: "sgd_momentum_kernel",
                ..
            }
        ),
        "{e}"
    );
    // The same tensor twice: its written buffers overlap.
    let t = vec![
        FusedTensor::new::<iqn_adam_kernel::Entry>(&b[2], &iqn_adam_kernel::StepScalars {}, 1)
            .unwrap(),
        FusedTensor::new::<iqn_adam_kernel::Entry>(&b[2], &iqn_adam_kernel::StepScalars {}, 1)
            .unwrap(),
    ];
    let e = rt
        .launch_fused::<adamant_fused_step::Entry>(s, &mut set, &t, &w.states)
        .unwrap_err();
    assert!(matches!(e, Error::Overlap { .. }), "{e}");
    assert!(e.to_string().contains("adamant_fused_step"), "{e}");
    rt.synchronize().unwrap();
    drop(b);
    let after = download(&w.groups[1][2]);
    assert_eq!(
        before.p.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        after.p.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        "a refused launch wrote nothing"
    );
    assert_eq!(
        set.rebuilds(),
        0,
        "no tables were built for a refused launch"
    );
    println!(
        "fused: refused not-advanced, wrong-kernel and missing records and an overlapping set"
    );
}
