//! Every parameter group's slots come from its optimizer launch's diagnostics records,
//! on the GPU, through a `TrainingSession` of the seed's eight groups plus one added group:
//!
//! - the fault matrix through the optimizer, into every group: NaN or inf in g, NaN in m, inf in
//!   v, a weight past the bound (the clamp catches it), an infinite weight with the clamp off
//!   (the decision transformer's). Each case trips exactly the slots the fault reaches in that
//!   step (a NaN gradient reaches m, v and the weights), all of that group and at the injected
//!   element, and no other; a clamped weight trips nothing and shows as clamp pressure at that
//!   element. Eagerly and in a captured graph.
//! - the added group has its slots without a line of the table, and every group of the session
//!   has a non-finite slot on each of its buffers and a max-abs slot on its weights.
//! - clamp pressure over steps: a group pushed outward by a constant gradient shows rising
//!   clamp hits, step by step, in the time series.
#[path = "../support/mod.rs"]
mod support;

use adamant::rl::{
    slot, ClampPressureLog, SessionConfig, TrainingGroups, TrainingSession, SEED_TABLE, SLOTS,
};
use adamant::runtime::nan_check::{GroupSlot, SlotBindings, Source};
use adamant::runtime::DeviceArray;
use adamant::runtime::{AdamHyper, Adamant, GroupBuffer, ParamGroup, QAbsRef};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use small_groups::sizes;
use support::small_groups;

const ADDED: &str = "world_model";
/// The bound of every clamped group: 100 × max(Q_ABS_REF, 1).
const BOUND: f32 = 100.0;

use support::runtime;

fn init(name: &str, n: usize) -> Vec<f32> {
    let seed = name.bytes().map(u64::from).sum::<u64>();
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen_range(-2.0..2.0)).collect()
}

/// The eight groups and the added one, with small random gradients.
fn groups() -> TrainingGroups {
    let mut groups = TrainingGroups::new(sizes(), init).unwrap();
    groups
        .extra
        .push(ParamGroup::new(ADDED, &init(ADDED, 3001)).unwrap());
    for (i, g) in groups.every_mut().into_iter().enumerate() {
        let mut rng = SmallRng::seed_from_u64(i as u64);
        let grads: Vec<f32> = (0..g.len()).map(|_| rng.gen_range(-1e-2..1e-2)).collect();
        g.upload(GroupBuffer::Grads, &grads).unwrap();
    }
    groups
}

/// Zeroed buffers for every activation slot of the table.
fn activations() -> (SlotBindings, Vec<DeviceArray>) {
    let mut bindings = SlotBindings::new(SEED_TABLE);
    let mut buffers = Vec::new();
    for spec in SLOTS {
        if let Source::Activation { .. } = spec.source {
            buffers.push(DeviceArray::zeroed(1000).unwrap());
            bindings
                .bind(SEED_TABLE.id(spec.index).unwrap(), buffers.last().unwrap())
                .unwrap();
        }
    }
    (bindings, buffers)
}

fn session<'rt>(rt: &'rt Adamant, bindings: SlotBindings) -> TrainingSession<'rt> {
    let cfg = SessionConfig::uniform(AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.01, 1).unwrap());
    TrainingSession::new(
        rt,
        groups(),
        cfg,
        QAbsRef::Owned { initial: 0.5 },
        Some(bindings),
    )
    .unwrap()
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    NanGrad,
    InfGrad,
    NanM,
    InfV,
    /// A weight ten bounds out: the clamp brings it back (no slot may trip).
    DriftedWeight,
    /// An infinite weight: caught by the clamp, or, without one, a non-finite weight.
    InfiniteWeight,
}

const FAULTS: [Fault; 6] = [
    Fault::NanGrad,
    Fault::InfGrad,
    Fault::NanM,
    Fault::InfV,
    Fault::DriftedWeight,
    Fault::InfiniteWeight,
];

/// How a group's kernel treats it.
#[derive(Clone, Copy)]
struct Kind {
    /// The clamp is on (all but the decision transformer).
    clamped: bool,
    /// AMSGrad's `v_max` (curiosity).
    amsgrad: bool,
    /// L2 decay `g += wd·p` (IQN, IQL): an infinite weight makes the decayed gradient infinite.
    l2: bool,
}

fn kind(group: &str) -> Kind {
    Kind {
        clamped: group != "decision_transformer",
        amsgrad: group == "curiosity",
        l2: group == "iqn_online" || group == "iql",
    }
}

