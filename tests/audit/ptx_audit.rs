//! The PTX audit on the real embedded PTX, and on mutations of it that each break one rule: the
//! audit must pass the first and fail every one of the others, for the right reason.
#[path = "../support/mod.rs"]
mod support;

use std::collections::BTreeSet;

use adamant::audit_embedded;
use adamant_build::audit::{audit, ClampFailure, EntryKind, Violation};
use adamant_device::abi::{self, KernelDescriptor, KernelKind, KernelParam};

use ptx_edit::*;
use support::ptx_edit;

#[test]
fn embedded_ptx_passes() {
    let report = audit_embedded();
    assert!(report.is_ok(), "the real PTX fails the audit:\n{report}");
    assert_eq!(report, run(real()));

    let entries_seen: BTreeSet<&str> = report
        .optimizer_entries()
        .map(|e| e.name.as_str())
        .collect();
    // Each kernel has its single-buffer and multi-tensor entries, plain and stepped; and the
    // module has the fused entry over all of them.
    let mut expected: BTreeSet<String> =
        optimizers().iter().flat_map(|k| four_entries(k)).collect();
    let fused: Vec<&str> = abi::kernels()
        .into_iter()
        .filter(|k| k.is_fused())
        .map(|k| k.name)
        .collect();
    let fused_set: BTreeSet<&str> = fused.iter().copied().collect();
    assert_eq!(
        fused_set,
        BTreeSet::from(["adamant_fused_step", "adamant_fused_mixed"])
    );
    expected.extend(fused.iter().map(|f| f.to_string()));
    let expected: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
    assert_eq!(entries_seen, expected, "{report}");

    for e in &report.entries {
        assert_ne!(e.kind, EntryKind::Undeclared, "{} is undeclared", e.name);
        assert!(
            e.params.iter().all(|p| p.type_matches()),
            "{}: {:?}",
            e.name,
            e.params
        );
    }
    for e in report.optimizer_entries() {
        assert_eq!(e.clamp_verified, Some(true), "{}\n{report}", e.name);
        let clamp = e.clamp.expect("optimizer entries are analysed");
        // The 16-byte vector loop and the scalar tail each store the parameter buffer once; in
        // the fused entry, once per rule branch (its own test, audit_fused_bounds, counts them);
        // an entry whose parameter has a companion buffer (`#[param(bf16, master)]`,
        // `remainder`) stores both, each once per loop.
        let descriptor = abi::kernels()
            .into_iter()
            .find(|k| k.name == e.name)
            .expect("declared");
        let stores = match e.name.as_str() {
            // One parameter table per storage, each rule storing through its own.
            "adamant_fused_step" => adamant::kernels::fused::adamant_fused_step::RULES.len(),
            "adamant_fused_mixed" => adamant::kernels::fused::adamant_fused_mixed::RULES.len(),
            _ => {
                let parameter_buffers = descriptor
                    .params
                    .iter()
                    .filter(|p| p.role.is_param())
                    .count();
                assert!((1..=2).contains(&parameter_buffers), "{}", e.name);
                parameter_buffers
            }
        };
        assert_eq!(clamp.param_stores, 2 * stores, "{}: {clamp:?}", e.name);
        assert_eq!(clamp.stored_values, 5 * stores, "{}: {clamp:?}", e.name);
        assert_eq!(clamp.clamped_values, clamp.stored_values, "{}", e.name);
        assert!(
            clamp.cases_evaluated >= 5 * 300,
            "{}: {} clamp cases",
            e.name,
            clamp.cases_evaluated
        );
        let last = e.params.last().expect("has parameters");
        if descriptor.is_fused() {
            assert_eq!(last.name(), "step_states");
            assert_eq!(last.ptx_type, ".u64");
        } else if e.name.ends_with("_stepped") {
            assert_eq!(last.name(), "step_state");
            assert_eq!(last.ptx_type, ".u64");
        } else {
            assert_eq!(last.name(), "weight_clamp_max_abs");
            assert_eq!(last.ptx_type, ".f32");
        }
    }
    // Every declared kernel is in the PTX, and every entry is declared.
    let names: BTreeSet<&str> = report.entries.iter().map(|e| e.name.as_str()).collect();
    for k in abi::kernels() {
        assert!(
            names.contains(k.name),
            "{} is declared but not audited",
            k.name
        );
    }
    assert_eq!(names.len(), abi::kernels().len());

    let table = report.to_string();
    for name in optimizers() {
        assert!(table.contains(name), "{table}");
    }
    assert!(table.contains("no violations"), "{table}");
}

