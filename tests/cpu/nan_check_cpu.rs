//! The NaN checker's host-side logic and per-element device logic, without a GPU:
//! - the slot table (contiguous indices, unique names, the reference configuration of the seed);
//! - what is derived from it (sizes, the work table, thresholds, range validation, the unbound
//!   slot error);
//! - the CPU reference of the check against hand-written cases from the specification;
//! - the kernel's per-element functions (`element_flags`, `abs_bits`, compiled for the host) and
//!   a host simulation of its chunked reduction (same work table, same combine operations)
//!   against the reference, with injected NaN / ±inf / over-threshold values;
//! - the report's decoding and log line.
#[path = "../support/mod.rs"]
mod support;

use std::collections::HashSet;
use std::ops::RangeInclusive;

use adamant::nan_check_reference::{self as reference, ReferenceSlot};
use adamant_device::abi::Storage;
use adamant_device::nan_check::{
    abs_bits, element_flags, Partial, WorkItem, FLAG_NON_FINITE, FLAG_OVER_THRESHOLD,
    NON_FINITE_ONLY, NO_BAD_INDEX, SLOT_BF16, SLOT_F16, SLOT_F32,
};
use adamant_rl::{slot, ALL_SLOTS, FUSED_RANGE, SEED_TABLE, SLOTS, SLOT_COUNT};
use adamant_runtime::nan_check::layout;
use adamant_runtime::nan_check::{
    q_abs_ref_eff, Check, NanReport, SlotBindings, SlotRegion, SlotResult, SlotTable, Source,
    CHECK_CHUNK_ELEMENTS,
};
use adamant_runtime::{Error, GroupBuffer};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

// ---------------------------------------------------------------------------------------------
// The slot table

#[test]
fn the_table_has_the_seeds_49_slots_with_contiguous_indices_and_unique_names() {
    assert_eq!(SLOT_COUNT, 49);
    let mut names = HashSet::new();
    for (position, spec) in SLOTS.iter().enumerate() {
        assert_eq!(spec.index, position, "slot `{}` out of order", spec.name);
        assert!(
            names.insert(spec.name),
            "slot name `{}` repeated",
            spec.name
        );
        assert!(!spec.name.is_empty());
    }
    assert_eq!(ALL_SLOTS, 0..=48);
    assert_eq!(FUSED_RANGE, 24..=48);
}

#[test]
fn the_reference_configuration_names_the_seeds_slots() {
    assert_eq!(slot::iqn_trunk_grad_out.index(), 26);
    assert!(matches!(SLOTS[26].source, Source::Activation { .. }));
    for (id, name, group) in [
        (slot::trunk_weight_max, "trunk_weight_max", "dqn_trunk"),
        (slot::heads_weight_max, "heads_weight_max", "dqn_heads"),
        (slot::iqn_weight_max, "iqn_weight_max", "iqn_online"),
    ] {
        let spec = id.spec();
        assert_eq!(spec.name, name);
        assert_eq!(spec.check, Check::MaxAbs { factor: 1e3 }, "{name}");
        assert_eq!(
            spec.source,
            Source::Group {
                group,
                buffer: GroupBuffer::Params
            },
            "{name}"
        );
    }
    assert_eq!(slot::trunk_weight_max.index(), 44);
    assert_eq!(slot::heads_weight_max.index(), 45);
    assert_eq!(slot::iqn_weight_max.index(), 48);
    // Every group of the training step (`TrainingGroups`, same names) has its weights,
    // gradients and moments watched, and the table names no other group.
    let training_groups = [
        "dqn_trunk",
        "dqn_heads",
        "iqn_online",
        "iql",
        "attention",
        "tlob",
        "curiosity",
        "decision_transformer",
    ];
    for group in training_groups {
        for buffer in [
            GroupBuffer::Params,
            GroupBuffer::Grads,
            GroupBuffer::M,
            GroupBuffer::V,
        ] {
            assert!(
                SLOTS
                    .iter()
                    .any(|s| s.source == Source::Group { group, buffer }),
                "no slot watches group `{group}` {}",
                buffer.name()
            );
        }
    }
    for spec in SLOTS {
        if let Source::Group { group, .. } = spec.source {
            assert!(
                training_groups.contains(&group),
                "slot {}: unknown group `{group}`",
                spec.index
            );
        }
    }
}

#[test]
fn slot_ids_are_found_by_index_and_name() {
    assert_eq!(
        SEED_TABLE.id_by_name("iqn_weight_max"),
        Some(slot::iqn_weight_max)
    );
    assert_eq!(SEED_TABLE.id(48), Some(slot::iqn_weight_max));
    assert_eq!(SEED_TABLE.id(49), None);
    assert_eq!(SEED_TABLE.id_by_name("no_such_slot"), None);
    assert_eq!(slot::iqn_weight_max.table(), SEED_TABLE);
    assert_eq!(SEED_TABLE.name(), "seed");
    assert_eq!(slot::iqn_weight_max.to_string(), "slot 48 `iqn_weight_max`");
}

