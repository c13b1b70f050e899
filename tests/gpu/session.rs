//! A captured step that trains, on the GPU: the step, the learning rate, the clamp
//! bound and the check's thresholds advance at every replay, and the host works on the buffers
//! between replays.
//!
//! - 1000 replays against 1000 eager steps, bit for bit, with the lr on a schedule and
//!   `Q_ABS_REF` changing every 100 steps; both against an f64 reference at steps 1, 10 and 1000,
//!   and against plain launches with host-computed scalars (the same bits);
//! - a device `Q_ABS_REF` of NaN, −1 and +inf mid-run: reported, and the clamp stays on;
//! - the step as one fused launch against one launch per group: buffers and reports bit for
//!   bit, eager and replayed, and a session that switches between them mid-run;
//! - a checkpoint round-trip in the middle of a replayed run changes nothing;
//! - the stepped launches' own validation.
//!
//! Every test needs a CUDA GPU and is `#[ignore]`d with that reason.
#[path = "../support/mod.rs"]
mod support;

use adamant::reference::{self as r, KernelRef};
use adamant::rl::{
    OptimizerLaunch, SessionConfig, TrainingGroups, TrainingSession, SEED_TABLE, SLOTS,
};
use adamant::runtime::nan_check::{SlotBindings, Source};
use adamant::runtime::{
    AdamHyper, Adamant, ClampPolicy, Error, GroupBuffer, QAbsRef, Records, StepBound, StepSpec,
    StepStates,
};
use adamant::runtime::{DeviceArray, ParamBuffer};
use adamant_device::step::{advance, StepState, FLAG_BAD_Q_ABS_REF};
use adamant_kernels::optimizers::iqn_adam_kernel;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use small_groups::sizes;
use support::small_groups;

/// 1000 steps; 120 under compute-sanitizer (ADAMANT_SANITIZER_RUN=1), which instruments every
/// access (the plain run covers the full length).
fn steps() -> u32 {
    if std::env::var_os("ADAMANT_SANITIZER_RUN").is_some() {
        120
    } else {
        1000
    }
}

use support::runtime;

/// Deterministic initial weights: large enough in places that the bound bites when `Q_ABS_REF`
/// changes (|p| up to 300).
fn init(name: &str, n: usize) -> Vec<f32> {
    let seed = name.bytes().map(u64::from).sum::<u64>();
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            if i % 97 == 0 {
                rng.gen_range(-300.0..300.0)
            } else {
                rng.gen_range(-2.0..2.0)
            }
        })
        .collect()
}

/// The gradient of `group` at step `t` (a pure function: every run sees the same).
fn gradient(group: usize, n: usize, t: u32) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64((group as u64) << 32 | t as u64);
    (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect()
}

fn lr_at(t: u32) -> f32 {
    1e-2 / (1.0 + t as f32 / 100.0)
}

fn q_at(t: u32) -> f32 {
    // Changes every 100 steps: 0.5, 1.5, 2.5, ... (the first is below 1: bound 100).
    0.5 + (t / 100) as f32
}

fn hyper() -> AdamHyper {
    AdamHyper::new(lr_at(1), 0.9, 0.999, 1e-8, 0.01, 1).unwrap()
}

fn session(rt: &Adamant) -> TrainingSession<'_> {
    let groups = TrainingGroups::new(sizes(), init).unwrap();
    let cfg = SessionConfig::uniform(hyper());
    TrainingSession::new(rt, groups, cfg, QAbsRef::Owned { initial: q_at(1) }, None).unwrap()
}

/// Uploads step `t`'s gradients and sets its lr and Q_ABS_REF.
fn prepare(s: &mut TrainingSession<'_>, t: u32) {
    let names = s
        .group_names()
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
    for (i, name) in names.iter().enumerate() {
        let n = s.groups().all()[i].len();
        s.upload(name, GroupBuffer::Grads, &gradient(i, n, t))
            .unwrap();
    }
    s.set_lr_all(lr_at(t)).unwrap();
    s.set_q_abs_ref(q_at(t)).unwrap();
}

