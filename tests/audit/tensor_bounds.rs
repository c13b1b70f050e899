//! Per-tensor bounds, tried on the real PTX: a multi-tensor entry clamps tensor `t` with
//! `tensor_bound(bound, weight_clamp_scales[t])`, and the audit must prove both halves of that:
//! the arithmetic (bound times scale, saturated at the ceiling `BOUND_CEILING`, then the clamp, over
//! `(x, bound, scale)` cases) and the index (the scale is the one of the tensor whose pointer the
//! store goes through). Each edit below breaks one half in every multi-tensor entry, plain and
//! stepped, and the audit must name it.
#[path = "../support/mod.rs"]
mod support;

use adamant_build::audit::{
    audit, clamp_scaled_cases, ClampFailure, TraceReason, Unprovable, Violation,
};
use adamant_device::abi::{self, KernelDescriptor, KernelParam, ParamRole};

use ptx_edit::*;
use support::ptx_edit;

/// Every multi-tensor entry that writes a parameter buffer (plain and stepped).
fn multi_entries() -> Vec<&'static KernelDescriptor> {
    abi::kernels()
        .into_iter()
        .filter(|k| k.is_multi_tensor() && k.clamp_scales_index().is_some())
        .collect()
}

/// The ceiling as a PTX float literal (`0f5D5E0B6B` for 1e18).
fn ceiling_literal() -> String {
    format!("0f{:08X}", adamant_device::clamp::BOUND_CEILING.to_bits())
}

/// One `tensor_bound` in an entry's PTX: `mul.rn.f32 %t, %a, %b` (one factor loaded by a 32-bit
/// global load), `setp.gt.f32 %p, %t, <ceiling>`, `selp.f32 %d, <ceiling>, %t, %p`.
struct Site {
    mul: usize,
    selp: usize,
    /// The line of the scale's load, and its address register.
    load: usize,
    address: String,
}

fn sites(entry: &[String]) -> Vec<Site> {
    let mut out = Vec::new();
    for (i, line) in entry.iter().enumerate() {
        if !line.trim_start().starts_with("mul.rn.f32") || i + 2 >= entry.len() {
            continue;
        }
        let regs = registers(line);
        let (setp, selp) = (&entry[i + 1], &entry[i + 2]);
        let ceiling = ceiling_literal();
        let saturates = setp.trim_start().starts_with("setp.gt.f32")
            && setp.contains(&ceiling)
            && registers(setp).get(1) == Some(&regs[0])
            && selp.trim_start().starts_with("selp.f32")
            && selp.contains(&ceiling);
        if !saturates {
            continue;
        }
        // The scale is the factor loaded from global memory (the bound comes from a parameter
        // or the step record, which is also a global load in a stepped entry: take the load
        // nearest before the multiply whose address is `[%rd]` with no offset).
        let load = (0..i).rev().find(|&j| {
            let l = entry[j].trim_start();
            l.starts_with("ld.global.b32")
                && registers(l).first().is_some_and(|r| regs[1..].contains(r))
                && !l.contains('+')
        });
        if let Some(load) = load {
            let address = registers(&entry[load])[1].clone();
            out.push(Site {
                mul: i,
                selp: i + 2,
                load,
                address,
            });
        }
    }
    out
}

/// `ptx` with `edit` applied to every `tensor_bound` site of `kernel`; panics if there is none.
fn edit_sites(kernel: &str, edit: impl Fn(&mut Vec<String>, &Site)) -> String {
    edit_entry(real(), kernel, |entry| {
        let found = sites(entry);
        assert!(!found.is_empty(), "{kernel}: no tensor_bound in the PTX");
        // Back to front, so that inserted lines do not move the sites still to edit.
        for site in found.iter().rev() {
            edit(entry, site);
        }
    })
}

/// The audit rejects the edit, only for `kernel`, and every violation is a bypass of its clamp
/// whose failure satisfies `want`.
fn rejected(kernel: &str, ptx: &str, want: impl Fn(&ClampFailure) -> bool) {
    let report = run(ptx);
    only_about(&report, kernel);
    for v in &report.violations {
        match v {
            Violation::ClampBypassed { failure, .. } if want(failure) => {}
            other => panic!("{kernel}: unexpected violation: {other}\n{report}"),
        }
    }
}

#[test]
fn the_real_module_proves_every_multi_entry_over_scaled_cases() {
    let report = run(real());
    assert!(report.is_ok(), "{report}");
    let entries = multi_entries();
    assert!(entries.len() >= 12, "plain and stepped multi entries");
    for kernel in entries {
        let clamp = report
            .entry(kernel.name)
            .and_then(|e| e.clamp.as_ref())
            .unwrap_or_else(|| panic!("{}: no clamp audit", kernel.name));
        assert!(clamp.stored_values > 0, "{}", kernel.name);
        assert!(
            clamp.cases_evaluated >= clamp.stored_values * clamp_scaled_cases().len(),
            "{}: {} cases for {} stored values",
            kernel.name,
            clamp.cases_evaluated,
            clamp.stored_values
        );
    }
}