#[test]
fn bypassing_the_clamp_fails_in_every_optimizer() {
    // Every kernel whose weights are f32: its store is the clamp's select itself, which the
    // edit replaces. A 16-bit kernel stores a rounding of it; its bypasses are in
    // `tests/audit/half_storage.rs`.
    let f32_weights = |k: &&&str| {
        abi::kernels().iter().any(|d| {
            d.name == **k
                && d.param_buffer_index()
                    .is_some_and(|i| d.params[i].storage == abi::Storage::F32)
        })
    };
    let all: Vec<String> = optimizers()
        .iter()
        .filter(f32_weights)
        .flat_map(|k| four_entries(k))
        .collect();
    for kernel in all.iter().map(String::as_str) {
        let mut count = 0;
        let ptx = edit_entry(real(), kernel, |e| count = bypass_clamp(e, None, false));
        assert_eq!(
            count, 5,
            "{kernel}: expected 4 vector lanes and 1 scalar value"
        );
        let report = run(&ptx);
        only_about(&report, kernel);
        let found = bypasses(&report, kernel);
        assert_eq!(found.len(), 5, "{kernel}:\n{report}");
        assert_eq!(report.entry(kernel).unwrap().clamp_verified, Some(false));
        let lanes: BTreeSet<Option<usize>> = found
            .iter()
            .map(|v| match v {
                Violation::ClampBypassed { lane, .. } => *lane,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            lanes,
            BTreeSet::from([None, Some(0), Some(1), Some(2), Some(3)])
        );
    }
}

#[test]
fn one_unclamped_lane_of_a_vector_store_fails() {
    let kernel = "dqn_adam_update_kernel";
    let mut count = 0;
    let ptx = edit_entry(real(), kernel, |e| {
        count = bypass_clamp(e, Some(&[2]), true);
    });
    assert_eq!(count, 1);
    let report = run(&ptx);
    only_about(&report, kernel);
    match bypasses(&report, kernel).as_slice() {
        [Violation::ClampBypassed {
            lane: Some(2),
            failure: ClampFailure::NoBound,
            instruction,
            ..
        }] => assert!(instruction.starts_with("st.global.v4.b32"), "{instruction}"),
        other => panic!("expected one bypass of lane 2, got {other:?}\n{report}"),
    }
}

#[test]
fn unclamped_store_in_the_branchy_amsgrad_kernel_fails() {
    // curiosity_adam_step computes max(v_max, v) with branches, so the stored registers have
    // several definitions; only the scalar tail's store is rewritten here.
    let kernel = "curiosity_adam_step";
    let ptx = edit_entry(real(), kernel, |e| {
        let pre = pre_clamp_values(e);
        let line = e
            .iter_mut()
            .rfind(|l| {
                l.trim_start().starts_with("st.global.b32")
                    && registers(l).last().is_some_and(|r| pre.contains_key(r))
            })
            .expect("the scalar parameter store");
        let reg = registers(line).last().unwrap().clone();
        *line = line.replace(&format!("{reg};"), &format!("{};", pre[&reg]));
    });
    let report = run(&ptx);
    only_about(&report, kernel);
    assert!(matches!(
        bypasses(&report, kernel).as_slice(),
        [Violation::ClampBypassed { lane: None, .. }]
    ));
}

#[test]
fn copysign_of_another_parameter_is_not_the_clamp() {
    // iql's update clips the gradient with copysign(grad_clip, g), so its slice has a copysign
    // and reads the bound (through the bound > 0 test) even with the clamp's magnitude swapped
    // to grad_clip: only "copysign of the bound" catches it.
    let kernel = "iql_adam_kernel";
    let d = abi::kernel(kernel).unwrap();
    let bound = d.clamp_bound_index().unwrap();
    let grad_clip = d.params.iter().position(|p| p.name == "grad_clip").unwrap();
    let ptx = edit_entry(real(), kernel, |e| {
        let reg_of = |e: &[String], index: usize| {
            let needle = format!("[{kernel}_param_{index}]");
            let line = e.iter().find(|l| l.contains(&needle)).unwrap();
            registers(line)[0].clone()
        };
        let (b, g) = (reg_of(e, bound), reg_of(e, grad_clip));
        let mut n = 0;
        for line in e.iter_mut() {
            if line.trim_start().starts_with("copysign.f32") && line.ends_with(&format!(", {b};")) {
                *line = line.replace(&format!(", {b};"), &format!(", {g};"));
                n += 1;
            }
        }
        assert_eq!(n, 5);
    });
    let report = run(&ptx);
    only_about(&report, kernel);
    let found = bypasses(&report, kernel);
    assert_eq!(found.len(), 5, "{report}");
    // The swapped copysign makes the clamp depend on a second value besides x: unprovable.
    assert!(
        found.iter().all(|v| matches!(
            v,
            Violation::ClampBypassed {
                failure: ClampFailure::Unprovable { .. },
                ..
            }
        )),
        "{report}"
    );
}

#[test]
fn undeclared_entry_fails() {
    let rogue = "
.visible .entry rogue_adam_kernel(
\t.param .u64 .ptr .align 1 rogue_adam_kernel_param_0,
\t.param .f32 rogue_adam_kernel_param_1
)
{
\t.reg .b32 \t%r<2>;
\t.reg .b64 \t%rd<3>;

\tld.param.b64 \t%rd1, [rogue_adam_kernel_param_0];
\tcvta.to.global.u64 \t%rd2, %rd1;
\tld.param.b32 \t%r1, [rogue_adam_kernel_param_1];
\tst.global.b32 \t[%rd2], %r1;
\tret;

}
";
    let ptx = format!("{}{rogue}", real());
    let report = run(&ptx);
    only_about(&report, "rogue_adam_kernel");
    assert!(matches!(
        report.violations.as_slice(),
        [Violation::UndeclaredEntry { entry, .. }] if entry == "rogue_adam_kernel"
    ));
    let e = report.entry("rogue_adam_kernel").unwrap();
    assert_eq!(e.kind, EntryKind::Undeclared);
    assert_eq!(e.params.len(), 2);
    assert!(report.to_string().contains("UNDECLARED"));
}

#[test]
fn bound_not_last_in_the_ptx_fails() {
    // Swap the last two parameter declarations: the clamp then reads the second-to-last
    // parameter (still named `_param_<last>`), and the last one is bias_correction2.
    let kernel = "dqn_adam_update_kernel";
    let n = abi::kernel(kernel).unwrap().params.len();
    let ptx = edit_entry(real(), kernel, |e| {
        let a = e
            .iter()
            .position(|l| l.contains(&format!("{kernel}_param_{},", n - 2)))
            .unwrap();
        let b = e
            .iter()
            .position(|l| l.trim_end() == format!("\t.param .f32 {kernel}_param_{}", n - 1))
            .unwrap();
        let (la, lb) = (e[a].clone(), e[b].clone());
        e[a] = format!("{},", lb.trim_end());
        e[b] = la.trim_end().trim_end_matches(',').to_string();
    });
    let report = run(&ptx);
    only_about(&report, kernel);
    // The clamp now reads the second-to-last parameter: every parameter store is unproven.
    assert_eq!(bypasses(&report, kernel).len(), 5, "{report}");
}

#[test]
fn bound_not_last_in_the_descriptor_fails() {
    let kernel = "iqn_adam_kernel";
    let real_descriptor = abi::kernel(kernel).unwrap();
    let mut params: Vec<KernelParam> = real_descriptor.params.to_vec();
    let n = params.len();
    params.swap(n - 2, n - 1);
    let swapped: &'static KernelDescriptor = Box::leak(Box::new(KernelDescriptor {
        params: Box::leak(params.into_boxed_slice()),
        ..*real_descriptor
    }));
    let kernels: Vec<&KernelDescriptor> = abi::kernels()
        .into_iter()
        .map(|k| if k.name == kernel { swapped } else { k })
        .collect();
    let report = audit(real(), &kernels);
    only_about(&report, kernel);
    assert!(
        report.violations.contains(&Violation::BoundNotLast {
            entry: kernel.into(),
            bound_index: Some(n - 2),
            param_count: n,
        }),
        "{report}"
    );
}