fn weights(s: &TrainingSession<'_>) -> Vec<Vec<f32>> {
    let names = s
        .group_names()
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
    names
        .iter()
        .flat_map(|n| {
            let mut out = vec![
                s.download(n, GroupBuffer::Params).unwrap(),
                s.download(n, GroupBuffer::M).unwrap(),
                s.download(n, GroupBuffer::V).unwrap(),
            ];
            if n == "curiosity" {
                out.push(s.download(n, GroupBuffer::VMax).unwrap());
            }
            out
        })
        .collect()
}

fn same_bits(a: &[Vec<f32>], b: &[Vec<f32>], what: &str) {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let bad = x
            .iter()
            .zip(y)
            .position(|(p, q)| p.to_bits() != q.to_bits() && !(p.is_nan() && q.is_nan()));
        assert!(bad.is_none(), "{what}: buffer {i} differs at {bad:?}");
    }
}

/// The f64 reference of the IQN group (its kernel: Adam with L2 decay) over `steps` steps with
/// the schedule, the bound from Q_ABS_REF.
fn reference_iqn(steps: u32) -> Vec<f64> {
    let n = sizes().iqn_online;
    let p0 = init("iqn_online", n);
    let mut e: Vec<r::Elem> = p0
        .iter()
        .map(|&p| r::Elem::new(p as f64, 0.0, 0.0, 0.0))
        .collect();
    for t in 1..=steps {
        let g = gradient(2, n, t);
        let hp = r::Hyper::new(lr_at(t), 0.9, 0.999, 1e-8, 0.01, t as u64);
        let bound = 100.0 * (q_at(t) as f64).max(1.0);
        for (x, &gi) in e.iter_mut().zip(&g) {
            *x = r::step(KernelRef::Iqn, *x, gi as f64, &hp, bound);
        }
    }
    e.iter().map(|x| x.p).collect()
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn replays_train_like_eager_steps_bit_for_bit() {
    let rt = runtime();
    let mut eager = session(&rt);
    let mut replayed = session(&rt);
    let nodes = replayed.capture().unwrap();
    assert_eq!(
        nodes, 2,
        "guard-and-advance + one fused launch (no check, no copy nodes)"
    );
    let mut bound_changed = false;
    let mut last_bound = 0.0;
    let last = steps();
    for t in 1..=last {
        prepare(&mut eager, t);
        prepare(&mut replayed, t);
        eager.step().unwrap();
        replayed.replay().unwrap();
        if [1, 10, 100, 101, 500, last].contains(&t) {
            let (a, b) = (weights(&eager), weights(&replayed));
            same_bits(&a, &b, &format!("step {t}"));
            let report = replayed.report().unwrap();
            assert_eq!(report.states[0].step, t);
            assert_eq!(report.states[2].bound, 100.0 * q_at(t).max(1.0));
            assert_eq!(
                report.states[7].bound, 0.0,
                "the DT record keeps its clamp off"
            );
            assert_eq!(report.states[2].lr, lr_at(t));
            if last_bound != 0.0 && report.states[2].bound != last_bound {
                bound_changed = true;
            }
            last_bound = report.states[2].bound;
        }
        if [1, 10, last].contains(&t) {
            let gpu = replayed
                .download("iqn_online", GroupBuffer::Params)
                .unwrap();
            let reference = reference_iqn(t);
            let worst = gpu
                .iter()
                .zip(&reference)
                .map(|(&g, &r)| (g as f64 - r).abs() / r.abs().max(1.0))
                .fold(0.0f64, f64::max);
            println!("session step {t}: max error vs f64 reference {worst:.3e}");
            assert!(worst < 2e-3, "step {t}: max relative error {worst}");
            if t == 1 {
                // The bound (100 at Q_ABS_REF 0.5) caught the large initial weights.
                assert!(gpu.iter().any(|x| x.abs() == 100.0));
            }
        }
    }
    assert!(bound_changed);
    assert_eq!(replayed.steps(), last as u64);
}

/// Everything a session reports, as text (NaN equals NaN), but the address of its own device
/// `Q_ABS_REF` in its records.
fn comparable(s: &TrainingSession<'_>) -> String {
    let mut report = s.report().unwrap();
    for state in &mut report.states {
        state.q_abs_ref = 0;
    }
    format!("{report:?}")
}

/// The step as one fused launch (`OptimizerLaunch::Fused`) against one launch per group: the
/// buffers and the whole report (records, clamp pressure, group slots) bit for bit, eager for
/// the first half of the run and replayed for the second, and a third session that switches
/// from one to the other mid-run and back (its reports stay fresh). A captured fused step is two
/// nodes: the guard-and-advance pass and the one optimizer launch.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn the_fused_launch_matches_the_per_group_launches_bit_for_bit() {
    let rt = runtime();
    let mut per_group = session(&rt);
    let mut fused = session(&rt);
    let mut switching = session(&rt);
    assert_eq!(
        fused.optimizer_launch(),
        OptimizerLaunch::Fused,
        "the default"
    );
    per_group.set_optimizer_launch(OptimizerLaunch::PerGroup);
    let last = steps();
    let half = last / 2;
    for t in 1..=last {
        if t == half + 1 {
            assert!(per_group.capture().unwrap() >= 9);
            assert_eq!(
                fused.capture().unwrap(),
                2,
                "guard-and-advance + one fused launch"
            );
        }
        // The third session: per group for the middle fifth of the run, fused around it.
        if t == last / 5 * 2 + 1 {
            switching.set_optimizer_launch(OptimizerLaunch::PerGroup);
        }
        if t == last / 5 * 3 + 1 {
            switching.set_optimizer_launch(OptimizerLaunch::Fused);
        }
        for s in [&mut per_group, &mut fused, &mut switching] {
            prepare(s, t);
        }
        if t > half {
            per_group.replay().unwrap();
            fused.replay().unwrap();
        } else {
            per_group.step().unwrap();
            fused.step().unwrap();
        }
        switching.step().unwrap();
        if [
            1,
            2,
            10,
            half,
            half + 1,
            last / 5 * 2 + 1,
            last / 5 * 3 + 1,
            last,
        ]
        .contains(&t)
        {
            let expected = weights(&per_group);
            same_bits(&expected, &weights(&fused), &format!("fused, step {t}"));
            same_bits(
                &expected,
                &weights(&switching),
                &format!("switching, step {t}"),
            );
            let expected = comparable(&per_group);
            assert_eq!(expected, comparable(&fused), "step {t}");
            assert_eq!(expected, comparable(&switching), "step {t}");
            if t == 1 {
                // The clamp caught weights at step 1 (|p| up to 300 against a bound of 100), so
                // the records compared hold catches, not only empty words.
                let report = fused.report().unwrap();
                assert!(report.pressure.iter().any(|p| p.clamped > 0));
            }
        }
    }
    // Every group saw weights in the last step's records too.
    let report = fused.report().unwrap();
    assert!(report.pressure.iter().all(|p| p.max_raw > 0.0));
    // A replay after a switch needs a new capture.
    fused.set_optimizer_launch(OptimizerLaunch::PerGroup);
    assert!(matches!(fused.replay(), Err(Error::Capture { .. })));
}