// ---------------------------------------------------------------------------------------------
// Thresholds

#[test]
fn thresholds_are_factor_times_q_abs_ref_floored_at_one() {
    assert_eq!(q_abs_ref_eff(0.0), 1.0);
    assert_eq!(q_abs_ref_eff(0.25), 1.0);
    assert_eq!(q_abs_ref_eff(1.0), 1.0);
    assert_eq!(q_abs_ref_eff(2.5), 2.5);
    let weight_max = slot::iqn_weight_max.spec().check;
    assert_eq!(weight_max.threshold(q_abs_ref_eff(0.5)), Some(1e3));
    assert_eq!(weight_max.threshold(q_abs_ref_eff(2.5)), Some(2.5e3));
    assert_eq!(Check::NonFinite.threshold(7.0), None);
    // The kernel reads `factor`; a non-finite-only slot's is +inf, so only the non-finite test
    // can fire there.
    assert_eq!(Check::NonFinite.device_factor(), NON_FINITE_ONLY);
    assert_eq!(weight_max.device_factor(), 1e3);
    assert_eq!(NON_FINITE_ONLY * q_abs_ref_eff(0.0), f32::INFINITY);
}

// ---------------------------------------------------------------------------------------------
// Ranges, bindings and the derived layout

/// Bindings for every slot of `table` with these lengths, at fake addresses (never launched).
fn fake_bindings(table: SlotTable, lens: &[usize]) -> SlotBindings {
    let mut bindings = SlotBindings::new(table);
    for (index, &len) in lens.iter().enumerate() {
        let id = table.id(index).unwrap();
        let ptr = if len == 0 {
            0
        } else {
            0x1000_0000 * (index as u64 + 1)
        };
        // SAFETY: these bindings only feed host-side layout code; nothing is launched.
        unsafe { bindings.bind_raw(id, ptr, len, Storage::F32) }.unwrap();
    }
    bindings
}

/// Skewed sizes like the training step's: mostly small, a few large, and 0 and 1.
fn skewed_lens() -> Vec<usize> {
    (0..SLOT_COUNT)
        .map(|i| match i % 7 {
            0 => 0,
            1 => 1,
            2 => CHECK_CHUNK_ELEMENTS - 1,
            3 => CHECK_CHUNK_ELEMENTS,
            4 => CHECK_CHUNK_ELEMENTS + 1,
            5 => 3 * CHECK_CHUNK_ELEMENTS + 17,
            _ => 100_000 + i,
        })
        .collect()
}

#[test]
fn ranges_must_be_non_empty_and_inside_the_table() {
    assert!(layout::validate_range(SEED_TABLE, &ALL_SLOTS).is_ok());
    assert!(layout::validate_range(SEED_TABLE, &FUSED_RANGE).is_ok());
    assert!(layout::validate_range(SEED_TABLE, &(48..=48)).is_ok());
    for bad in [0..=49, 48..=49, RangeInclusive::new(30, 29), 100..=200] {
        let err = layout::validate_range(SEED_TABLE, &bad).unwrap_err();
        assert!(
            matches!(err, Error::InvalidSlotRange { table: "seed", first, last, slots: 49 }
                if first == *bad.start() && last == *bad.end()),
            "{bad:?}: {err}"
        );
        assert!(err.to_string().contains("0..=48"), "{err}");
    }
}

#[test]
fn an_unbound_slot_in_range_is_an_error_naming_it() {
    let mut bindings = fake_bindings(SEED_TABLE, &skewed_lens());
    bindings.unbind(slot::iqn_trunk_grad_out).unwrap();
    let err = bindings.regions_for(&FUSED_RANGE).unwrap_err();
    assert!(
        matches!(
            err,
            Error::UnboundSlot {
                table: "seed",
                index: 26,
                name: "iqn_trunk_grad_out"
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("slot 26 `iqn_trunk_grad_out`"),
        "{err}"
    );
    assert!(err.to_string().contains("nothing was launched"), "{err}");
    // Outside the range it does not matter.
    assert!(bindings.regions_for(&(27..=48)).is_ok());
    // An empty table of bindings names the range's first slot.
    let err = SlotBindings::new(SEED_TABLE)
        .regions_for(&FUSED_RANGE)
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::UnboundSlot {
                table: "seed",
                index: 24,
                name: "dqn_trunk_out"
            }
        ),
        "{err}"
    );
}