/// The buffers a fault reaches in one step.
fn reached(fault: Fault, k: Kind) -> Vec<GroupBuffer> {
    use GroupBuffer::*;
    let mut all = match fault {
        // g non-finite: the group's step guard skips the step (nothing is written, so m, v and
        // the weight stay finite), and the gradient slot reports the guard's verdict.
        Fault::NanGrad | Fault::InfGrad => vec![Grads],
        // m NaN: the weight follows; v does not depend on m.
        Fault::NanM => vec![M, Params],
        // v inf: m / (sqrt(inf) + eps) = 0, the weight stays finite.
        Fault::InfV => vec![V],
        Fault::DriftedWeight => vec![],
        // Through L2 decay the gradient becomes infinite: m and v follow, the weight is NaN.
        Fault::InfiniteWeight if k.l2 => vec![M, V, Params],
        // Decoupled (or no) decay: the raw weight is -inf, which the clamp brings to -bound.
        Fault::InfiniteWeight if k.clamped => vec![],
        Fault::InfiniteWeight => vec![Params],
    };
    if k.amsgrad && all.contains(&V) {
        all.push(VMax); // v_max = max(v_max, v) keeps the non-finite v
    }
    all
}

fn inject(s: &mut TrainingSession<'_>, group: &str, fault: Fault, at: usize) {
    let len = s.download(group, GroupBuffer::Params).unwrap().len();
    let set = |s: &mut TrainingSession<'_>, buffer: GroupBuffer, value: f32| {
        let mut data = s.download(group, buffer).unwrap();
        data[at] = value;
        assert_eq!(data.len(), len);
        s.upload(group, buffer, &data).unwrap();
    };
    match fault {
        Fault::NanGrad => set(s, GroupBuffer::Grads, f32::NAN),
        Fault::InfGrad => set(s, GroupBuffer::Grads, f32::INFINITY),
        Fault::NanM => set(s, GroupBuffer::M, f32::NAN),
        Fault::InfV => set(s, GroupBuffer::V, f32::INFINITY),
        Fault::DriftedWeight => set(s, GroupBuffer::Params, 10.0 * BOUND),
        Fault::InfiniteWeight => set(s, GroupBuffer::Params, -f32::INFINITY),
    }
}