/// The bound visibly changes the weights when Q_ABS_REF changes: the same run with a higher
/// Q_ABS_REF at step 1 keeps the large initial weights that the lower one clamps.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_new_q_abs_ref_moves_the_bound_on_the_next_replay() {
    let rt = runtime();
    let mut s = session(&rt);
    s.capture().unwrap();
    prepare(&mut s, 1);
    s.set_q_abs_ref(5.0).unwrap(); // bound 500: nothing clamped
    s.replay().unwrap();
    let loose = s.download("iqn_online", GroupBuffer::Params).unwrap();
    assert!(loose.iter().any(|x| x.abs() > 150.0));
    s.set_q_abs_ref(1.5).unwrap(); // bound 150, same graph
    s.replay().unwrap();
    let tight = s.download("iqn_online", GroupBuffer::Params).unwrap();
    assert!(tight.iter().all(|x| x.abs() <= 150.0));
    assert!(tight.iter().any(|x| x.abs() == 150.0));
}

/// Plain launches with host-computed scalars give the same bits as the stepped launches.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn stepped_launches_match_plain_launches() {
    let rt = runtime();
    let n = 10_000;
    let filled = |x: f32| DeviceArray::from_host(&vec![x; n]).unwrap();
    let params = || ParamBuffer::from_host(&vec![0.5; n]).unwrap();
    let g0: Vec<f32> = (0..n).map(|i| ((i % 13) as f32 - 6.0) * 0.1).collect();
    let (mut p1, mut m1, mut v1) = (params(), filled(0.0), filled(0.0));
    let (mut p2, mut m2, mut v2) = (params(), filled(0.0), filled(0.0));
    let g = DeviceArray::from_host(&g0).unwrap();
    let (records1, records2) = (
        Records::single::<iqn_adam_kernel::Entry>().unwrap(),
        Records::single::<iqn_adam_kernel::Entry>().unwrap(),
    );
    let spec = StepSpec::adam(&hyper(), StepBound::FromQAbsRef)
        .and_then(|s| {
            s.with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper {
                eps: 1e-8,
                weight_decay: 0.01,
            })
        })
        .unwrap();
    let states = StepStates::new(&[spec], QAbsRef::Owned { initial: 0.0 }).unwrap();
    let step_scalars = iqn_adam_kernel::StepScalars {};
    for t in 1..=50u32 {
        states.set_lr(rt.stream(), 0, lr_at(t)).unwrap();
        states.advance(&rt, rt.stream()).unwrap();
        let b = iqn_adam_kernel::Buffers {
            p: &mut p1,
            g: g.input(),
            m: &mut m1,
            v: &mut v1,
        };
        rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
            .stepped(&step_scalars, &states, 0)
            .buffers(&b, &records1)
            .unwrap();
        let h = AdamHyper {
            lr: lr_at(t),
            step: t as u64,
            ..hyper()
        };
        let iqn = adamant::runtime::adam_scalars!(iqn_adam_kernel, h, weight_decay: 0.01).unwrap();
        let b = iqn_adam_kernel::Buffers {
            p: &mut p2,
            g: g.input(),
            m: &mut m2,
            v: &mut v2,
        };
        rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
            .plain(&iqn, ClampPolicy::from_isv(0.0))
            .buffers(&b, &records2)
            .unwrap();
    }
    rt.synchronize().unwrap();
    let host = |b: &DeviceArray| b.download().unwrap();
    same_bits(
        &[p1.download().unwrap(), host(&m1), host(&v1)],
        &[p2.download().unwrap(), host(&m2), host(&v2)],
        "stepped vs plain",
    );
    // And the device's records equal the host mirror of `advance`.
    let mut mirror = StepState {
        lr: lr_at(50),
        ..states.read().unwrap()[0]
    };
    mirror.step = 49;
    advance(&mut mirror, 0.0);
    assert_eq!(states.read().unwrap()[0], mirror);
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_bad_device_q_abs_ref_is_reported_and_the_clamp_stays_on() {
    let rt = runtime();
    let groups = TrainingGroups::new(sizes(), |_, n| vec![1e6; n]).unwrap();
    let cfg = SessionConfig::uniform(hyper());
    let mut s =
        TrainingSession::new(&rt, groups, cfg, QAbsRef::Owned { initial: 2.0 }, None).unwrap();
    s.capture().unwrap();
    s.replay().unwrap();
    let report = s.report().unwrap();
    assert_eq!(report.states[2].bound, 200.0);
    assert!(report.bad_q_abs_ref().is_none());
    // f32::MAX overflows the bound, 3e36 gives one past the ceiling (it could never bite).
    let bad_values = [f32::NAN, -1.0, f32::INFINITY, f32::MAX, 3e36];
    for (k, bad) in bad_values.into_iter().enumerate() {
        s.set_q_abs_ref(bad).unwrap();
        s.replay().unwrap();
        let report = s.report().unwrap();
        let (count, value, step) = report.bad_q_abs_ref().expect("reported");
        assert_eq!(count, k as u32 + 1, "{bad}");
        assert_eq!(value.to_bits(), bad.to_bits(), "{bad}");
        assert_eq!(step, report.states[0].step);
        for (i, st) in report.states.iter().enumerate() {
            if i == 7 {
                assert_eq!(st.bound, 0.0);
                continue;
            }
            assert_eq!(st.flags & FLAG_BAD_Q_ABS_REF, FLAG_BAD_Q_ABS_REF);
            assert_eq!(st.bound, 200.0, "record {i} keeps the last valid bound");
            assert_eq!(st.q_abs_ref_eff, 2.0);
        }
        let p = s.download("iqn_online", GroupBuffer::Params).unwrap();
        assert!(p.iter().all(|x| x.is_finite() && x.abs() <= 200.0), "{bad}");
    }
    // A valid value again: the bound follows it; the flag stays as a record of the past.
    s.set_q_abs_ref(3.0).unwrap();
    s.replay().unwrap();
    let report = s.report().unwrap();
    assert_eq!(report.states[2].bound, 300.0);
    assert_eq!(
        report.bad_q_abs_ref().unwrap().0,
        bad_values.len() as u32,
        "every bad value counted, the valid one not"
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_checkpoint_round_trip_mid_run_changes_nothing() {
    let rt = runtime();
    let mut a = session(&rt);
    let mut b = session(&rt);
    a.capture().unwrap();
    b.capture().unwrap();
    for t in 1..=200 {
        prepare(&mut a, t);
        prepare(&mut b, t);
        a.replay().unwrap();
        b.replay().unwrap();
        if t == 100 {
            // Save b's weights and moments, scribble over them, restore them.
            let saved = weights(&b);
            let names = b
                .group_names()
                .into_iter()
                .map(str::to_string)
                .collect::<Vec<_>>();
            let mut k = 0;
            for name in &names {
                let buffers: &[GroupBuffer] = if name == "curiosity" {
                    &[
                        GroupBuffer::Params,
                        GroupBuffer::M,
                        GroupBuffer::V,
                        GroupBuffer::VMax,
                    ]
                } else {
                    &[GroupBuffer::Params, GroupBuffer::M, GroupBuffer::V]
                };
                for &buffer in buffers {
                    let len = saved[k].len();
                    b.upload(name, buffer, &vec![7.0; len]).unwrap();
                    b.upload(name, buffer, &saved[k]).unwrap();
                    k += 1;
                }
            }
        }
    }
    same_bits(&weights(&a), &weights(&b), "after a checkpoint round-trip");
}

/// A session saved to a file mid-run and loaded into a new session (zero weights, captured
/// before the load) goes on as the uninterrupted one: every group's buffers and every record
/// equal at the end, bit for bit. A file of a session with other groups is refused, and the
/// refused load changes nothing.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_session_saved_to_a_file_resumes_exactly() {
    let rt = runtime();
    let total = steps() / 5;
    let at = total / 2;
    let path = std::env::temp_dir().join(format!(
        "adamant-session-{}.safetensors",
        std::process::id()
    ));
    let snapped = path.with_extension("snapshot.safetensors");
    let side = adamant::runtime::cust::stream::Stream::new(
        adamant::runtime::cust::stream::StreamFlags::NON_BLOCKING,
        None,
    )
    .unwrap();
    let mut a = session(&rt);
    a.capture().unwrap();
    let mut pending = None;
    for t in 1..=total {
        prepare(&mut a, t);
        a.replay().unwrap();
        if t == at {
            a.save(&path).unwrap();
            pending = Some(a.snapshot().unwrap());
        }
        if t == at + 1 {
            // Read after the next step was enqueued: still the state at step `at`.
            let taken = pending.take().unwrap().read(&side).unwrap();
            taken.save(&snapped).unwrap();
        }
    }
    let (saved, taken) = (
        adamant::runtime::checkpoint::Checkpoint::load(&path).unwrap(),
        adamant::runtime::checkpoint::Checkpoint::load(&snapped).unwrap(),
    );
    assert!(
        saved.names().eq(taken.names())
            && saved.names().all(|n| saved.get(n) == taken.get(n))
            && saved.metadata_entries().eq(taken.metadata_entries()),
        "a session's snapshot is its save"
    );
    let groups = TrainingGroups::new(sizes(), |_, n| vec![0.0; n]).unwrap();
    let cfg = SessionConfig::uniform(hyper());
    let mut b =
        TrainingSession::new(&rt, groups, cfg, QAbsRef::Owned { initial: q_at(1) }, None).unwrap();
    b.capture().unwrap();
    b.load(&path).unwrap();
    for t in at + 1..=total {
        prepare(&mut b, t);
        b.replay().unwrap();
    }
    rt.synchronize().unwrap();
    assert_eq!(weights(&a), weights(&b), "buffers after {total} steps");
    // Every field of every record, but the address of each session's own `Q_ABS_REF` word
    // (two sessions, two allocations; a checkpoint saves no address).
    let records = |s: &TrainingSession| {
        let mut r = s.states().read_records().unwrap();
        for x in &mut r {
            x.state.q_abs_ref = 0;
        }
        r
    };
    assert_eq!(records(&a), records(&b));
    // A session of other group sizes: refused, naming the tensor; nothing changes.
    let other = TrainingGroups::new(
        adamant::rl::GroupSizes {
            iqn_online: sizes().iqn_online + 1,
            ..sizes()
        },
        |_, n| vec![0.0; n],
    )
    .unwrap();
    let mut c = TrainingSession::new(
        &rt,
        other,
        SessionConfig::uniform(hyper()),
        QAbsRef::Owned { initial: q_at(1) },
        None,
    )
    .unwrap();
    let before = weights(&c);
    match c.load(&path) {
        Err(Error::Checkpoint(e)) => assert!(e.to_string().contains("iqn_online"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(weights(&c), before);
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&snapped);
}

/// The session's check reads its thresholds from the record: a weight past 1e3 × q_abs_ref_eff
/// trips slot 48 at the Q_ABS_REF of that step, not the captured one.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn the_captured_check_follows_the_device_q_abs_ref() {
    let rt = runtime();
    let act = DeviceArray::from_host(&vec![0.5f32; 1024]).unwrap();
    let mut bindings = SlotBindings::new(SEED_TABLE);
    for spec in SLOTS {
        if let Source::Activation { .. } = spec.source {
            bindings
                .bind(SEED_TABLE.id(spec.index).unwrap(), &act)
                .unwrap();
        }
    }
    let groups = TrainingGroups::new(sizes(), |name, n| {
        let big = if name == "iqn_online" { 1500.0 } else { 0.5 };
        vec![big; n]
    })
    .unwrap();
    // The clamp off for this test's purpose would need another policy; instead the weights
    // start at 1500 with Q_ABS_REF 20 (bound 2000, threshold 2e4): quiet. Then Q_ABS_REF 1
    // (bound 100: the clamp pulls the weights to 100, threshold 1e3): still quiet, and the
    // report's q_abs_ref_eff follows.
    let cfg = SessionConfig::uniform(AdamHyper::new(0.0, 0.9, 0.999, 1e-8, 0.0, 1).unwrap());
    let mut s = TrainingSession::new(
        &rt,
        groups,
        cfg,
        QAbsRef::Owned { initial: 20.0 },
        Some(bindings),
    )
    .unwrap();
    s.capture().unwrap();
    s.replay().unwrap();
    let report = s.report().unwrap();
    let nan = report.nan;
    assert_eq!(nan.q_abs_ref_eff, 20.0);
    nan.ensure_quiet().unwrap();
    s.set_q_abs_ref(1.0).unwrap();
    s.replay().unwrap();
    let nan = s.report().unwrap().nan;
    assert_eq!(nan.q_abs_ref_eff, 1.0);
    nan.ensure_quiet().unwrap();
    let p = s.download("iqn_online", GroupBuffer::Params).unwrap();
    assert!(p.iter().all(|&x| x == 100.0));
    // A NaN weight is found by the captured check.
    let mut bad = p.clone();
    bad[17] = f32::NAN;
    s.upload("iqn_online", GroupBuffer::Params, &bad).unwrap();
    s.replay().unwrap();
    let nan = s.report().unwrap().nan;
    let tripped: Vec<String> = nan.tripped().map(|r| r.name.to_string()).collect();
    assert!(
        tripped.iter().any(|name| name == "iqn_weight_max"),
        "{tripped:?}"
    );
    assert_eq!(iqn_weight_slot(&nan).first_bad, Some(17), "{nan}");
    // The kernel's last block reset its accumulators: with the weights restored, the next
    // replays are quiet again, and later faults report their own first index (NaN passes the
    // clamp, which does not hide it; an inf would be clamped to the bound).
    s.upload("iqn_online", GroupBuffer::Params, &p).unwrap();
    for _ in 0..3 {
        s.replay().unwrap();
        s.report().unwrap().nan.ensure_quiet().unwrap();
    }
    bad = p.clone();
    bad[1234] = f32::NAN;
    bad[1500] = f32::NAN;
    s.upload("iqn_online", GroupBuffer::Params, &bad).unwrap();
    s.replay().unwrap();
    let nan = s.report().unwrap().nan;
    assert_eq!(iqn_weight_slot(&nan).first_bad, Some(1234), "{nan}");
}

/// Slot 48, `iqn_weight_max`, of a report.
fn iqn_weight_slot(nan: &adamant_runtime::NanReport) -> &adamant_runtime::nan_check::SlotResult {
    nan.slots
        .iter()
        .find(|r| r.name == "iqn_weight_max")
        .expect("slot 48 in the report")
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn stepped_launches_validate_before_enqueueing() {
    let rt = runtime();
    let n = 256;
    let filled = |x: f32| DeviceArray::from_host(&vec![x; n]).unwrap();
    let mut p = ParamBuffer::from_host(&vec![0.5; n]).unwrap();
    let (g, mut m, mut v) = (filled(0.1), filled(0.0), filled(0.0));
    let records = Records::single::<iqn_adam_kernel::Entry>().unwrap();
    let spec = StepSpec::adam(&hyper(), StepBound::FromQAbsRef)
        .and_then(|s| {
            s.with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper {
                eps: 1e-8,
                weight_decay: 0.0,
            })
        })
        .unwrap();
    let states = StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 }).unwrap();
    let scalars = iqn_adam_kernel::StepScalars {};
    let b = iqn_adam_kernel::Buffers {
        p: &mut p,
        g: g.input(),
        m: &mut m,
        v: &mut v,
    };
    let launch = |index| {
        rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
            .stepped(&scalars, &states, index)
            .buffers(&b, &records)
    };
    assert!(matches!(launch(0), Err(Error::NotAdvanced { .. })));
    states.advance(&rt, rt.stream()).unwrap();
    assert!(matches!(
        launch(1),
        Err(Error::InKernel { kernel: "iqn_adam_kernel_stepped", source })
            if matches!(*source, Error::StepIndex { index: 1, len: 1 })
    ));
    let info = launch(0).unwrap();
    assert_eq!(info.kernel, "iqn_adam_kernel_stepped");
    assert!(info.bound.is_nan());
    for bad in [f32::NAN, -1.0, f32::INFINITY] {
        assert!(matches!(
            states.set_lr(rt.stream(), 0, bad),
            Err(Error::InvalidHyper { field: "lr", .. })
        ));
    }
    assert!(matches!(
        states.set_lr(rt.stream(), 3, 1e-3),
        Err(Error::StepIndex { .. })
    ));
    // eps lives in the record: a value outside its domain is refused, and the record keeps
    // its eps.
    let refused = states.set_scalar(rt.stream(), 0, "eps", 0.0f32);
    assert!(matches!(
        refused,
        Err(Error::InvalidScalar { name: "eps", .. })
    ));
    rt.synchronize().unwrap();
    assert_eq!(states.read().unwrap()[0].step, 1);
    let words = states.read_records().unwrap()[0].scalars;
    assert_eq!(f32::from_bits(words[0]), 1e-8);
}
