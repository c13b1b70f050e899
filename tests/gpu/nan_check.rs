//! The fused NaN / max-abs checker on the GPU, against the CPU reference
//! (`adamant::nan_check_reference`):
//! - clean data leaves every slot quiet, over the seed's range 24..=48, all 49 slots in one
//!   launch, and single-slot ranges;
//! - the fault-injection matrix: NaN, +inf, -inf and an over-threshold value injected into each
//!   slot in turn at its first and last element (slots of length 0 and 1 included): exactly that
//!   slot trips, with the right bits, max |x| and first index; every other slot stays quiet;
//! - thresholds follow `Q_ABS_REF` per launch, results reset between checks, the first bad index
//!   is the smallest across blocks, `bind_group` binds slot 48 to the IQN weights, and the errors
//!   that must come before any launch.
//!
//! Every test needs a CUDA GPU and is `#[ignore]`d with that reason. With
//! `ADAMANT_SANITIZER_RUN=1` (compute-sanitizer) the slots are kept small.
#[path = "../support/mod.rs"]
mod support;

use std::ops::RangeInclusive;

use adamant::nan_check_reference as reference;
use adamant_device::nan_check::{FLAG_NON_FINITE, FLAG_OVER_THRESHOLD};
use adamant_rl::{
    slot, GroupSizes, SessionConfig, StepConfig, TrainingGroups, ALL_SLOTS, FUSED_RANGE,
    SEED_TABLE, SLOTS, SLOT_COUNT,
};
use adamant_runtime::cust::context::CurrentContext;
use adamant_runtime::nan_check::Source;
use adamant_runtime::nan_check::{
    q_abs_ref_eff, Check, NanChecker, NanReport, SlotBindings, CHECK_CHUNK_ELEMENTS,
};
use adamant_runtime::DeviceArray;
use adamant_runtime::{AdamHyper, Adamant, Error, GroupBuffer, ParamGroup};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The slot of length 0 and the slot of length 1 (both inside the seed's range).
const EMPTY_SLOT: usize = 33;
const SINGLE_SLOT: usize = 34;
/// The large, skewed slot (the DQN trunk weights).
const LARGE_SLOT: usize = 36;

fn sanitizer_run() -> bool {
    std::env::var("ADAMANT_SANITIZER_RUN").is_ok_and(|v| v == "1")
}

use support::runtime;

/// Skewed slot lengths: one large slot, slots of 0 and 1, the rest spread over a few chunks
/// (tails that end mid-chunk, exact chunk multiples). Small under the sanitizer.
fn slot_lens() -> Vec<usize> {
    let (large, spread) = if sanitizer_run() {
        (3 * CHECK_CHUNK_ELEMENTS + 17, CHECK_CHUNK_ELEMENTS + 300)
    } else {
        (1 << 22, 5 * CHECK_CHUNK_ELEMENTS)
    };
    (0..SLOT_COUNT)
        .map(|i| match i {
            EMPTY_SLOT => 0,
            SINGLE_SLOT => 1,
            LARGE_SLOT => large,
            30 => CHECK_CHUNK_ELEMENTS,
            31 => 2 * CHECK_CHUNK_ELEMENTS,
            _ => 2 + (i * 7919) % spread,
        })
        .collect()
}

/// One device buffer per slot, with a host copy that always equals it.
struct SlotData {
    host: Vec<Vec<f32>>,
    device: Vec<DeviceArray>,
}

impl SlotData {
    /// Random values in ±50: below every threshold at `Q_ABS_REF` ≥ 0 (the smallest is
    /// `q_value_max`'s 1e2 × 1.0).
    fn new(lens: &[usize], seed: u64) -> SlotData {
        let mut rng = SmallRng::seed_from_u64(seed);
        let host: Vec<Vec<f32>> = lens
            .iter()
            .map(|&len| (0..len).map(|_| rng.gen_range(-50.0f32..50.0)).collect())
            .collect();
        let device = host
            .iter()
            .map(|h| DeviceArray::from_host(h).expect("allocating slot data"))
            .collect();
        fence();
        SlotData { host, device }
    }

    fn bindings(&self) -> SlotBindings {
        let mut bindings = SlotBindings::new(SEED_TABLE);
        for (index, buffer) in self.device.iter().enumerate() {
            bindings
                .bind(SEED_TABLE.id(index).unwrap(), buffer)
                .unwrap();
        }
        bindings
    }

    /// Writes one element on the host and the device; returns the previous value.
    fn set(&mut self, slot: usize, at: usize, value: f32) -> f32 {
        let old = std::mem::replace(&mut self.host[slot][at], value);
        self.device[slot]
            .upload(&self.host[slot])
            .expect("writing the slot");
        fence();
        old
    }
}

/// An upload runs on the legacy default stream and may return before its DMA lands; the
/// checker runs on the runtime's non-blocking stream, which does not wait for it.
fn fence() {
    CurrentContext::synchronize().expect("synchronizing the context");
}

fn check(adamant: &Adamant, checker: &mut NanChecker<'_>, q_abs_ref: f32) -> NanReport {
    checker
        .enqueue(adamant.stream(), q_abs_ref)
        .expect("enqueueing the check");
    checker.report().expect("reading the report")
}

/// Every slot of the report agrees with the CPU reference on the same data.
fn assert_matches_reference(report: &NanReport, data: &SlotData, q_abs_ref: f32, case: &str) {
    assert_eq!(report.slots.len(), report.range.clone().count());
    for result in &report.slots {
        let expected = reference::check_slot(&data.host[result.index], result.check, q_abs_ref);
        assert!(
            expected.matches(result),
            "{case}: slot {} `{}`: GPU {result:?}, reference {expected:?}",
            result.index,
            result.name
        );
        assert_eq!(result.len, data.host[result.index].len());
    }
}

fn assert_quiet(report: &NanReport, case: &str) {
    assert!(report.is_quiet(), "{case}: {report}");
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn clean_data_is_quiet_over_every_range() {
    let adamant = runtime();
    let data = SlotData::new(&slot_lens(), 1);
    let bindings = data.bindings();
    for range in [
        FUSED_RANGE,
        ALL_SLOTS,
        26..=26,
        48..=48,
        EMPTY_SLOT..=SINGLE_SLOT,
    ] {
        let mut checker = NanChecker::new(&adamant, range.clone(), &bindings).unwrap();
        for q_abs_ref in [0.0, 1.0, 37.5] {
            let report = check(&adamant, &mut checker, q_abs_ref);
            assert_eq!(report.range, range);
            assert_quiet(&report, &format!("{range:?} q {q_abs_ref}"));
            assert_matches_reference(&report, &data, q_abs_ref, &format!("clean {range:?}"));
        }
    }
}

/// The value injected for each kind of fault, and the bits it must set in `slot`.
fn injection(kind: &str, check: Check, q_abs_ref: f32) -> (f32, u32) {
    match kind {
        "NaN" => (f32::NAN, FLAG_NON_FINITE),
        "+inf" => (f32::INFINITY, FLAG_NON_FINITE),
        "-inf" => (f32::NEG_INFINITY, FLAG_NON_FINITE),
        // Twice the threshold, negative (|x| is what counts). A non-finite-only slot has no
        // threshold: a huge finite value must leave it quiet.
        "over" => match check.threshold(q_abs_ref_eff(q_abs_ref)) {
            Some(threshold) => (-2.0 * threshold, FLAG_OVER_THRESHOLD),
            None => (-1e30, 0),
        },
        _ => unreachable!(),
    }
}

/// Injects every fault into every slot of `range` at its first and last element, checking each
/// case with one launch over the whole range. Returns the number of cases.
fn injection_matrix(adamant: &Adamant, range: RangeInclusive<usize>, q_abs_ref: f32) -> usize {
    let mut data = SlotData::new(&slot_lens(), 7);
    let bindings = data.bindings();
    let mut checker = NanChecker::new(adamant, range.clone(), &bindings).unwrap();
    assert_quiet(&check(adamant, &mut checker, q_abs_ref), "before injecting");
    let mut cases = 0;
    for index in range.clone() {
        let len = data.host[index].len();
        if len == 0 {
            continue; // nothing to inject; its quiet result is checked in every case below
        }
        let spec = &SLOTS[index];
        for kind in ["NaN", "+inf", "-inf", "over"] {
            let (value, bits) = injection(kind, spec.check, q_abs_ref);
            let mut positions = vec![0, len - 1];
            positions.dedup();
            for at in positions {
                let case = format!("{kind} in slot {index} `{}` at {at} of {len}", spec.name);
                let old = data.set(index, at, value);
                let report = check(adamant, &mut checker, q_abs_ref);
                cases += 1;

                assert_matches_reference(&report, &data, q_abs_ref, &case);
                for result in &report.slots {
                    if result.index == index {
                        assert_eq!(result.flags, bits, "{case}: bits ({report})");
                        if bits == 0 {
                            assert_eq!(result.first_bad, None, "{case}");
                            assert_eq!(result.max_abs, value.abs(), "{case}");
                        } else {
                            assert_eq!(result.first_bad, Some(at as u64), "{case}");
                            if value.is_nan() {
                                assert!(result.max_abs.is_nan(), "{case}: max {}", result.max_abs);
                            } else {
                                assert_eq!(result.max_abs, value.abs(), "{case}");
                            }
                        }
                    } else {
                        assert!(
                            !result.tripped(),
                            "{case}: slot {} tripped too ({report})",
                            result.index
                        );
                        assert_eq!(result.first_bad, None, "{case}: slot {}", result.index);
                    }
                }
                if bits != 0 {
                    let tripped: Vec<_> = report.tripped().map(|r| r.name.as_str()).collect();
                    assert_eq!(tripped, [spec.name], "{case}");
                    assert!(report.to_string().contains(spec.name), "{case}: {report}");
                }
                data.set(index, at, old);
            }
        }
    }
    // Restored: quiet again.
    let report = check(adamant, &mut checker, q_abs_ref);
    assert_quiet(&report, "after the matrix");
    assert_matches_reference(&report, &data, q_abs_ref, "after the matrix");
    cases
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn every_fault_in_every_slot_trips_that_slot_alone_all_49_in_one_launch() {
    let adamant = runtime();
    let cases = injection_matrix(&adamant, ALL_SLOTS, 1.0);
    // 48 non-empty slots, one of them of length 1 (one position), 4 faults.
    assert_eq!(cases, (47 * 2 + 1) * 4);
    println!("fault-injection matrix over slots 0..=48: {cases} cases, 1 launch each");
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn every_fault_in_every_slot_trips_that_slot_alone_seed_range() {
    let adamant = runtime();
    // Q_ABS_REF 3.0: the max-abs thresholds are 3e3 / 3e2, not their q = 1 values.
    let cases = injection_matrix(&adamant, FUSED_RANGE, 3.0);
    assert_eq!(cases, (23 * 2 + 1) * 4);
    println!("fault-injection matrix over slots 24..=48: {cases} cases, 1 launch each");
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn empty_and_single_element_slots() {
    let adamant = runtime();
    let mut data = SlotData::new(&slot_lens(), 3);
    let bindings = data.bindings();
    let mut checker = NanChecker::new(&adamant, EMPTY_SLOT..=SINGLE_SLOT, &bindings).unwrap();
    let report = check(&adamant, &mut checker, 1.0);
    let empty = &report.slots[0];
    assert_eq!(
        (empty.len, empty.flags, empty.max_abs, empty.first_bad),
        (0, 0, 0.0, None)
    );
    data.set(SINGLE_SLOT, 0, f32::NAN);
    let report = check(&adamant, &mut checker, 1.0);
    assert_eq!(
        report.tripped().map(|r| r.index).collect::<Vec<_>>(),
        [SINGLE_SLOT]
    );
    assert_eq!(report.slots[1].first_bad, Some(0));
    assert!(!report.slots[0].tripped());
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn thresholds_follow_q_abs_ref_at_each_launch() {
    let adamant = runtime();
    let mut data = SlotData::new(&slot_lens(), 4);
    let bindings = data.bindings();
    let mut checker = NanChecker::new(&adamant, FUSED_RANGE, &bindings).unwrap();
    let last = data.host[48].len() - 1;
    data.set(48, last, 1500.0);
    for (q_abs_ref, trips) in [
        (0.0, true),
        (1.0, true),
        (1.4, true),
        (1.5, false),
        (2.0, false),
    ] {
        let report = check(&adamant, &mut checker, q_abs_ref);
        let result = report.slot(slot::iqn_weight_max).unwrap();
        assert_eq!(result.tripped(), trips, "Q_ABS_REF {q_abs_ref}: {report}");
        assert_eq!(result.threshold, Some(1e3 * q_abs_ref_eff(q_abs_ref)));
        assert_eq!(result.max_abs, 1500.0);
        assert_eq!(report.tripped().count(), usize::from(trips), "{report}");
        assert_matches_reference(&report, &data, q_abs_ref, "threshold sweep");
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn the_first_bad_index_is_the_smallest_across_chunks_and_both_flags_combine() {
    let adamant = runtime();
    let mut data = SlotData::new(&slot_lens(), 5);
    let bindings = data.bindings();
    let mut checker = NanChecker::new(&adamant, ALL_SLOTS, &bindings).unwrap();
    let len = data.host[LARGE_SLOT].len();
    assert!(len > 3 * CHECK_CHUNK_ELEMENTS);
    // Bad elements in three different chunks, the smallest index in the middle one.
    data.set(LARGE_SLOT, len - 1, f32::NAN);
    data.set(LARGE_SLOT, CHECK_CHUNK_ELEMENTS + 3, f32::INFINITY);
    data.set(LARGE_SLOT, 2 * CHECK_CHUNK_ELEMENTS + 1, -f32::NAN);
    let report = check(&adamant, &mut checker, 1.0);
    let result = &report.slots[LARGE_SLOT];
    assert_eq!(result.flags, FLAG_NON_FINITE);
    assert_eq!(result.first_bad, Some(CHECK_CHUNK_ELEMENTS as u64 + 3));
    assert!(result.max_abs.is_nan());
    // A max-abs slot with an over-threshold value before a NaN: both bits, the earlier index.
    let n48 = data.host[48].len();
    data.set(48, n48 - 1, f32::NAN);
    data.set(48, n48 / 2, 1e4);
    let report = check(&adamant, &mut checker, 1.0);
    let result = report.slot(slot::iqn_weight_max).unwrap();
    assert_eq!(result.flags, FLAG_NON_FINITE | FLAG_OVER_THRESHOLD);
    assert_eq!(result.first_bad, Some(n48 as u64 / 2));
    assert_eq!(report.tripped().count(), 2, "{report}");
    assert_matches_reference(&report, &data, 1.0, "two bad slots");
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn results_reset_between_checks() {
    let adamant = runtime();
    let mut data = SlotData::new(&slot_lens(), 6);
    let bindings = data.bindings();
    let mut checker = NanChecker::new(&adamant, FUSED_RANGE, &bindings).unwrap();
    let old = data.set(26, 0, f32::NAN);
    assert!(!check(&adamant, &mut checker, 1.0).is_quiet());
    data.set(26, 0, old);
    let report = check(&adamant, &mut checker, 1.0);
    assert_quiet(&report, "after restoring");
    assert_matches_reference(&report, &data, 1.0, "after restoring");
    // Several checks enqueued back to back: the report reads the last one.
    data.set(26, 0, f32::NAN);
    for _ in 0..3 {
        checker.enqueue(adamant.stream(), 1.0).unwrap();
    }
    let report = checker.report().unwrap();
    assert_eq!(
        report
            .tripped()
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>(),
        ["iqn_trunk_grad_out"]
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn bind_group_binds_slot_48_to_the_iqn_online_weights() {
    let adamant = runtime();
    let n = if sanitizer_run() { 5000 } else { 300_000 };
    let mut iqn = ParamGroup::new("iqn_online", &vec![0.25f32; n]).unwrap();
    let mut bindings = SlotBindings::new(SEED_TABLE);
    let bound = bindings.bind_group(&iqn).unwrap();
    let bound: Vec<usize> = bound.iter().map(|s| s.index()).collect();
    assert_eq!(bound, [2, 12, 13, 38, 48]);
    assert_eq!(
        bindings.region(slot::iqn_weight_max).unwrap().unwrap().ptr,
        iqn.params_device_ptr()
    );
    assert_eq!(
        bindings.region(slot::iqn_weight_max).unwrap().unwrap().len,
        iqn.len()
    );
    let mut checker = NanChecker::new(&adamant, 48..=48, &bindings).unwrap();
    assert_quiet(&check(&adamant, &mut checker, 1.0), "fresh IQN weights");

    let mut weights = vec![0.25f32; n];
    weights[n - 7] = -1001.0;
    iqn.upload(GroupBuffer::Params, &weights).unwrap();
    fence();
    let report = check(&adamant, &mut checker, 1.0);
    let tripped: Vec<_> = report.tripped().collect();
    assert_eq!(tripped.len(), 1, "{report}");
    assert_eq!(tripped[0].name, "iqn_weight_max");
    assert_eq!(tripped[0].flags, FLAG_OVER_THRESHOLD);
    assert_eq!(tripped[0].first_bad, Some(n as u64 - 7));
    assert_eq!(tripped[0].max_abs, 1001.0);
    assert!(
        report.to_string().contains("slot 48 iqn_weight_max"),
        "{report}"
    );
    assert!(matches!(
        report.ensure_quiet(),
        Err(Error::NanCheckTripped { .. })
    ));

    // A group the table does not know, and one lacking a buffer its slots want.
    let other = ParamGroup::new("iqn_target", &[0.0; 4]).unwrap();
    assert!(matches!(
        SlotBindings::new(SEED_TABLE).bind_group(&other),
        Err(Error::UnknownSlotGroup { .. })
    ));
    let curiosity = ParamGroup::new("curiosity", &[0.0; 4]).unwrap();
    assert!(matches!(
        SlotBindings::new(SEED_TABLE).bind_group(&curiosity),
        Err(Error::MissingBuffer {
            buffer: "v_max",
            ..
        })
    ));
    let curiosity = ParamGroup::new_amsgrad("curiosity", &[0.0; 4]).unwrap();
    assert_eq!(
        SlotBindings::new(SEED_TABLE)
            .bind_group(&curiosity)
            .unwrap()
            .len(),
        5
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn invalid_requests_fail_before_anything_is_launched() {
    let adamant = runtime();
    let data = SlotData::new(&slot_lens(), 8);
    let mut bindings = data.bindings();
    bindings.unbind(slot::iqn_trunk_grad_out).unwrap();
    match NanChecker::new(&adamant, FUSED_RANGE, &bindings) {
        Err(
            err @ Error::UnboundSlot {
                index: 26,
                name: "iqn_trunk_grad_out",
                table: "seed",
            },
        ) => {
            assert!(err.to_string().contains("iqn_trunk_grad_out"))
        }
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("a checker with slot 26 unbound was built"),
    }
    assert!(matches!(
        NanChecker::new(&adamant, 40..=49, &data.bindings()),
        Err(Error::InvalidSlotRange {
            first: 40,
            last: 49,
            ..
        })
    ));

    let bindings = data.bindings();
    let mut checker = NanChecker::new(&adamant, FUSED_RANGE, &bindings).unwrap();
    assert!(matches!(checker.report(), Err(Error::NanCheckNotEnqueued)));
    for bad in [f32::NAN, f32::INFINITY, -1.0] {
        assert!(matches!(
            checker.enqueue(adamant.stream(), bad),
            Err(Error::InvalidQAbsRef { .. })
        ));
    }
    assert!(matches!(
        checker.enqueue(adamant.stream(), 1e36),
        Err(Error::SlotThresholdOverflow { index: 44, .. })
    ));
    assert!(matches!(checker.report(), Err(Error::NanCheckNotEnqueued)));
}

/// The check's result for every slot against the reference, reading each group slot's data
/// back from its group and each activation slot's from `activations`.
fn assert_matches_reference_for_model(
    report: &NanReport,
    groups: &TrainingGroups,
    activations: &SlotData,
    q_abs_ref: f32,
    case: &str,
) {
    for result in &report.slots {
        let host = match SLOTS[result.index].source {
            Source::Group { group, buffer } => groups
                .all()
                .into_iter()
                .find(|g| g.name() == group)
                .unwrap_or_else(|| panic!("no training group `{group}`"))
                .download(buffer)
                .unwrap(),
            Source::Activation { .. } => activations.host[result.index].clone(),
        };
        let expected = reference::check_slot(&host, result.check, q_abs_ref);
        assert!(
            expected.matches(result),
            "{case}: slot {} `{}`: GPU {result:?}, reference {expected:?}",
            result.index,
            result.name
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn training_groups_bind_every_group_slot_and_a_nan_gradient_is_followed_through_the_step() {
    let adamant = runtime();
    let n = if sanitizer_run() { 3000 } else { 200_000 };
    let sizes = GroupSizes {
        dqn_trunk: n,
        dqn_heads: n / 2,
        iqn_online: n / 3,
        iql: n,
        attention: n / 4,
        tlob: n / 5,
        curiosity: n / 6,
        decision_transformer: 7,
    };
    let mut rng = SmallRng::seed_from_u64(9);
    let mut random =
        |len: usize| -> Vec<f32> { (0..len).map(|_| rng.gen_range(-1.0f32..1.0)).collect() };
    let mut groups = TrainingGroups::new(sizes, |_, len| random(len)).unwrap();
    for group in groups.all_mut() {
        let grads = random(group.len());
        group.upload(GroupBuffer::Grads, &grads).unwrap();
    }
    let activations = SlotData::new(&slot_lens(), 10);
    fence();

    let mut bindings = SlotBindings::new(SEED_TABLE);
    groups.bind_slots(&mut bindings).unwrap();
    for id in SEED_TABLE.ids() {
        match id.spec().source {
            Source::Group { .. } => {
                assert!(
                    bindings.is_bound(id).unwrap(),
                    "{id} not bound by its group"
                )
            }
            Source::Activation { .. } => {
                assert!(!bindings.is_bound(id).unwrap(), "{id}");
                bindings.bind(id, &activations.device[id.index()]).unwrap();
            }
        }
    }
    let mut checker = NanChecker::new(&adamant, ALL_SLOTS, &bindings).unwrap();
    let config = |step| {
        let hyper = AdamHyper::pytorch_defaults(step).unwrap();
        StepConfig {
            q_abs_ref: 1.0,
            hyper: SessionConfig {
                iql_grad_clip: 1.0,
                curiosity: hyper,
                ..SessionConfig::uniform(hyper)
            },
            dqn_grad_scale: None,
        }
    };
    for step in 1..=3 {
        groups
            .step_all(&adamant, adamant.stream(), &config(step))
            .unwrap();
        checker.enqueue(adamant.stream(), 1.0).unwrap();
    }
    let report = checker.report().unwrap();
    assert_quiet(&report, "three clean steps of every group");
    assert_matches_reference_for_model(&report, &groups, &activations, 1.0, "clean steps");

    // One NaN in the IQN gradient: Adam carries it into m, v and the weight, and the clamp keeps
    // it visible (a NaN weight stays NaN), so exactly the IQN slots trip, at that element.
    let poisoned = 17;
    let mut grads = groups.iqn_online.download(GroupBuffer::Grads).unwrap();
    grads[poisoned] = f32::NAN;
    groups
        .iqn_online
        .upload(GroupBuffer::Grads, &grads)
        .unwrap();
    fence();
    groups
        .step_all(&adamant, adamant.stream(), &config(4))
        .unwrap();
    checker.enqueue(adamant.stream(), 1.0).unwrap();
    let report = checker.report().unwrap();
    let tripped: Vec<&str> = report.tripped().map(|r| r.name.as_str()).collect();
    assert_eq!(
        tripped,
        [
            "iqn_grads",
            "iqn_m",
            "iqn_v",
            "iqn_weights",
            "iqn_weight_max"
        ],
        "{report}"
    );
    for result in report.tripped() {
        assert_eq!(result.flags, FLAG_NON_FINITE, "{result}");
        assert_eq!(result.first_bad, Some(poisoned as u64), "{result}");
        assert!(result.max_abs.is_nan(), "{result}");
    }
    assert_matches_reference_for_model(&report, &groups, &activations, 1.0, "NaN gradient");
}

use support::custom_table as custom;

/// The checker is generic over the table: a table declared outside the seed
/// (`tests/support/custom_table.rs`: an activation, a max-abs activation and a group's weights)
/// is bound and checked on the device, against the reference, with a NaN in one slot, a finite
/// value over the threshold in the max-abs slot and the group slot clean.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_table_of_ones_own_is_checked_on_the_device() {
    let adamant = runtime();
    let table = custom::TABLE;
    // Activations: one over several chunks, one small; values in ±50, under slot 1's 1e2.
    let mut activations = SlotData::new(&[3 * CHECK_CHUNK_ELEMENTS + 5, 1000], 11);
    let weights = ParamGroup::new(custom::GROUP, &vec![0.5f32; 777]).unwrap();
    fence();

    let mut bindings = SlotBindings::new(table);
    bindings
        .bind(custom::slot::hidden, &activations.device[0])
        .unwrap();
    bindings
        .bind(custom::slot::q_max, &activations.device[1])
        .unwrap();
    assert_eq!(
        bindings.bind_group(&weights).unwrap(),
        [custom::slot::net_weights]
    );
    // A seed slot is refused, and binds nothing.
    assert!(matches!(
        bindings.bind(slot::td_errors, &activations.device[0]),
        Err(Error::ForeignSlot {
            table: "seed",
            bindings: "custom",
            ..
        })
    ));
    let mut checker = NanChecker::new(&adamant, table.all(), &bindings).unwrap();
    assert_eq!(checker.table(), table);
    assert!(matches!(
        NanChecker::new(&adamant, 0..=3, &bindings),
        Err(Error::InvalidSlotRange {
            table: "custom",
            slots: 3,
            ..
        })
    ));

    // Every slot's data as the device holds it, for the reference.
    let host = |activations: &SlotData| -> Vec<Vec<f32>> {
        vec![
            activations.host[0].clone(),
            activations.host[1].clone(),
            weights.download(GroupBuffer::Params).unwrap(),
        ]
    };
    let assert_matches = |report: &NanReport, data: &[Vec<f32>], q_abs_ref: f32, case: &str| {
        assert_eq!(report.table, table);
        assert_eq!(report.slots.len(), table.len());
        for (result, id) in report.slots.iter().zip(table.ids()) {
            assert_eq!(
                (result.index, result.name.as_str()),
                (id.index(), id.name())
            );
            assert_eq!(result.len, data[id.index()].len(), "{case}: {id}");
            let expected = reference::check_slot(&data[id.index()], id.spec().check, q_abs_ref);
            assert!(
                expected.matches(result),
                "{case}: {id}: GPU {result:?}, reference {expected:?}"
            );
        }
    };

    let report = check(&adamant, &mut checker, 1.0);
    assert_quiet(&report, "clean custom table");
    assert_matches(&report, &host(&activations), 1.0, "clean");

    let nan_at = 2 * CHECK_CHUNK_ELEMENTS + 7;
    activations.set(0, nan_at, f32::NAN);
    activations.set(1, 999, 150.0);
    for (q_abs_ref, over) in [(1.0, true), (2.0, false)] {
        let report = check(&adamant, &mut checker, q_abs_ref);
        let case = format!("faults at Q_ABS_REF {q_abs_ref}");
        assert_matches(&report, &host(&activations), q_abs_ref, &case);
        let hidden = report.slot(custom::slot::hidden).unwrap();
        assert_eq!(
            (hidden.flags, hidden.first_bad),
            (FLAG_NON_FINITE, Some(nan_at as u64)),
            "{case}"
        );
        assert!(hidden.max_abs.is_nan(), "{case}");
        let q = report.slot(custom::slot::q_max).unwrap();
        assert_eq!(q.max_abs, 150.0, "{case}");
        assert_eq!(q.threshold, Some(custom::Q_FACTOR * q_abs_ref), "{case}");
        assert_eq!(q.over_threshold(), over, "{case}: {report}");
        assert_eq!(q.first_bad, over.then_some(999), "{case}");
        assert!(
            !report.slot(custom::slot::net_weights).unwrap().tripped(),
            "{case}: {report}"
        );
        // The seed's slot of the same index is not in this report.
        assert!(report.slot(SEED_TABLE.id(1).unwrap()).is_none());
        let tripped: Vec<&str> = report.tripped().map(|r| r.name.as_str()).collect();
        let expected: &[&str] = if over {
            &["hidden", "q_max"]
        } else {
            &["hidden"]
        };
        assert_eq!(tripped, expected, "{case}: {report}");
    }
}