#[test]
fn a_null_address_is_only_accepted_for_an_empty_slot() {
    let mut bindings = SlotBindings::new(SEED_TABLE);
    // SAFETY: never launched.
    let err = unsafe { bindings.bind_raw(slot::td_errors, 0, 10, Storage::F32) }.unwrap_err();
    assert!(matches!(
        err,
        Error::NullSlotBuffer {
            index: 35,
            name: "td_errors",
            len: 10
        }
    ));
    assert!(unsafe { bindings.bind_raw(slot::td_errors, 0, 0, Storage::F32) }.is_ok());
    assert_eq!(
        bindings.region(slot::td_errors).unwrap(),
        Some(SlotRegion::EMPTY)
    );
}

#[test]
fn the_layout_has_one_meta_per_slot_and_chunks_that_tile_every_slot() {
    let lens = skewed_lens();
    let bindings = fake_bindings(SEED_TABLE, &lens);
    for range in [ALL_SLOTS, FUSED_RANGE, 26..=26] {
        let regions = bindings.regions_for(&range).unwrap();
        let built = layout::build(SEED_TABLE, &range, &regions).unwrap();
        assert_eq!(built.slots.len(), range.clone().count());
        for (i, index) in range.clone().enumerate() {
            let meta = &built.slots[i];
            assert_eq!(meta.len, lens[index] as u64);
            assert_eq!(meta.ptr, regions[i].ptr);
            assert_eq!(meta.factor, SLOTS[index].check.device_factor());
        }
        let expected_items: usize = range
            .clone()
            .map(|i| lens[i].div_ceil(CHECK_CHUNK_ELEMENTS))
            .sum();
        assert_eq!(built.work.len(), expected_items);
        // Per slot, the chunks are in order, contiguous, non-empty and end at the length.
        let mut next = vec![0u64; built.slots.len()];
        for item in &built.work {
            let s = item.slot as usize;
            assert!(s < built.slots.len());
            assert_eq!(
                item.start, next[s],
                "chunk of slot {s} leaves a gap or overlaps"
            );
            assert!(item.count > 0 && item.count as usize <= CHECK_CHUNK_ELEMENTS);
            next[s] += item.count as u64;
        }
        for (i, index) in range.clone().enumerate() {
            assert_eq!(
                next[i], lens[index] as u64,
                "slot {index} not fully covered"
            );
        }
    }
    // The full table in one launch: 49 slots, 49 per-slot outputs.
    let all = layout::build(
        SEED_TABLE,
        &ALL_SLOTS,
        &bindings.regions_for(&ALL_SLOTS).unwrap(),
    )
    .unwrap();
    assert_eq!(all.slots.len(), 49);
}

#[test]
fn empty_slots_get_no_work_and_small_ones_one_chunk() {
    let items = layout::work_items_for(&[0, 1, 5, 0], 4);
    assert_eq!(
        items,
        vec![
            WorkItem {
                start: 0,
                slot: 1,
                count: 1
            },
            WorkItem {
                start: 0,
                slot: 2,
                count: 4
            },
            WorkItem {
                start: 4,
                slot: 2,
                count: 1
            },
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// The CPU reference, from the specification

const MAX_ABS_1E3: Check = Check::MaxAbs { factor: 1e3 };

#[test]
fn reference_flags_non_finite_values_anywhere() {
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        for check in [Check::NonFinite, MAX_ABS_1E3] {
            for at in [0, 3, 7] {
                let mut data = vec![0.5f32; 8];
                data[at] = bad;
                let r = reference::check_slot(&data, check, 1.0);
                assert_eq!(r.flags, FLAG_NON_FINITE, "{bad} at {at}, {check:?}");
                assert_eq!(r.first_bad, Some(at as u64));
                if bad.is_nan() {
                    assert!(r.max_abs.is_nan());
                } else {
                    assert_eq!(r.max_abs, f64::INFINITY);
                }
            }
        }
    }
}

#[test]
fn reference_flags_finite_values_over_the_threshold_only_on_max_abs_slots() {
    let mut data = vec![1.0f32; 10];
    data[6] = -1500.0;
    data[8] = 1200.0;
    let r = reference::check_slot(&data, MAX_ABS_1E3, 1.0);
    assert_eq!(
        r,
        ReferenceSlot {
            flags: FLAG_OVER_THRESHOLD,
            max_abs: 1500.0,
            first_bad: Some(6)
        }
    );
    // Above 1e3 × 1.0 but not above 1e3 × 2.0.
    let r = reference::check_slot(&data, MAX_ABS_1E3, 2.0);
    assert_eq!(
        r,
        ReferenceSlot {
            flags: 0,
            max_abs: 1500.0,
            first_bad: None
        }
    );
    // Exactly at the threshold is not over it.
    let r = reference::check_slot(&[1000.0, -1000.0], MAX_ABS_1E3, 0.0);
    assert_eq!(r.flags, 0);
    // A non-finite-only slot ignores magnitude.
    let r = reference::check_slot(&[f32::MAX, -3e38], Check::NonFinite, 1.0);
    assert_eq!(
        r,
        ReferenceSlot {
            flags: 0,
            max_abs: f32::MAX as f64,
            first_bad: None
        }
    );
}

#[test]
fn reference_combines_both_flags_with_the_first_bad_of_either() {
    let data = [0.0, 2e3, 0.0, f32::NAN, 5e3];
    let r = reference::check_slot(&data, MAX_ABS_1E3, 1.0);
    assert_eq!(r.flags, FLAG_NON_FINITE | FLAG_OVER_THRESHOLD);
    assert_eq!(r.first_bad, Some(1));
    assert!(r.max_abs.is_nan());
}

#[test]
fn reference_of_an_empty_slot_is_quiet() {
    let r = reference::check_slot(&[], MAX_ABS_1E3, 1.0);
    assert_eq!(
        r,
        ReferenceSlot {
            flags: 0,
            max_abs: 0.0,
            first_bad: None
        }
    );
}

// ---------------------------------------------------------------------------------------------
// The kernel's per-element logic and reduction, on the host

/// Values around every edge the per-element test has.
fn special_values() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        f32::from_bits(1),
        1.0,
        999.99994,
        1000.0,
        1000.00006,
        -1000.00006,
        1e30,
        f32::MAX,
        -f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001), // signalling NaN
        f32::from_bits(0xffc0_1234), // negative NaN with a payload
    ];
    v.extend(v.clone().iter().map(|x| -x));
    v
}

