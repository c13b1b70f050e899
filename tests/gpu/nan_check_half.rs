//! The NaN checker over 16-bit slots (issue 26): bf16 and f16 buffers are judged on the values
//! they store, widened here by the `half` crate (not the device's conversion) and checked by the
//! CPU reference (`adamant::nan_check_reference`): flags, largest `|x|` and first bad index, for
//! NaN, `±inf`, a finite value over the threshold, f16's largest finite value and subnormals, in
//! slots whose 16-byte groups are aligned and in one bound at an odd element (read an element
//! at a time), next to an f32 slot in the same launch.
//!
//! Every test needs a CUDA GPU and is `#[ignore]`d with that reason.
#[path = "../support/mod.rs"]
mod support;

use adamant::nan_check_reference as reference;
use adamant_device::abi::Storage;
use adamant_device::nan_check::{FLAG_NON_FINITE, FLAG_OVER_THRESHOLD};
use adamant_runtime::cust::context::CurrentContext;
use adamant_runtime::nan_check::{NanChecker, NanReport, SlotBindings, CHECK_CHUNK_ELEMENTS};
use adamant_runtime::{DeviceArray, Error};
use support::custom_table as custom;
use support::{half_bits, half_value, runtime};

/// A 16-bit slot's values, as bits on the host and on the device.
struct HalfSlot {
    storage: Storage,
    bits: Vec<u16>,
    device: DeviceArray,
}

impl HalfSlot {
    /// `len` values `0.01 · ((i · 37) mod 2001 − 1000)`, in ±10: under every threshold.
    fn new(storage: Storage, len: usize) -> HalfSlot {
        let bits: Vec<u16> = (0..len)
            .map(|i| half_bits(storage, 0.01 * (((i * 37) % 2001) as f32 - 1000.0)))
            .collect();
        let device = DeviceArray::from_bits(&bits, storage).expect("allocating a 16-bit slot");
        HalfSlot {
            storage,
            bits,
            device,
        }
    }

    /// Every stored value, widened by the `half` crate.
    fn values(&self) -> Vec<f32> {
        self.bits
            .iter()
            .map(|&b| half_value(self.storage, b))
            .collect()
    }

    /// Stores `bits` at `at`, on the host and the device.
    fn set_bits(&mut self, at: usize, bits: u16) {
        self.bits[at] = bits;
        self.device
            .upload_bits(&self.bits)
            .expect("writing the slot");
        CurrentContext::synchronize().expect("synchronizing");
    }
}

fn check(adamant: &adamant_runtime::Adamant, checker: &mut NanChecker<'_>, q: f32) -> NanReport {
    checker
        .enqueue(adamant.stream(), q)
        .expect("enqueueing the check");
    checker.report().expect("reading the report")
}

/// Every slot of `report` against the reference on `data` (slot `i`'s values at `i`).
fn assert_matches(report: &NanReport, data: &[Vec<f32>], q_abs_ref: f32, case: &str) {
    for (result, id) in report.slots.iter().zip(custom::TABLE.ids()) {
        assert_eq!(result.len, data[id.index()].len(), "{case}: {id}");
        let expected = reference::check_slot(&data[id.index()], id.spec().check, q_abs_ref);
        assert!(
            expected.matches(result),
            "{case}: {id}: GPU {result:?}, reference {expected:?}"
        );
    }
}