#[test]
fn missing_declared_kernel_fails() {
    let (start, end) = entry_lines(real(), "iqn_adam_kernel");
    let ptx: String = real()
        .lines()
        .enumerate()
        .filter(|(i, _)| !(start..=end).contains(i))
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let report = run(&ptx);
    assert!(report.entry("iqn_adam_kernel").is_none());
    assert_eq!(
        report.violations,
        vec![Violation::MissingEntry {
            kernel: "iqn_adam_kernel".into(),
            kind: KernelKind::Optimizer,
        }],
        "{report}"
    );
}

#[test]
fn parameter_type_mismatch_fails() {
    let kernel = "attn_adam_kernel";
    let ptx = edit_entry(real(), kernel, |e| {
        for line in e.iter_mut() {
            if line.contains(&format!(".param .f32 {kernel}_param_5,")) {
                *line = line.replace(".f32", ".u32");
            }
        }
    });
    let report = run(&ptx);
    only_about(&report, kernel);
    assert_eq!(
        report.violations,
        vec![Violation::ParamType {
            entry: kernel.into(),
            index: 5,
            name: abi::kernel(kernel).unwrap().params[5].name.into(),
            expected: ".f32".into(),
            ptx: ".u32".into(),
        }],
        "{report}"
    );
    assert_eq!(report.entry(kernel).unwrap().clamp_verified, Some(false));
}

