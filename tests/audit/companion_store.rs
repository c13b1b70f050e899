//! The clamp on bf16 weights kept exact by a companion buffer (issue 26's 28 B and 26 B
//! paths), on the real PTX of `adamw_bf16_master` (an f32 master `p_master` next to the bf16
//! weights) and `adamw_bf16_remainder` (a 16-bit remainder `p_remainder`). Each entry stores
//! to two parameter buffers, and the audit proves every store against the contract of the
//! buffer it writes: the f32 clamp for the master, the rounding to nearest held within the bound
//! for the bf16 copy, and for the split master its two halves (the high half to nearest with
//! ties away, held within the bound; the remainder the low 16 bits of the held master). The
//! edits below are ways those stores could go wrong, and the descriptors below misstate them:
//! the audit must refuse each.
#[path = "../support/mod.rs"]
mod support;

use adamant_build::audit::{audit, AuditReport, ClampFailure, Violation};
use adamant_device::abi::{KernelParam, Rounding, Storage};

use ptx_edit::*;
use support::ptx_edit;

const ENTRIES: [&str; 8] = [
    "adamw_bf16_master",
    "adamw_bf16_master_stepped",
    "adamw_bf16_master_multi",
    "adamw_bf16_master_multi_stepped",
    "adamw_bf16_remainder",
    "adamw_bf16_remainder_stepped",
    "adamw_bf16_remainder_multi",
    "adamw_bf16_remainder_multi_stepped",
];

fn width_violations(report: &AuditReport) -> usize {
    report
        .violations
        .iter()
        .filter(|v| matches!(v, Violation::StoreWidth { .. }))
        .count()
}

/// The real PTX with every `opcode` instruction of entry `name` whose last operand is `from`
/// given `to` instead, and the number of instructions edited.
fn last_operand_edited(name: &str, opcode: &str, from: &str, to: &str) -> (String, usize) {
    let (from, to) = (format!(", {from};"), format!(", {to};"));
    edit_each_line(real(), name, |line| {
        (line.trim().starts_with(opcode) && line.ends_with(&from)).then(|| line.replace(&from, &to))
    })
}

#[test]
fn every_store_of_both_buffers_is_proven() {
    let report = run(real());
    assert_clamp_proven(&report, ENTRIES);
    for name in ENTRIES {
        let writes = report
            .optimizer_entries()
            .find(|e| e.name == name)
            .and_then(|e| e.writes.as_ref())
            .expect("audited");
        let companion = if name.contains("master") {
            "p_master"
        } else {
            "p_remainder"
        };
        for buffer in ["p", companion] {
            assert!(
                writes.per_param.iter().any(|(n, c)| n == buffer && *c > 0),
                "{name}: no store to `{buffer}` attributed: {:?}",
                writes.per_param
            );
        }
    }
}

/// The master held below the midpoint under a bf16 value (low bits 0x7fff) made 0x7ffe: the
/// weight is still within the bound, but the remainder no longer completes the master the
/// contract holds (the largest that rounds to the weight): refused, on the remainder's store.
#[test]
fn a_remainder_that_is_not_the_held_master_is_refused() {
    for name in ["adamw_bf16_remainder_stepped", "adamw_bf16_remainder_multi"] {
        let (ptx, edits) = last_operand_edited(name, "or.b32", "32767", "32766");
        assert!(edits >= 2, "{name}: {edits} holds found");
        let report = run(&ptx);
        only_about(&report, name);
        let caught = clamp_failures(&report).iter().any(|f| {
            matches!(
                f,
                ClampFailure::Wrong {
                    storage: Storage::Bf16Remainder,
                    got: 0x7ffe,
                    expected: 0x7fff,
                    ..
                }
            )
        });
        assert!(
            caught,
            "{name}: the remainder's hold was not checked\n{report}"
        );
    }
}

/// Without the hold (the held master replaced by the clamped one), a master within the bound
/// whose high half rounds past it (0.08 is no bf16 value) stores that high half: refused, one
/// bf16 step past the contract.
#[test]
fn a_split_without_the_hold_is_refused() {
    for name in ["adamw_bf16_remainder", "adamw_bf16_remainder_multi_stepped"] {
        let (ptx, edits) = edit_entry_with_count(real(), name);
        assert!(edits >= 2, "{name}: {edits} holds found");
        let report = run(&ptx);
        only_about(&report, name);
        let caught = clamp_failures(&report).iter().any(|f| {
            matches!(
                f,
                ClampFailure::Wrong {
                    storage: Storage::Bf16,
                    rounding: Rounding::TiesAway,
                    got,
                    expected,
                    ..
                } if *got == expected + 1
            )
        });
        assert!(caught, "{name}: no case one step past the bound\n{report}");
    }
}

/// Every `selp.b32 %held, %or, %a, %p` that picks the held master (the `or` with 0x7fff) made a
/// plain `mov` of the unheld one.
fn edit_entry_with_count(ptx: &str, name: &str) -> (String, usize) {
    let mut edits = 0;
    let out = edit_entry(ptx, name, |lines| {
        let held: Vec<String> = lines
            .iter()
            .filter(|l| l.trim().starts_with("or.b32") && l.ends_with(", 32767;"))
            .map(|l| registers(l)[0].clone())
            .collect();
        for line in lines.iter_mut() {
            let regs = registers(line);
            if line.trim().starts_with("selp.b32") && regs.len() == 4 && held.contains(&regs[1]) {
                *line = format!("\tmov.b32 \t{}, {};", regs[0], regs[2]);
                edits += 1;
            }
        }
    });
    (out, edits)
}