#[test]
fn element_flags_agrees_with_the_reference_on_every_edge_value() {
    for &x in &special_values() {
        for check in [Check::NonFinite, MAX_ABS_1E3] {
            let threshold = check.device_factor() * q_abs_ref_eff(1.0);
            let expected = reference::check_slot(&[x], check, 1.0).flags;
            assert_eq!(
                element_flags(x, threshold),
                expected,
                "x = {x:e} ({:#x}), {check:?}",
                x.to_bits()
            );
        }
    }
}

#[test]
fn abs_bits_orders_like_the_magnitudes_and_keeps_nan_on_top() {
    let mut rng = SmallRng::seed_from_u64(48);
    for _ in 0..100_000 {
        let a = f32::from_bits(rng.gen::<u32>());
        let b = f32::from_bits(rng.gen::<u32>());
        if a.is_nan() || b.is_nan() {
            let nan_side = if a.is_nan() { abs_bits(a) } else { abs_bits(b) };
            assert!(nan_side > abs_bits(f32::INFINITY));
            continue;
        }
        assert_eq!(
            abs_bits(a).cmp(&abs_bits(b)),
            a.abs().partial_cmp(&b.abs()).unwrap(),
            "{a:e} vs {b:e}"
        );
    }
    assert_eq!(abs_bits(-0.0), 0);
}

/// The kernel's algorithm on the host with the kernel's own [`Partial`]: per work item, one
/// partial per thread over a strided walk (`block` lanes), merged as the block reduction does,
/// then merged into the per-slot words as the atomics do. Same layout, same per-element code.
fn simulate_kernel(
    table: SlotTable,
    range: &RangeInclusive<usize>,
    data: &[Vec<f32>],
    q_abs_ref: f32,
    block: usize,
) -> Vec<SlotResult> {
    let bindings = fake_bindings(table, &data.iter().map(Vec::len).collect::<Vec<_>>());
    let regions = bindings.regions_for(range).unwrap();
    let built = layout::build(table, range, &regions).unwrap();
    let mut per_slot = vec![Partial::EMPTY; built.slots.len()];
    let q_eff = q_abs_ref_eff(q_abs_ref);
    for item in &built.work {
        let s = item.slot as usize;
        let meta = built.slots[s];
        let values = &data[range.start() + s];
        let threshold = meta.factor * q_eff;
        let end = (item.start + item.count as u64).min(meta.len);
        let mut block_partial = Partial::EMPTY;
        for tid in 0..block as u64 {
            let mut thread = Partial::EMPTY;
            let mut i = item.start + tid;
            while i < end {
                thread.visit(values[i as usize], i, threshold);
                i += block as u64;
            }
            block_partial.merge(thread);
        }
        per_slot[s].merge(block_partial);
    }
    range
        .clone()
        .zip(per_slot)
        .map(|(index, p)| {
            SlotResult::decode(
                table.id(index).unwrap(),
                data[index].len(),
                p.flags,
                p.max_abs_bits,
                p.first_bad,
                q_eff,
            )
        })
        .collect()
}

fn random_slot_data(rng: &mut SmallRng, lens: &[usize]) -> Vec<Vec<f32>> {
    lens.iter()
        .map(|&len| (0..len).map(|_| rng.gen_range(-100.0f32..100.0)).collect())
        .collect()
}