#[test]
fn parameter_count_mismatch_fails() {
    let kernel = "iqn_adam_kernel";
    let ptx = edit_entry(real(), kernel, |e| {
        let i = e
            .iter()
            .position(|l| l.contains(&format!("{kernel}_param_5,")))
            .unwrap();
        e.remove(i);
    });
    let report = run(&ptx);
    only_about(&report, kernel);
    assert!(report.violations.iter().any(
        |v| matches!(v, Violation::ParamCount { declared, ptx, .. } if *ptx + 1 == *declared)
    ));
}

#[test]
fn other_writes_to_the_parameter_buffer_fail() {
    let kernel = "iqn_adam_kernel";
    let p = param_register(kernel, 0);
    let g = param_register(kernel, 1);

    // An atomic add into the parameter buffer: not a store, its result cannot be checked.
    let ptx = insert_before_ret(
        real(),
        kernel,
        &format!("\tcvta.to.global.u64 \t%rd990, {p};\n\tred.global.add.f32 \t[%rd990], %r1;"),
    );
    let report = run(&ptx);
    only_about(&report, kernel);
    assert!(
        matches!(
            report.violations.as_slice(),
            [Violation::UncheckableWrite { .. }]
        ),
        "{report}"
    );

    // The parameter pointer written into the gradient buffer.
    let ptx = insert_before_ret(
        real(),
        kernel,
        &format!("\tcvta.to.global.u64 \t%rd991, {g};\n\tst.global.b64 \t[%rd991], {p};"),
    );
    let report = run(&ptx);
    only_about(&report, kernel);
    assert!(
        matches!(
            report.violations.as_slice(),
            [
                Violation::PointerEscapes { pointer, .. },
                Violation::WriteToReadOnly { param, .. },
            ] if pointer == "p" && param == "g"
        ),
        "{report}"
    );

    // A store through a pointer loaded from memory could hit the parameter buffer.
    let ptx = insert_before_ret(
        real(),
        kernel,
        &format!("\tld.global.b64 \t%rd992, [{g}];\n\tst.global.b32 \t[%rd992+4], %r1;"),
    );
    let report = run(&ptx);
    only_about(&report, kernel);
    assert!(
        matches!(
            report.violations.as_slice(),
            [Violation::UnattributedWrite { .. }]
        ),
        "{report}"
    );

    // An unclamped store through a pointer derived from the parameter buffer by arithmetic.
    let ptx = insert_before_ret(
        real(),
        kernel,
        &format!(
            // The offset from the thread index, not from a register of the compiled entry
            // (whose numbering moves with any change to the code before it).
            "\tmov.b64 \t%rd993, {p};\n\tmov.u32 \t%r990, %tid.x;\n\tmul.wide.u32 \t%rd994, \
             %r990, 4;\n\tadd.s64 \t%rd995, %rd993, %rd994;\n\tst.global.f32 \t[%rd995], \
             0f00000000;"
        ),
    );
    let report = run(&ptx);
    only_about(&report, kernel);
    assert!(
        matches!(
            bypasses(&report, kernel).as_slice(),
            [Violation::ClampBypassed { value, .. }] if value == "0f00000000"
        ),
        "{report}"
    );
}