fn slots_of<'a>(
    s: &'a TrainingSession<'_>,
    group: &str,
    buffers: &[GroupBuffer],
) -> Vec<&'a GroupSlot> {
    s.group_slots()
        .iter()
        .filter(|slot| slot.group == group && buffers.contains(&slot.buffer))
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn faults_through_the_optimizer_trip_exactly_their_slots_and_element() {
    let rt = runtime();
    let (bindings, _activations) = activations();
    let names: Vec<String> = session(&rt, bindings.clone())
        .group_names()
        .into_iter()
        .map(str::to_string)
        .collect();
    let mut cases = 0;
    // Under compute-sanitizer, two groups (one of the table, the added one) cover the paths.
    let sanitizer = std::env::var_os("ADAMANT_SANITIZER_RUN").is_some();
    for (g, group) in names.iter().enumerate() {
        if sanitizer && group != "iqn_online" && group != ADDED {
            continue;
        }
        for fault in FAULTS {
            for captured in [false, true] {
                let mut s = session(&rt, bindings.clone());
                let len = s.download(group, GroupBuffer::Params).unwrap().len();
                let at = (len * (2 + g) / 13).min(len - 1);
                inject(&mut s, group, fault, at);
                if captured {
                    s.capture().unwrap();
                    s.replay().unwrap();
                } else {
                    s.step().unwrap();
                }
                let report = s.report().unwrap();
                let k = kind(group);
                let want = reached(fault, k);
                let expected: Vec<&GroupSlot> = slots_of(&s, group, &want);
                let case = format!("{group} {fault:?} at {at} (captured: {captured})");
                let tripped: Vec<&str> = report.nan.tripped().map(|r| r.name.as_str()).collect();
                let mut wanted: Vec<&str> = expected.iter().map(|s| s.name.as_str()).collect();
                wanted.sort();
                let mut got = tripped.clone();
                got.sort();
                assert_eq!(got, wanted, "{case}: {}", report.nan);
                for r in report.nan.tripped() {
                    assert_eq!(r.first_bad, Some(at as u64), "{case}: {r}");
                }
                // The guard skipped exactly the group whose gradient is non-finite.
                let gradient_fault = matches!(fault, Fault::NanGrad | Fault::InfGrad);
                for (i, guard) in report.guards.iter().enumerate() {
                    let skipped = gradient_fault && i == g;
                    assert_eq!(guard.skip, skipped as u32, "{case}: group {i} {guard:?}");
                    assert_eq!(guard.skipped_steps, skipped as u32, "{case}: group {i}");
                    assert_eq!(report.states[i].step, if skipped { 0 } else { 1 }, "{case}");
                }
                // Clamp pressure: exactly the injected weight for a weight past a bound.
                let p = report.pressure.iter().find(|p| p.group == *group).unwrap();
                let caught = k.clamped
                    && (fault == Fault::DriftedWeight || (fault == Fault::InfiniteWeight && !k.l2));
                if caught {
                    assert_eq!(
                        (p.clamped, p.first_clamped),
                        (1, Some(at as u64)),
                        "{case}: {p:?}"
                    );
                    assert!(p.overshoot() > 1.0, "{case}: {p:?}");
                } else {
                    assert_eq!(p.clamped, 0, "{case}: {p:?}");
                }
                for other in report.pressure.iter().filter(|p| p.group != *group) {
                    assert_eq!(other.clamped, 0, "{case}: {} caught a weight", other.group);
                }
                cases += 1;
            }
        }
    }
    println!(
        "fault matrix through the optimizer: {cases} cases ({} groups × {} faults, eager and \
         captured), each tripped exactly its slots at its element",
        names.len(),
        FAULTS.len()
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn every_stepped_group_is_watched_and_an_added_group_needs_no_table_line() {
    let rt = runtime();
    let (bindings, _activations) = activations();
    let mut s = session(&rt, bindings);
    // The table's layout is the report's: every table slot at its index with its name.
    s.step().unwrap();
    let report = s.report().unwrap();
    assert!(report.nan.is_quiet(), "{}", report.nan);
    for spec in SLOTS {
        let r = report.nan.slot(SEED_TABLE.id(spec.index).unwrap()).unwrap();
        assert_eq!(r.name, spec.name);
    }
    assert_eq!(
        report.nan.slot(slot::iqn_weight_max).map(|r| r.index),
        Some(48)
    );
    // The added group's slots follow the table's (after the weight maxima the table lacks).
    for name in [
        "world_model_weights",
        "world_model_weight_max",
        "world_model_grads",
        "world_model_m",
        "world_model_v",
    ] {
        let r = report
            .nan
            .slot_named(name)
            .unwrap_or_else(|| panic!("{name}: {}", report.nan));
        assert!(r.index >= SLOTS.len(), "{name} at {}", r.index);
    }
    // Every group the session steps: a non-finite slot on each buffer, a max-abs on the weights.
    for group in s.group_names() {
        let amsgrad = group == "curiosity";
        let mut buffers = vec![
            GroupBuffer::Params,
            GroupBuffer::Grads,
            GroupBuffer::M,
            GroupBuffer::V,
        ];
        if amsgrad {
            buffers.push(GroupBuffer::VMax);
        }
        for b in buffers {
            assert!(
                s.group_slots()
                    .iter()
                    .any(|slot| slot.group == group && slot.buffer == b),
                "{group} {b:?} unwatched"
            );
        }
        assert!(s.group_slots().iter().any(|slot| slot.group == group
            && slot.buffer == GroupBuffer::Params
            && matches!(
                slot.check,
                adamant::runtime::nan_check::Check::MaxAbs { .. }
            )));
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_drifting_group_shows_rising_clamp_hits_before_anything_trips() {
    let rt = runtime();
    let (bindings, _activations) = activations();
    let mut s = session(&rt, bindings);
    // Curiosity's weights (Adam without decay) spread from 0 to 100: a constant gradient moves
    // each by about lr per step, carrying more of them past the bound every step.
    let group = "curiosity";
    let n = s.download(group, GroupBuffer::Params).unwrap().len();
    let spread: Vec<f32> = (0..n).map(|i| 100.0 * i as f32 / n as f32).collect();
    s.upload(group, GroupBuffer::Params, &spread).unwrap();
    s.upload(group, GroupBuffer::Grads, &vec![-1.0; n]).unwrap();
    s.set_lr(group, 2.0).unwrap();
    s.capture().unwrap();
    let mut log = ClampPressureLog::new();
    for _ in 0..20 {
        s.replay().unwrap();
        let report = s.report().unwrap();
        assert!(
            report.nan.is_quiet(),
            "the clamp keeps every slot quiet: {}",
            report.nan
        );
        log.push(&report);
    }
    let hits: Vec<u32> = log.group(group).map(|p| p.clamped).collect();
    assert!(hits.windows(2).all(|w| w[1] >= w[0]), "{hits:?}");
    assert!(hits[19] > hits[0] && hits[0] > 0, "{hits:?}");
    let csv = log.to_csv();
    assert_eq!(
        csv.lines().count(),
        1 + 20 * 9,
        "a header and one row per group and step"
    );
    println!("clamp hits of a drifting group over 20 replays: {hits:?}");
}