/// LLVM packs the remainder's lanes in pairs (`prmt.b32 %d, %a, %b, 0x5410`, then a store of
/// 32-bit elements): the audit takes a pair apart only for that selector. With the lanes
/// swapped (0x1054), the store writes each lane into its neighbour's place: refused as a store
/// of the wrong width, nothing assumed of its layout.
#[test]
fn packed_lanes_in_another_order_are_refused() {
    for name in ["adamw_bf16_remainder", "adamw_bf16_remainder_multi_stepped"] {
        let (ptx, edits) = last_operand_edited(name, "prmt.b32", "0x5410U", "0x1054U");
        assert!(edits >= 2, "{name}: {edits} packs found");
        let report = run(&ptx);
        only_about(&report, name);
        assert!(width_violations(&report) >= 1, "{name}: {report}");
    }
}

/// The descriptor is the one source of each buffer's contract. A split's high half described
/// as rounded to nearest even departs from it at a tie (refused); the master described as bf16,
/// or the remainder as f32, is stored at another width than declared (refused).
#[test]
fn a_descriptor_that_misstates_a_companion_is_refused() {
    let edit = |target: &str, buffer: &'static str, storage: Storage, rounding: Rounding| {
        with_param_edited(target, move |p| match p.name == buffer {
            true => KernelParam {
                storage,
                rounding,
                ..p
            },
            false => p,
        })
    };
    for target in ["adamw_bf16_remainder_stepped", "adamw_bf16_remainder_multi"] {
        let report = audit(real(), &edit(target, "p", Storage::Bf16, Rounding::Nearest));
        only_about(&report, target);
        assert!(
            clamp_failures(&report).iter().any(|f| matches!(
                f,
                ClampFailure::Wrong {
                    rounding: Rounding::Nearest,
                    ..
                }
            )),
            "{target}: {report}"
        );
        let report = audit(
            real(),
            &edit(target, "p_remainder", Storage::F32, Rounding::Nearest),
        );
        only_about(&report, target);
        assert!(width_violations(&report) >= 1, "{target}: {report}");
    }
    for target in ["adamw_bf16_master", "adamw_bf16_master_multi_stepped"] {
        let report = audit(
            real(),
            &edit(target, "p_master", Storage::Bf16, Rounding::Nearest),
        );
        only_about(&report, target);
        assert!(width_violations(&report) >= 1, "{target}: {report}");
        // The bf16 copy described as the high half of a split rounds ties the other way.
        let report = audit(
            real(),
            &edit(target, "p", Storage::Bf16, Rounding::TiesAway),
        );
        only_about(&report, target);
        assert!(!clamp_failures(&report).is_empty(), "{target}: {report}");
    }
}

/// Each store is proven on its own; what ties the two buffers together is that the k-th store of
/// each writes lanes clamped from the same values in the same order. With two lanes of the
/// companion's vector store swapped, every lane is still a valid store of some value, but the
/// weight of element 0 would sit beside the remainder (or the master) of element 1: refused.
#[test]
fn companion_lanes_out_of_step_are_refused() {
    for (name, companion_store) in [
        ("adamw_bf16_remainder_stepped", "st.global.v2.b32"),
        // Every 16-byte store of the entry (the moments' too, which the audit does not tie to
        // anything: only the master's swap is refused).
        ("adamw_bf16_master", "st.global.v4.b32"),
        ("adamw_bf16_master_multi_stepped", "st.v4.b32"),
    ] {
        let (ptx, edits) = edit_each_line(real(), name, |line| {
            let rest = line.trim().strip_prefix(companion_store)?;
            let regs = registers(rest);
            // The address register first, then the lanes: swap the first two lanes.
            let (open, close) = (line.find('{')?, line.find('}')?);
            let lanes: Vec<&str> = line[open + 1..close].split(',').map(str::trim).collect();
            if regs.len() < 3 || lanes.len() < 2 {
                return None;
            }
            let mut swapped = lanes.clone();
            swapped.swap(0, 1);
            Some(format!(
                "{}{}{}",
                &line[..=open],
                swapped.join(", "),
                &line[close..]
            ))
        });
        assert!(edits >= 1, "{name}: no `{companion_store}` found");
        let report = run(&ptx);
        only_about(&report, name);
        assert!(
            report
                .violations
                .iter()
                .any(|v| matches!(v, Violation::CompanionApart { .. })),
            "{name}: {report}"
        );
        assert!(report.to_string().contains("lane by lane"), "{report}");
    }
}

/// A descriptor that declares a third parameter buffer (here the moment `m`, made a parameter
/// buffer) has buffers no contract ties together: refused, whatever its stores.
#[test]
fn a_third_parameter_buffer_is_refused() {
    use adamant_device::abi::ParamRole;
    let target = "adamw_bf16_remainder_stepped";
    let kernels = with_params_edited(target, |p| match p.name {
        "m" => KernelParam {
            role: ParamRole::ParamBuffer,
            ..p
        },
        _ => p,
    });
    let report = audit(real(), &kernels);
    only_about(&report, target);
    assert!(
        report.violations.iter().any(|v| matches!(
            v,
            Violation::CompanionApart { reason, .. } if reason.contains("3 parameter buffers")
        )),
        "{report}"
    );
}
