//! The clamp on the stored bits of a 16-bit parameter (issue 26), on the real PTX of
//! `adamw_bf16`'s and `adamw_f16`'s four entries each: the audit proves them as built, and each
//! edit below is a way a 16-bit store could pass the bound or write beside its element, which it
//! must refuse with the reason (the case where the device code departs from the contract, in the
//! storage type's bits).
#[path = "../support/mod.rs"]
mod support;

use adamant_build::audit::{audit, ClampFailure, Violation};
use adamant_device::abi::{KernelParam, Storage};

use ptx_edit::*;
use support::ptx_edit;

/// Every entry of the two 16-bit kernels, with its parameter's storage.
const ENTRIES: [(&str, Storage); 8] = [
    ("adamw_bf16", Storage::Bf16),
    ("adamw_bf16_stepped", Storage::Bf16),
    ("adamw_bf16_multi", Storage::Bf16),
    ("adamw_bf16_multi_stepped", Storage::Bf16),
    ("adamw_f16", Storage::F16),
    ("adamw_f16_stepped", Storage::F16),
    ("adamw_f16_multi", Storage::F16),
    ("adamw_f16_multi_stepped", Storage::F16),
];

/// The entries the edits below are tried on: each kernel's stepped single-buffer and stepped
/// multi-tensor entry (the plain ones share their sweeps; every one is proven above).
fn edited() -> impl Iterator<Item = (&'static str, Storage)> {
    ENTRIES
        .into_iter()
        .filter(|(name, _)| name.ends_with("_stepped"))
}

#[test]
fn every_16_bit_entry_is_proven_on_its_stored_bits() {
    let report = run(real());
    assert_clamp_proven(&report, ENTRIES.map(|(name, _)| name));
}

/// The hold within the bound has two steps: the limit (the largest value of the storage type
/// within the bound: the bound rounded, minus 0 or 1, `add.s16 %rsD, %rsRounded, %rsStep`),
/// computed once from the bound, and each element's rounded magnitude held at most at it
/// (`min.u16`). Without the limit's step, a bound that is no bf16 value is crossed by rounding to
/// nearest (and in f16 a value past 65,504 is stored as infinity): refused, at a case next to
/// the bound. Without the element's, the stored value reads no bound: refused as no clamp
/// (`without_each_hold` checks that one).
#[test]
fn a_store_without_the_hold_within_the_bound_is_refused() {
    for (name, storage) in edited() {
        let report = without_each_hold(real(), name);
        let wrong = report.violations.iter().any(|v| {
            matches!(v, Violation::ClampBypassed {
                    failure: ClampFailure::Wrong { storage: s, got, expected, .. }, ..
                } if *s == storage && got == &(expected + 1))
        });
        assert!(
            wrong,
            "{name} (limit): no case one step past the bound\n{report}"
        );
        // The report shows the storage type's bits, not f32 readings of them.
        let shown = format!("{} 0x", storage.name());
        assert!(report.to_string().contains(&shown), "{report}");
    }
}

/// Rounding half up instead of to even (one more in the constant added before the dropped bits
/// are cut: bf16's `0x7fff`, f16's `0xfff` folded with its exponent's rebias) stores a value the
/// contract does not, at a tie: refused.
#[test]
fn rounding_ties_away_from_even_is_refused() {
    for (name, storage) in edited() {
        let (from, to) = match storage {
            Storage::Bf16 => (", 32767;", ", 32768;"),
            _ => (", 134221823;", ", 134221824;"),
        };
        let (ptx, edits) = edit_each_line(real(), name, |line| {
            line.contains(from).then(|| line.replace(from, to))
        });
        assert!(edits >= 2, "{name}: {edits} roundings found");
        let report = run(&ptx);
        only_about(&report, name);
        assert!(
            report.violations.iter().all(|v| matches!(
                v,
                Violation::ClampBypassed {
                    failure: ClampFailure::Wrong { .. },
                    ..
                }
            )),
            "{report}"
        );
    }
}

/// A 32-bit store into bf16 weights writes the next weight too, whatever its value: refused
/// by width before any value is looked at.
#[test]
fn a_store_wider_than_the_declared_storage_is_refused() {
    for (name, storage) in edited() {
        let (ptx, edits) = edit_each_line(real(), name, |line| {
            let t = line.trim_start();
            (t.starts_with("st.") && t.contains(".b16")).then(|| line.replace(".b16", ".b32"))
        });
        assert!(edits >= 2, "{name}: {edits} parameter stores found");
        let report = run(&ptx);
        only_about(&report, name);
        // Each store refused, and so the entry has no proven store left.
        assert!(
            report.violations.iter().all(|v| match v {
                Violation::StoreWidth {
                    storage: s, bits, ..
                } => {
                    *s == storage && *bits == Some(32)
                }
                Violation::NoParamStore { .. } => true,
                _ => false,
            }),
            "{report}"
        );
        let refused = report
            .violations
            .iter()
            .filter(|v| matches!(v, Violation::StoreWidth { .. }))
            .count();
        assert_eq!(refused, edits, "{report}");
        let declared = format!("declared `{}`", storage.name());
        assert!(report.to_string().contains(&declared), "{report}");
    }
}

/// The descriptors are the one source of the storage: a list that says the bf16 weights are
/// f32, or an f32 kernel's weights bf16, does not match the PTX's stores, and is refused.
#[test]
fn a_descriptor_that_misstates_the_storage_is_refused() {
    let swap =
        |target: &str, to: Storage| with_param_edited(target, |p| KernelParam { storage: to, ..p });
    for (target, to, stored_bits) in [
        ("adamw_bf16", Storage::F32, 16),
        ("adamw_bf16_multi_stepped", Storage::F32, 16),
        ("adamw_f16_stepped", Storage::F32, 16),
        ("attn_adam_kernel", Storage::Bf16, 32),
    ] {
        let report = audit(real(), &swap(target, to));
        only_about(&report, target);
        assert!(
            report.violations.iter().all(|v| match v {
                Violation::StoreWidth { storage, bits, .. } => {
                    *storage == to && *bits == Some(stored_bits)
                }
                Violation::NoParamStore { .. } => true,
                _ => false,
            }),
            "{target}: {report}"
        );
        assert!(
            report
                .violations
                .iter()
                .any(|v| matches!(v, Violation::StoreWidth { .. })),
            "{target}: {report}"
        );
    }
}