#[test]
fn optimizer_without_a_parameter_store_fails() {
    let kernel = "attn_adam_kernel";
    let ptx = edit_entry(real(), kernel, |e| {
        let pre = pre_clamp_values(e);
        e.retain(|l| {
            !(l.trim_start().starts_with("st.global")
                && registers(l).iter().any(|r| pre.contains_key(r)))
        });
    });
    let report = run(&ptx);
    only_about(&report, kernel);
    assert_eq!(
        report.violations,
        vec![Violation::NoParamStore {
            entry: kernel.into()
        }]
    );
}

#[test]
fn malformed_ptx_does_not_panic() {
    let lines: Vec<&str> = real().lines().collect();
    // Every 11th line, or about 2,000 cuts of a larger module (each cut audits everything
    // before it, so the test grows with the square of the module): an odd step, so cuts land
    // on every kind of line.
    let step = (lines.len() / 2000).max(11) | 1;
    for cut in (0..lines.len()).step_by(step) {
        let report = run(&lines[..cut].join("\n"));
        // A truncated module lacks kernels (or has a truncated one): never a clean audit.
        assert!(!report.is_ok(), "truncated at line {cut}");
    }
    for junk in [
        "",
        ".entry",
        ".entry (",
        ".visible .entry x(\n",
        ".visible .entry x() {",
        ".visible .entry x() { st.global.b32 [, ; }",
        ".entry x(.param .u64 x_param_0) {\n@ ;\n{ }\n}\n}\n",
        "}}}{{{ .entry .entry .entry",
        "\u{0}\u{ffff}.entry\u{1f600}(",
    ] {
        let report = run(junk);
        assert!(!report.is_ok(), "{junk:?}");
    }
    let report = audit("", &[]);
    assert!(report.is_ok() && report.entries.is_empty());
}