#[test]
fn a_scale_read_one_slot_off_is_unprovable() {
    // `[%rd+4]`: the next tensor's scale, by a constant offset the index tracer refuses.
    for kernel in multi_entries() {
        let ptx = edit_sites(kernel.name, |e, s| {
            let a = &s.address;
            e[s.load] = e[s.load].replace(&format!("[{a}]"), &format!("[{a}+4]"));
        });
        rejected(kernel.name, &ptx, |f| {
            matches!(f, ClampFailure::Unprovable { reason: Unprovable::ScaleTensor(e) }
                    if e.reason == TraceReason::ConstantOffset { bytes: 4 })
        });
    }
}

/// The line that defines `reg` last before `before`.
fn def_line(e: &[String], before: usize, reg: &str) -> usize {
    (0..before)
        .rev()
        .find(|&j| registers(&e[j]).first().map(String::as_str) == Some(reg))
        .unwrap_or_else(|| panic!("no definition of {reg}"))
}

#[test]
fn a_scale_address_moved_by_bytes_is_unprovable() {
    // `base + (index << 2) + 4` spelled as two adds: not a table load the tracer can prove.
    for kernel in multi_entries() {
        let ptx = edit_sites(kernel.name, |e, s| {
            let add = def_line(e, s.load, &s.address);
            let offset = registers(&e[add])[2].clone();
            let bumped = format!("%rd9400{}", s.mul);
            e.insert(add, format!("\tadd.s64 \t{bumped}, {offset}, 4;"));
            e[add + 1] = e[add + 1].replace(&format!(", {offset}"), &format!(", {bumped}"));
        });
        rejected(kernel.name, &ptx, |f| {
            matches!(
                f,
                ClampFailure::Unprovable {
                    reason: Unprovable::ScaleTensor(_)
                }
            )
        });
    }
}

#[test]
fn the_scale_of_the_next_tensor_is_another_tensor() {
    // `scales[tensor + 1]`: a well-formed table load, at another index than the pointers'.
    for kernel in multi_entries() {
        let ptx = edit_sites(kernel.name, |e, s| {
            let add = def_line(e, s.load, &s.address);
            let offset = registers(&e[add])[2].clone();
            let scaled = def_line(e, add, &offset);
            let regs = registers(&e[scaled]);
            let op = e[scaled].trim_start().to_string();
            let (next, index) = (format!("%rd9401{}", s.mul), format!("%rd9402{}", s.mul));
            let lines = if op.starts_with("shl.b64") {
                [
                    format!("\tadd.s64 \t{next}, {}, 1;", regs[1]),
                    format!("\tshl.b64 \t{index}, {next}, 2;"),
                ]
            } else if op.starts_with("mul.wide.u32") {
                let next32 = format!("%r9401{}", s.mul);
                [
                    format!("\tadd.s32 \t{next32}, {}, 1;", regs[1]),
                    format!("\tmul.wide.u32 \t{index}, {next32}, 4;"),
                ]
            } else {
                panic!("{}: the scale's offset is `{op}`", kernel.name)
            };
            e[add] = e[add].replace(&format!(", {offset}"), &format!(", {index}"));
            e.splice(add..add, lines);
        });
        rejected(kernel.name, &ptx, |f| {
            matches!(f, ClampFailure::OtherTensor { .. })
        });
    }
}

#[test]
fn a_clamp_without_the_scale_has_no_tensor_scale() {
    // `mul.rn.f32 %t, %bound, %scale` -> `mov.f32 %t, %bound`: every tensor gets the launch's
    // bound again.
    for kernel in multi_entries() {
        let ptx = edit_sites(kernel.name, |e, s| {
            let regs = registers(&e[s.mul]);
            let scale = registers(&e[s.load])[0].clone();
            let bound = regs[1..]
                .iter()
                .find(|r| **r != scale)
                .expect("two factors");
            e[s.mul] = format!("\tmov.f32 \t{}, {bound};", regs[0]);
        });
        rejected(kernel.name, &ptx, |f| {
            matches!(f, ClampFailure::NoTensorScale)
        });
    }
}

#[test]
fn the_scale_added_instead_of_multiplied_is_wrong() {
    for kernel in multi_entries() {
        let ptx = edit_sites(kernel.name, |e, s| {
            e[s.mul] = e[s.mul].replace("mul.rn.f32", "add.rn.f32");
        });
        rejected(kernel.name, &ptx, |f| {
            matches!(f, ClampFailure::Wrong { scale: Some(_), .. })
        });
    }
}