/// Slot 0 (non-finite) holds bf16, slot 1 (max-abs, 1e2 at `Q_ABS_REF` 1) f16, slot 2 f32;
/// each fault in turn, at the first, a middle and the last element of each 16-bit slot.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn sixteen_bit_slots_are_judged_on_their_stored_values() {
    let adamant = runtime();
    let mut slots = [
        HalfSlot::new(Storage::Bf16, 3 * CHECK_CHUNK_ELEMENTS + 5),
        HalfSlot::new(Storage::F16, 2 * CHECK_CHUNK_ELEMENTS + 11),
    ];
    let weights: Vec<f32> = (0..777).map(|i| (i as f32 * 0.37).sin()).collect();
    let weights_device = DeviceArray::from_host(&weights).unwrap();
    CurrentContext::synchronize().unwrap();
    let mut bindings = SlotBindings::new(custom::TABLE);
    bindings
        .bind(custom::slot::hidden, &slots[0].device)
        .unwrap()
        .bind(custom::slot::q_max, &slots[1].device)
        .unwrap()
        .bind(custom::slot::net_weights, &weights_device)
        .unwrap();
    let mut checker = NanChecker::new(&adamant, custom::TABLE.all(), &bindings).unwrap();
    let data = |slots: &[HalfSlot; 2]| vec![slots[0].values(), slots[1].values(), weights.clone()];

    let report = check(&adamant, &mut checker, 1.0);
    assert_matches(&report, &data(&slots), 1.0, "clean");
    assert!(
        report.slots.iter().all(|r| r.flags == 0),
        "clean: {report:?}"
    );

    // Values to inject, as each type stores them: NaN, ±inf, over the threshold (f16's largest
    // finite among them), a subnormal.
    let faults: &[(&str, f32, u32)] = &[
        ("NaN", f32::NAN, FLAG_NON_FINITE),
        ("+inf", f32::INFINITY, FLAG_NON_FINITE),
        ("-inf", f32::NEG_INFINITY, FLAG_NON_FINITE),
        ("150 (over 1e2)", 150.0, FLAG_OVER_THRESHOLD),
        ("65504 (f16's largest)", 65504.0, FLAG_OVER_THRESHOLD),
        ("a subnormal", 3.0e-7, 0),
    ];
    let mut cases = 0;
    for which in 0..2 {
        let len = slots[which].bits.len();
        for at in [0, len / 2 + 3, len - 1] {
            for &(name, value, flags) in faults {
                let storage = slots[which].storage;
                let bits = half_bits(storage, value);
                let old = slots[which].bits[at];
                slots[which].set_bits(at, bits);
                let case = format!("{name} in {storage:?} slot {which} at {at}");
                let report = check(&adamant, &mut checker, 1.0);
                assert_matches(&report, &data(&slots), 1.0, &case);
                // The non-finite-only slot does not judge magnitudes.
                let expected = if which == 0 {
                    flags & FLAG_NON_FINITE
                } else {
                    flags
                };
                let result = &report.slots[which];
                assert_eq!(result.flags, expected, "{case}");
                assert_eq!(
                    result.first_bad,
                    (expected != 0).then_some(at as u64),
                    "{case}"
                );
                assert!(
                    report
                        .slots
                        .iter()
                        .enumerate()
                        .all(|(i, r)| i == which || r.flags == 0),
                    "{case}: another slot tripped: {report:?}"
                );
                slots[which].set_bits(at, old);
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 2 * 3 * faults.len());

    // The f16 slot bound one element in: its groups straddle 16-byte lines, so the kernel reads
    // it an element at a time; the NaN at its element 9 is the buffer's element 10.
    let nan = half_bits(Storage::F16, f32::NAN);
    slots[1].set_bits(10, nan);
    let shifted_len = slots[1].bits.len() - 1;
    // SAFETY: the region is inside `slots[1].device`, which outlives the checker below.
    unsafe {
        bindings
            .bind_raw(
                custom::slot::q_max,
                slots[1].device.device_ptr() + 2,
                shifted_len,
                Storage::F16,
            )
            .unwrap();
    }
    let mut shifted = NanChecker::new(&adamant, custom::TABLE.all(), &bindings).unwrap();
    let report = check(&adamant, &mut shifted, 1.0);
    let mut expected = data(&slots);
    expected[1].remove(0);
    assert_matches(&report, &expected, 1.0, "f16 slot bound one element in");
    assert_eq!(
        (report.slots[1].flags, report.slots[1].first_bad),
        (FLAG_NON_FINITE, Some(9))
    );

    // A remainder is no value: refused, and the binding it would replace stays.
    let remainder = DeviceArray::zeroed_as(64, Storage::Bf16Remainder).unwrap();
    assert!(matches!(
        bindings.bind(custom::slot::hidden, &remainder),
        Err(Error::BufferStorage {
            storage: Storage::Bf16Remainder,
            ..
        })
    ));
    assert_eq!(
        bindings
            .region(custom::slot::hidden)
            .unwrap()
            .unwrap()
            .storage,
        Storage::Bf16
    );
}