#[test]
fn random_edits_never_panic() {
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    let mut rng = SmallRng::seed_from_u64(0xada_0a17);
    let original: Vec<char> = real().chars().collect();
    let junk = [
        '{', '}', '(', ')', '[', ']', ';', ',', '@', '%', '|', '\n', '.', ':', '!',
    ];
    for _ in 0..60 {
        let mut text = original.clone();
        for _ in 0..rng.gen_range(1..20) {
            let at = rng.gen_range(0..text.len());
            match rng.gen_range(0..3) {
                0 => {
                    let end = (at + rng.gen_range(1..200)).min(text.len());
                    text.drain(at..end);
                }
                1 => text.insert(at, junk[rng.gen_range(0..junk.len())]),
                _ => {
                    let end = (at + rng.gen_range(1..80)).min(text.len());
                    let copy: Vec<char> = text[at..end].to_vec();
                    let to = rng.gen_range(0..text.len());
                    text.splice(to..to, copy);
                }
            }
            if text.is_empty() {
                break;
            }
        }
        let text: String = text.into_iter().collect();
        let report = run(&text);
        let _ = report.to_string();
    }
}

#[test]
fn instruction_lines_point_at_the_ptx() {
    let lines: Vec<&str> = real().lines().collect();
    let mut count = 0;
    for entry in adamant_build::ptx::entries(real()) {
        assert!(entry.complete, "{}", entry.name);
        assert!(lines[entry.line - 1].contains(&format!(".entry {}", entry.name)));
        for inst in entry.instructions() {
            let line = lines[inst.line - 1];
            assert!(
                line.contains(&inst.opcode),
                "line {} is `{line}`, expected {}",
                inst.line,
                inst.text
            );
            count += 1;
        }
    }
    assert!(count > 500, "only {count} instructions parsed");
}

/// A kernel's four entries: plain and stepped, single-buffer and multi-tensor.
fn four_entries(k: &str) -> [String; 4] {
    [
        k.to_string(),
        format!("{k}_multi"),
        format!("{k}_stepped"),
        format!("{k}_multi_stepped"),
    ]
}

/// A stepped entry's bound is the f32 at `BOUND_OFFSET` of its step-state record: moving the
/// load to another field of the record (the lr, say), or off the record, leaves every stored
/// value unproven.
#[test]
fn a_stepped_entry_clamped_with_another_field_fails() {
    for k in optimizers() {
        for kernel in [format!("{k}_stepped"), format!("{k}_multi_stepped")] {
            let last_param = format!("{kernel}_param_");
            let mut edited = 0;
            let ptx = edit_entry(real(), &kernel, |body| {
                // The register the last parameter is loaded into, then its global alias.
                let n_params = body
                    .iter()
                    .filter(|l| l.contains(&last_param) && !l.contains("ld.param"))
                    .count();
                let last = format!("{last_param}{}]", n_params - 1);
                let Some(raw) = body
                    .iter()
                    .find(|l| l.contains("ld.param") && l.contains(&last))
                    .and_then(|l| registers(l).into_iter().next())
                else {
                    return;
                };
                let global = body
                    .iter()
                    .find(|l| {
                        l.contains("cvta.to.global.u64") && l.trim_end_matches(';').ends_with(&raw)
                    })
                    .and_then(|l| registers(l).into_iter().next())
                    .unwrap_or(raw.clone());
                for line in body.iter_mut() {
                    // Any global load of the record: plain, or volatile as the stepped entries
                    // issue theirs (`ld.volatile.global`).
                    let load = line.trim_start();
                    if !(load.starts_with("ld.") && load.contains(".global")) {
                        continue;
                    }
                    for (from, to) in [
                        (format!("[{global}]"), format!("[{global}+4]")),
                        (format!("[{global}+12]"), format!("[{global}+8]")),
                    ] {
                        if line.contains(&from) {
                            *line = line.replace(&from, &to);
                            edited += 1;
                        }
                    }
                }
            });
            assert!(
                edited > 0,
                "{kernel}: no load of the step-state record found"
            );
            let report = run(&ptx);
            assert_eq!(
                report.entry(&kernel).unwrap().clamp_verified,
                Some(false),
                "{kernel}: a bound from another field must not verify\n{report}"
            );
        }
    }
}