#[test]
fn a_product_saturated_past_the_ceiling_is_wrong() {
    // Saturating at f32::MAX (the rule before the ceiling) lets a tensor's bound grow past the
    // ceiling, where it cannot bite: the contract says the ceiling.
    // In f16 the edit changes nothing stored: every bound at or past 65,504 (the ceiling and
    // f32::MAX alike) holds a weight to f16's largest finite value, so the audit rightly
    // proves it; the other storage types can hold values past the ceiling.
    let f16 = |k: &KernelDescriptor| {
        k.param_buffer_index()
            .is_some_and(|i| k.params[i].storage == abi::Storage::F16)
    };
    for kernel in multi_entries().into_iter().filter(|k| !f16(k)) {
        let ptx = edit_sites(kernel.name, |e, s| {
            for line in [s.mul + 1, s.selp] {
                e[line] = e[line].replace(&ceiling_literal(), "0f7F7FFFFF");
            }
        });
        rejected(kernel.name, &ptx, |f| {
            matches!(f, ClampFailure::Wrong { scale: Some(_), .. })
        });
    }
}

#[test]
fn in_f16_saturating_at_f32_max_stores_the_same() {
    // The claim above, checked: the edit is proven for the f16 entries (the contract holds on
    // every case), because no f16 weight can exceed 65,504 once held.
    let f16: Vec<_> = multi_entries()
        .into_iter()
        .filter(|k| {
            k.param_buffer_index()
                .is_some_and(|i| k.params[i].storage == abi::Storage::F16)
        })
        .collect();
    assert!(!f16.is_empty());
    for kernel in f16 {
        let ptx = edit_sites(kernel.name, |e, s| {
            for line in [s.mul + 1, s.selp] {
                e[line] = e[line].replace(&ceiling_literal(), "0f7F7FFFFF");
            }
        });
        let report = run(&ptx);
        assert!(report.is_ok(), "{}: {report}", kernel.name);
    }
}

#[test]
fn a_product_that_is_not_saturated_is_wrong() {
    // Without the saturation, bound * scale overflows to +inf and the clamp lets every value
    // through: the contract says the ceiling.
    for kernel in multi_entries() {
        let ptx = edit_sites(kernel.name, |e, s| {
            let regs = registers(&e[s.selp]);
            e[s.selp] = format!("\tmov.f32 \t{}, {};", regs[0], regs[1]);
        });
        rejected(kernel.name, &ptx, |f| {
            matches!(f, ClampFailure::Wrong { scale: Some(_), .. })
        });
    }
}

#[test]
fn the_scale_table_is_read_only() {
    let kernel = multi_entries()[0];
    let index = kernel.clamp_scales_index().expect("scales");
    let scales = param_register(kernel.name, index);
    let ptx = insert_before_ret(
        real(),
        kernel.name,
        &format!(
            "\tcvta.to.global.u64 \t%rd9250, {scales};\n\tst.global.b32 \t[%rd9250], 0f7F800000;"
        ),
    );
    let report = run(&ptx);
    only_about(&report, kernel.name);
    assert!(
        report.violations.iter().all(|v| matches!(v,
            Violation::WriteToReadOnly { param, role, .. }
                if param == "weight_clamp_scales" && role == "ClampScales")),
        "{report}"
    );
}

#[test]
fn a_multi_entry_declared_without_scales_is_refused() {
    // The descriptor says the scales parameter is a chunk table: the entry then has no scale
    // table, which a multi-tensor entry that writes parameters must have, exactly one of.
    for kernel in multi_entries() {
        let index = kernel.clamp_scales_index().expect("scales");
        let params: Vec<KernelParam> = kernel
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut p = *p;
                if i == index {
                    p.role = ParamRole::ChunkTable;
                }
                p
            })
            .collect();
        let edited = KernelDescriptor {
            params: Box::leak(params.into_boxed_slice()),
            ..*kernel
        };
        let kernels: Vec<&KernelDescriptor> = abi::kernels()
            .into_iter()
            .map(|k| if k.name == kernel.name { &edited } else { k })
            .collect();
        let report = audit(real(), &kernels);
        // One parameter table, or two where the parameter has a companion buffer.
        let tables = kernel
            .params
            .iter()
            .filter(|p| p.role == ParamRole::ParamTable)
            .count();
        assert!(
            report.violations.iter().any(|v| matches!(v,
                Violation::ScalesMisdeclared { entry, param_tables, scales: 0 }
                    if entry == kernel.name && *param_tables == tables)),
            "{}: {report}",
            kernel.name
        );
    }
}