fn assert_matches_reference(results: &[SlotResult], data: &[Vec<f32>], q_abs_ref: f32, what: &str) {
    for result in results {
        let expected = reference::check_slot(&data[result.index], result.check, q_abs_ref);
        assert!(
            expected.matches(result),
            "{what}: slot {}: kernel-model {result:?}, reference {expected:?}",
            result.index
        );
    }
}

#[test]
fn the_chunked_reduction_matches_the_reference_with_injected_values() {
    let mut rng = SmallRng::seed_from_u64(26);
    // Every slot shape but the 100k-element ones (the matrix runs in debug builds).
    let lens: Vec<usize> = skewed_lens()
        .into_iter()
        .map(|len| len.min(2 * CHECK_CHUNK_ELEMENTS + 5))
        .collect();
    let clean = random_slot_data(&mut rng, &lens);
    for block in [256, 7, 1] {
        let results = simulate_kernel(SEED_TABLE, &ALL_SLOTS, &clean, 1.0, block);
        assert!(
            results.iter().all(|r| !r.tripped()),
            "clean data, block {block}"
        );
        assert_matches_reference(&results, &clean, 1.0, "clean");
    }
    for index in ALL_SLOTS {
        let len = lens[index];
        if len == 0 {
            continue;
        }
        for value in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 5e3, -5e3] {
            for at in [0, len / 2, len - 1] {
                let mut data = clean.clone();
                data[index][at] = value;
                // The seed's range where it holds the slot, else the whole table.
                for range in [FUSED_RANGE, ALL_SLOTS]
                    .into_iter()
                    .filter(|r| r.contains(&index))
                    .take(1)
                {
                    let results = simulate_kernel(SEED_TABLE, &range, &data, 1.0, 256);
                    assert_matches_reference(&results, &data, 1.0, "injected");
                    for r in &results {
                        let expect_trip = r.index == index
                            && (!value.is_finite() || matches!(r.check, Check::MaxAbs { .. }));
                        assert_eq!(
                            r.tripped(),
                            expect_trip,
                            "slot {} with {value} in slot {index} at {at}",
                            r.index
                        );
                        if expect_trip {
                            assert_eq!(r.first_bad, Some(at as u64));
                        }
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The report

#[test]
fn the_report_names_the_tripped_slots_for_a_log_line() {
    let q_eff = q_abs_ref_eff(1.0);
    let slots: Vec<SlotResult> = FUSED_RANGE
        .map(|index| {
            let id = SEED_TABLE.id(index).unwrap();
            if index == 48 {
                SlotResult::decode(id, 4096, FLAG_OVER_THRESHOLD, 1500f32.to_bits(), 17, q_eff)
            } else {
                SlotResult::decode(id, 100, 0, 1f32.to_bits(), NO_BAD_INDEX, q_eff)
            }
        })
        .collect();
    let report = NanReport {
        table: SEED_TABLE,
        range: FUSED_RANGE,
        q_abs_ref_eff: q_eff,
        slots,
    };
    assert!(!report.is_quiet());
    let tripped: Vec<_> = report.tripped().collect();
    assert_eq!(tripped.len(), 1);
    let slot48 = report.slot(slot::iqn_weight_max).unwrap();
    assert_eq!(slot48.name, "iqn_weight_max");
    assert_eq!(slot48.threshold, Some(1000.0));
    assert_eq!(slot48.first_bad, Some(17));
    assert!(slot48.over_threshold() && !slot48.non_finite());
    assert!(
        report.slot(slot::iqn_grads).is_none(),
        "slot 2 is outside 24..=48"
    );
    let line = report.to_string();
    assert!(!line.contains('\n'), "one line: {line}");
    for needle in [
        "nan check slots 24..=48",
        "1 of 25 slots tripped",
        "slot 48 iqn_weight_max",
        "over-threshold",
        "max |x| 1.5e3 > threshold 1e3",
        "first bad element 17 of 4096",
    ] {
        assert!(line.contains(needle), "`{needle}` not in: {line}");
    }
    let err = report.ensure_quiet().unwrap_err();
    assert!(matches!(err, Error::NanCheckTripped { .. }));
    assert_eq!(err.to_string(), line);
}

#[test]
fn a_quiet_report_says_so() {
    let slots = FUSED_RANGE
        .map(|index| SlotResult::decode(SEED_TABLE.id(index).unwrap(), 10, 0, 0, NO_BAD_INDEX, 1.0))
        .collect();
    let report = NanReport {
        table: SEED_TABLE,
        range: FUSED_RANGE,
        q_abs_ref_eff: 1.0,
        slots,
    };
    assert!(report.is_quiet());
    assert!(report.ensure_quiet().is_ok());
    assert!(
        report.to_string().ends_with("all 25 slots quiet"),
        "{report}"
    );
}

#[test]
fn a_nan_slot_reports_nan_as_its_maximum() {
    let nan_bits = abs_bits(f32::NAN);
    let r = SlotResult::decode(
        slot::iqn_trunk_grad_out,
        8,
        FLAG_NON_FINITE,
        nan_bits,
        3,
        1.0,
    );
    assert!(r.max_abs.is_nan());
    let line = r.to_string();
    assert!(
        line.starts_with("slot 26 iqn_trunk_grad_out: non-finite (bits 0b01), max |x| NaN"),
        "{line}"
    );
}

/// Small checks keep the base chunk; large ones get larger chunks (a multiple of it, capped),
/// and every layout still covers every element exactly once.
#[test]
fn chunk_size_grows_with_the_check() {
    use adamant_runtime::nan_check::layout::{chunk_for, MAX_CHUNK_ELEMENTS};
    let blocks = 132 * 8;
    assert_eq!(chunk_for(0, blocks), CHECK_CHUNK_ELEMENTS);
    assert_eq!(chunk_for(4_397_000, blocks), CHECK_CHUNK_ELEMENTS);
    assert_eq!(chunk_for(1 << 28, blocks), 131_072);
    assert_eq!(chunk_for(usize::MAX / 4, blocks), MAX_CHUNK_ELEMENTS);
    for total in [1usize, 4095, 4097, 1 << 22, 1 << 28, (1 << 28) + 3] {
        let chunk = chunk_for(total, blocks);
        assert_eq!(chunk % CHECK_CHUNK_ELEMENTS, 0, "{total}");
        let items = layout::work_items_for(&[total], chunk);
        let covered: u64 = items.iter().map(|w| w.count as u64).sum();
        assert_eq!(covered, total as u64, "{total}");
        assert!(items
            .windows(2)
            .all(|w| w[0].start + w[0].count as u64 == w[1].start));
    }
}

/// The report words the kernel's last block writes decode to the same partial on the host, for
/// first indices that need both words.
#[test]
fn report_words_round_trip_every_field() {
    use adamant_device::nan_check::{Partial, FLAG_ALL, REPORT_WORDS_PER_SLOT};
    for first_bad in [
        0u64,
        1,
        u32::MAX as u64,
        1 << 32,
        (7 << 32) | 5,
        u64::MAX - 1,
        u64::MAX,
    ] {
        let p = Partial {
            flags: FLAG_ALL,
            max_abs_bits: 0x7fc0_0001,
            first_bad,
        };
        let words = p.to_words();
        assert_eq!(words.len(), REPORT_WORDS_PER_SLOT);
        assert_eq!(Partial::from_words(words), p, "{first_bad:#x}");
    }
    assert_eq!(
        Partial::from_words(Partial::EMPTY.to_words()),
        Partial::EMPTY
    );
}

// ---------------------------------------------------------------------------------------------
// A table of one's own: the checker is generic over the table

use support::custom_table as custom;

#[test]
fn a_user_table_declared_with_the_macro_is_its_own_table() {
    let table = custom::TABLE;
    assert_eq!(table.name(), "custom");
    assert_eq!(table.len(), 3);
    assert_eq!(table.all(), 0..=2);
    assert_ne!(table, SEED_TABLE);
    let names: Vec<_> = table.slots().iter().map(|s| s.name).collect();
    assert_eq!(names, ["hidden", "q_max", "net_weights"]);
    for (i, id) in table.ids().enumerate() {
        assert_eq!(id.index(), i);
        assert_eq!(id.table(), table);
        assert_eq!(table.id_by_name(id.name()), Some(id));
    }
    assert_eq!(custom::slot::q_max, table.id(1).unwrap());
    assert_eq!(
        custom::slot::q_max.spec().check,
        Check::MaxAbs {
            factor: custom::Q_FACTOR
        }
    );
    assert_eq!(table.id(3), None);
    // Same index, different tables: different slots.
    assert_ne!(custom::slot::hidden, SEED_TABLE.id(0).unwrap());
    // Group slots of the table: its own, then the group's derived ones after its three.
    let shape = adamant_runtime::nan_check::GroupShape {
        name: custom::GROUP,
        amsgrad: false,
    };
    let derived = adamant_runtime::nan_check::group_slots(table, &[shape]).unwrap();
    let indexed: Vec<(usize, &str, bool)> = derived
        .iter()
        .map(|s| (s.index, s.name.as_str(), s.in_table))
        .collect();
    assert_eq!(
        indexed,
        [
            (2, "net_weights", true),
            (3, "net_weight_max", false),
            (4, "net_grads", false),
            (5, "net_m", false),
            (6, "net_v", false),
        ]
    );
}

#[test]
fn a_slot_of_another_table_is_refused_by_the_bindings() {
    let mut bindings = SlotBindings::new(custom::TABLE);
    assert_eq!(bindings.table(), custom::TABLE);
    // Slot 1 of the seed's table is not slot 1 of this one.
    let seed_slot = SEED_TABLE.id(1).unwrap();
    // SAFETY: never launched.
    let err = unsafe { bindings.bind_raw(seed_slot, 0x1000, 10, Storage::F32) }.unwrap_err();
    assert!(
        matches!(
            err,
            Error::ForeignSlot {
                index: 1,
                name: "dqn_heads_grads",
                table: "seed",
                bindings: "custom",
            }
        ),
        "{err}"
    );
    let message = err.to_string();
    for needle in ["slot 1 `dqn_heads_grads`", "`seed`", "`custom`"] {
        assert!(message.contains(needle), "`{needle}` not in: {message}");
    }
    assert!(matches!(
        bindings.leave_to_records(seed_slot),
        Err(Error::ForeignSlot { .. })
    ));
    assert!(matches!(
        bindings.unbind(seed_slot),
        Err(Error::ForeignSlot { .. })
    ));
    assert!(matches!(
        bindings.region(seed_slot),
        Err(Error::ForeignSlot { .. })
    ));
    assert!(matches!(
        bindings.is_bound(seed_slot),
        Err(Error::ForeignSlot { .. })
    ));
    // Nothing was bound by the refused calls.
    for id in custom::TABLE.ids() {
        assert_eq!(bindings.region(id).unwrap(), None, "{id}");
    }
    // And the other way round.
    let mut seed = SlotBindings::new(SEED_TABLE);
    assert!(matches!(
        seed.leave_to_records(custom::slot::net_weights),
        Err(Error::ForeignSlot {
            index: 2,
            name: "net_weights",
            table: "custom",
            bindings: "seed"
        })
    ));
    assert_eq!(seed.region(SEED_TABLE.id(2).unwrap()).unwrap(), None);
}

#[test]
fn a_user_tables_ranges_and_unbound_slots_are_errors_naming_the_table() {
    let table = custom::TABLE;
    assert!(layout::validate_range(table, &(0..=2)).is_ok());
    for bad in [0..=3, 3..=3, RangeInclusive::new(2, 1), FUSED_RANGE] {
        let err = layout::validate_range(table, &bad).unwrap_err();
        assert!(
            matches!(err, Error::InvalidSlotRange { table: "custom", first, last, slots: 3 }
                if first == *bad.start() && last == *bad.end()),
            "{bad:?}: {err}"
        );
        assert!(err.to_string().contains("`custom` (slots 0..=2"), "{err}");
    }
    let mut bindings = fake_bindings(table, &[10, 20, 30]);
    bindings.unbind(custom::slot::q_max).unwrap();
    let err = bindings.regions_for(&table.all()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::UnboundSlot {
                table: "custom",
                index: 1,
                name: "q_max"
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("`custom`"), "{err}");
}

#[test]
fn a_user_tables_layout_carries_its_own_metadata() {
    let table = custom::TABLE;
    let lens = [CHECK_CHUNK_ELEMENTS + 3, 5, 2 * CHECK_CHUNK_ELEMENTS];
    let bindings = fake_bindings(table, &lens);
    let regions = bindings.regions_for(&table.all()).unwrap();
    let built = layout::build(table, &table.all(), &regions).unwrap();
    let factors: Vec<f32> = built.slots.iter().map(|m| m.factor).collect();
    assert_eq!(
        factors,
        [NON_FINITE_ONLY, custom::Q_FACTOR, NON_FINITE_ONLY]
    );
    let meta_lens: Vec<u64> = built.slots.iter().map(|m| m.len).collect();
    assert_eq!(meta_lens, lens.map(|l| l as u64));
    for (meta, region) in built.slots.iter().zip(&regions) {
        assert_eq!(meta.ptr, region.ptr);
    }
    // Chunks per slot: 2, 1, 2.
    let per_slot: Vec<usize> = (0..3)
        .map(|s| built.work.iter().filter(|w| w.slot as usize == s).count())
        .collect();
    assert_eq!(per_slot, [2, 1, 2]);
    // A sub-range: slot 1 alone, at position 0 of the layout.
    let one = layout::build(table, &(1..=1), &bindings.regions_for(&(1..=1)).unwrap()).unwrap();
    assert_eq!(one.slots.len(), 1);
    assert_eq!(one.slots[0].factor, custom::Q_FACTOR);
}

/// A slot's storage reaches the kernel as the code it branches on, from the one mapping
/// (`slot_storage`); a bf16 remainder, no value by itself, is refused by the binding and by a
/// layout built from a region made by hand, each naming the slot, and nothing is bound.
#[test]
fn a_slots_storage_reaches_the_kernel_and_a_remainder_is_refused() {
    let table = custom::TABLE;
    let mut bindings = SlotBindings::new(table);
    let storages = [Storage::Bf16, Storage::F16, Storage::F32];
    for (id, storage) in table.ids().zip(storages) {
        // SAFETY: these bindings only feed host-side layout code; nothing is launched.
        unsafe { bindings.bind_raw(id, 0x1000_0000, 100, storage) }.unwrap();
    }
    let regions = bindings.regions_for(&table.all()).unwrap();
    let built = layout::build(table, &table.all(), &regions).unwrap();
    let codes: Vec<u32> = built.slots.iter().map(|m| m.storage).collect();
    assert_eq!(codes, [SLOT_BF16, SLOT_F16, SLOT_F32]);
    assert_eq!(
        built.slots[0].len, 100,
        "a 16-bit slot's length counts elements"
    );

    // SAFETY: never launched.
    let err =
        unsafe { bindings.bind_raw(custom::slot::hidden, 0x2000_0000, 8, Storage::Bf16Remainder) }
            .unwrap_err();
    assert!(
        matches!(
            err,
            Error::BufferStorage {
                buffer: "hidden",
                storage: Storage::Bf16Remainder,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        bindings.region(custom::slot::hidden).unwrap().unwrap().ptr,
        0x1000_0000,
        "the refused binding replaced the slot's"
    );
    let mut by_hand = regions.clone();
    by_hand[1].storage = Storage::Bf16Remainder;
    let err = layout::build(table, &table.all(), &by_hand).unwrap_err();
    assert!(
        matches!(
            err,
            Error::BufferStorage {
                buffer: "q_max",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_user_table_is_checked_and_decoded_by_its_own_names() {
    let table = custom::TABLE;
    let mut rng = SmallRng::seed_from_u64(3);
    // Values in ±100 would trip slot 1 (threshold 1e2) only above 100: keep the clean data in ±50.
    let mut data: Vec<Vec<f32>> = [CHECK_CHUNK_ELEMENTS + 9, 300, 2 * CHECK_CHUNK_ELEMENTS + 1]
        .iter()
        .map(|&len| (0..len).map(|_| rng.gen_range(-50.0f32..50.0)).collect())
        .collect();
    for block in [256, 3] {
        let clean = simulate_kernel(table, &table.all(), &data, 1.0, block);
        assert!(clean.iter().all(|r| !r.tripped()), "block {block}");
        assert_matches_reference(&clean, &data, 1.0, "clean custom table");
    }
    // A NaN in the activation, a finite value over slot 1's threshold; slot 2 stays clean.
    data[0][CHECK_CHUNK_ELEMENTS + 2] = f32::NAN;
    data[1][17] = -150.0;
    let results = simulate_kernel(table, &table.all(), &data, 1.0, 256);
    assert_matches_reference(&results, &data, 1.0, "faults in the custom table");
    let report = NanReport {
        table,
        range: table.all(),
        q_abs_ref_eff: q_abs_ref_eff(1.0),
        slots: results,
    };
    let tripped: Vec<(&str, u32, Option<u64>)> = report
        .tripped()
        .map(|r| (r.name.as_str(), r.flags, r.first_bad))
        .collect();
    assert_eq!(
        tripped,
        [
            (
                "hidden",
                FLAG_NON_FINITE,
                Some(CHECK_CHUNK_ELEMENTS as u64 + 2)
            ),
            ("q_max", FLAG_OVER_THRESHOLD, Some(17)),
        ]
    );
    let q = report.slot(custom::slot::q_max).unwrap();
    assert_eq!((q.max_abs, q.threshold), (150.0, Some(custom::Q_FACTOR)));
    assert!(!report.slot(custom::slot::net_weights).unwrap().tripped());
    assert_eq!(report.id_of(q), Some(custom::slot::q_max));
    // A seed slot of the same index is not this report's slot 1.
    assert!(report.slot(SEED_TABLE.id(1).unwrap()).is_none());
    let line = report.to_string();
    for needle in [
        "2 of 3 slots tripped",
        "slot 0 hidden: non-finite",
        "slot 1 q_max: over-threshold",
        "max |x| 1.5e2 > threshold 1e2",
    ] {
        assert!(line.contains(needle), "`{needle}` not in: {line}");
    }
    // At Q_ABS_REF 2 the threshold is 2e2: only the NaN remains.
    let results = simulate_kernel(table, &table.all(), &data, 2.0, 256);
    assert_matches_reference(&results, &data, 2.0, "custom table at q 2");
    let names: Vec<_> = results
        .iter()
        .filter(|r| r.tripped())
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(names, ["hidden"]);
}
