//! Bypass routes of the clamp, tried on the real PTX: each edit below is a way some value could
//! reach memory that the audit must refuse, with the reason it gives. Grouped by the issue's
//! classes: non-optimizer entries, addresses the audit cannot attribute, clamps with the right
//! shape and the wrong semantics, the NaN checker, and module-level escapes (functions, calls,
//! inline assembly, instructions the audit does not model).
#[path = "../support/mod.rs"]
mod support;

use adamant_build::audit::{audit, AuditReport, ClampFailure, Unattributed, Violation};
use adamant_device::abi::{self, KernelDescriptor, KernelKind, KernelParam, ParamRole};

use ptx_edit::*;
use support::ptx_edit;

const CHECKER: &str = "nan_check_kernel";

/// The only violations are about `entry` and all match `want`; there is at least one.
fn only(report: &AuditReport, entry: &str, want: impl Fn(&Violation) -> bool) {
    assert!(!report.is_ok(), "the audit passed:\n{report}");
    for v in &report.violations {
        assert_eq!(v.entry(), entry, "unexpected: {v}\n{report}");
        assert!(want(v), "unexpected violation: {v:?}\n{report}");
    }
}

fn edit_and_run(kernel: &str, text: &str) -> AuditReport {
    run(&insert_before_ret(real(), kernel, text))
}

// --- 1. Non-optimizer entries are held to their roles --------------------------------------

#[test]
fn the_checker_cannot_write_through_its_read_only_tables() {
    let slots = param_register(CHECKER, 0);
    let report = edit_and_run(
        CHECKER,
        &format!("\tcvta.to.global.u64 \t%rd9250, {slots};\n\tst.global.b32 \t[%rd9250], 0;"),
    );
    only(&report, CHECKER, |v| {
        matches!(v, Violation::WriteToReadOnly { param, role, .. }
            if param == "slots" && role == "IndexTable")
    });
}

#[test]
fn the_checker_cannot_write_through_a_data_pointer_it_reads() {
    // slot.ptr is loaded from the slot table: an address the checker may read, never write.
    let slots = param_register(CHECKER, 0);
    let report = edit_and_run(
        CHECKER,
        &format!(
            "\tcvta.to.global.u64 \t%rd9250, {slots};\n\tld.global.b64 \t%rd9251, [%rd9250];\n\
             \tst.global.b32 \t[%rd9251], 0f7F800000;"
        ),
    );
    only(&report, CHECKER, |v| {
        matches!(
            v,
            Violation::UnattributedWrite {
                reason: Unattributed::NoPointer,
                ..
            }
        )
    });
}

#[test]
fn the_checker_writes_only_its_outputs_and_shared_memory() {
    let report = run(real());
    let e = report.entry(CHECKER).unwrap();
    let w = e.writes.as_ref().unwrap();
    let written: Vec<&str> = w.per_param.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        written,
        ["flags", "max_abs_bits", "first_bad", "arrivals", "report"],
        "{w:?}"
    );
    // Shared memory: each warp's three reduced words and the last block's verdict.
    assert!(w.private_writes >= 4, "{w:?}");
    for p in abi::kernel(CHECKER).unwrap().params {
        if p.role == ParamRole::Output {
            assert!(written.contains(&p.name), "{} is declared output", p.name);
        }
    }
}

/// `descriptor` in place of the registered one of the same name.
fn with_descriptor(descriptor: KernelDescriptor) -> Vec<&'static KernelDescriptor> {
    let leaked: &'static KernelDescriptor = Box::leak(Box::new(descriptor));
    abi::kernels()
        .into_iter()
        .map(|k| if k.name == leaked.name { leaked } else { k })
        .collect()
}

#[test]
fn a_non_optimizer_entry_cannot_declare_a_parameter_buffer() {
    // A soft update `target = tau*online + (1-tau)*target` declared as a plain entry would write
    // a parameter buffer with no clamp: such a descriptor is refused whatever the PTX holds.
    let real_d = abi::kernel(CHECKER).unwrap();
    let mut params: Vec<KernelParam> = real_d.params.to_vec();
    params[5].role = ParamRole::ParamBuffer;
    let kernels = with_descriptor(KernelDescriptor {
        params: Box::leak(params.into_boxed_slice()),
        ..*real_d
    });
    let report = audit(real(), &kernels);
    only(&report, CHECKER, |v| {
        matches!(v, Violation::RoleNotAllowed { param, kind: KernelKind::Other, .. }
            if param == "flags")
    });
}

#[test]
fn an_entry_declared_other_with_an_optimizer_body_is_held_to_its_roles() {
    // iqn_adam_kernel's PTX under a descriptor that says "not an optimizer, p is an input".
    let real_d = abi::kernel("iqn_adam_kernel").unwrap();
    let mut params: Vec<KernelParam> = real_d.params.to_vec();
    for p in &mut params {
        if matches!(p.role, ParamRole::ParamBuffer | ParamRole::State) {
            p.role = ParamRole::Input;
        }
    }
    let kernels = with_descriptor(KernelDescriptor {
        kind: KernelKind::Other,
        params: Box::leak(params.into_boxed_slice()),
        ..*real_d
    });
    let report = audit(real(), &kernels);
    assert!(
        report
            .violations
            .iter()
            .any(|v| matches!(v, Violation::WriteToReadOnly { param, .. } if param == "p")),
        "{report}"
    );
}

// --- 2. Addresses the audit cannot attribute are violations, never "traced" -----------------

/// The audit of the module with a `.global` variable `STASH` and `text` in `kernel`.
fn with_module_variable(kernel: &str, text: &str) -> AuditReport {
    let ptx = insert_before_ret(real(), kernel, text).replacen(
        ".visible .entry",
        ".global .align 8 .b8 STASH[64];\n\n.visible .entry",
        1,
    );
    run(&ptx)
}

#[test]
fn a_module_variable_plus_a_loaded_offset_is_not_a_buffer() {
    let kernel = "iqn_adam_kernel";
    let report = with_module_variable(
        kernel,
        "\tmov.u64 \t%rd9250, STASH;\n\tld.global.b64 \t%rd9251, [%rd9250];\n\
         \tadd.s64 \t%rd9252, %rd9250, %rd9251;\n\tst.global.b32 \t[%rd9252], %r1;",
    );
    only(
        &report,
        kernel,
        |v| matches!(v, Violation::UnattributedWrite { reason: Unattributed::Several { places }, .. } if places.len() > 1),
    );
}

#[test]
fn a_module_variable_alone_is_not_a_buffer() {
    let kernel = "attn_adam_kernel";
    let report = with_module_variable(
        kernel,
        "\tmov.u64 \t%rd9250, STASH;\n\tst.global.b32 \t[%rd9250+8], %r1;",
    );
    only(
        &report,
        kernel,
        |v| matches!(v, Violation::UnattributedWrite { reason: Unattributed::ModuleVariable { symbol }, .. } if symbol == "STASH"),
    );
}

#[test]
fn an_address_built_from_scalar_arguments_is_not_a_buffer() {
    let kernel = "iql_adam_kernel";
    let len = param_register(kernel, 4);
    let report = edit_and_run(
        kernel,
        &format!("\tshl.b64 \t%rd9250, {len}, 2;\n\tst.global.b32 \t[%rd9250], %r1;"),
    );
    only(&report, kernel, |v| {
        matches!(
            v,
            Violation::UnattributedWrite {
                reason: Unattributed::NoPointer,
                ..
            }
        )
    });
}

#[test]
fn an_address_mixing_two_buffers_is_not_attributed() {
    let kernel = "iqn_adam_kernel";
    let (m, v) = (param_register(kernel, 2), param_register(kernel, 3));
    let report = edit_and_run(
        kernel,
        &format!("\tsub.s64 \t%rd9250, {v}, {m};\n\tadd.s64 \t%rd9251, {m}, %rd9250;\n\tst.global.b32 \t[%rd9251], %r1;"),
    );
    only(
        &report,
        kernel,
        |x| matches!(x, Violation::UnattributedWrite { reason: Unattributed::Several { places }, .. } if places.len() > 1),
    );
}

#[test]
fn multi_tensor_tables_are_never_written_and_inputs_never_through() {
    let kernel = "iqn_adam_kernel_multi";
    let (p_table, g_table) = (param_register(kernel, 0), param_register(kernel, 1));
    // Into the parameter table itself: redirects the next launch's writes.
    let report = edit_and_run(
        kernel,
        &format!("\tcvta.to.global.u64 \t%rd9250, {p_table};\n\tst.global.b64 \t[%rd9250], 0;"),
    );
    only(
        &report,
        kernel,
        |v| matches!(v, Violation::WriteToReadOnly { param, .. } if param == "p"),
    );
    // Through a gradient pointer loaded from the input table.
    let report = edit_and_run(
        kernel,
        &format!(
            "\tcvta.to.global.u64 \t%rd9250, {g_table};\n\tld.global.b64 \t%rd9251, [%rd9250];\n\
             \tst.global.b32 \t[%rd9251], %r1;"
        ),
    );
    only(
        &report,
        kernel,
        |v| matches!(v, Violation::WriteToReadOnly { param, .. } if param == "g"),
    );
}

// --- 4. A clamp with the right shape and the wrong semantics --------------------------------

/// The audit of `kernel` with every line of the entry passed through `edit`; asserts that some
/// line changed.
fn run_edited(kernel: &str, edit: impl Fn(&str) -> String) -> AuditReport {
    let ptx = edit_entry(real(), kernel, |e| {
        let before = e.clone();
        for line in e.iter_mut() {
            *line = edit(line);
        }
        assert_ne!(&before, e, "the edit changed nothing in {kernel}");
    });
    run(&ptx)
}

fn wrong_for(report: &AuditReport, kernel: &str, x_is_nan: bool) {
    only(report, kernel, |v| match v {
        Violation::ClampBypassed {
            failure: ClampFailure::Wrong { x, .. },
            ..
        } => !x_is_nan || f32::from_bits(*x).is_nan(),
        _ => false,
    });
}

#[test]
fn a_clamp_that_turns_nan_into_the_bound_fails() {
    // `!(|p| <= b)` instead of `|p| > b`: NaN passes the test and becomes ±bound, hiding it from
    // the NaN checker. A device-only edit (#[cfg(target_arch = "nvptx64")]) of that kind reaches
    // only the PTX, which is what the audit reads.
    for kernel in ["dqn_adam_update_kernel", "curiosity_adam_step_multi"] {
        let report = run_edited(kernel, |l| {
            if l.trim_start().starts_with("setp.gt.f32") && !l.contains("0f00000000") {
                l.replace("setp.gt.f32", "setp.gtu.f32")
            } else {
                l.to_string()
            }
        });
        wrong_for(&report, kernel, true);
    }
}

#[test]
fn the_seeds_min_max_clamp_fails() {
    // fminf(fmaxf(p, -b), b): right for finite values, but NaN becomes -b and b = 0 zeroes
    // every weight.
    let kernel = "iqn_adam_kernel";
    let ptx = edit_entry(real(), kernel, |e| {
        let pre = pre_clamp_values(e);
        let b = param_register(kernel, abi::kernel(kernel).unwrap().params.len() - 1);
        let mut n = 0;
        for line in e.iter_mut() {
            let t = line.trim_start().to_string();
            if t.starts_with("selp.f32") && t.contains(", %p") {
                let regs = registers(&t);
                // Only the outer select (`bound > 0 ? clamped : x`) is replaced by min/max.
                if regs.len() == 4 && !pre.contains_key(&regs[1]) {
                    *line = format!(
                        "\tneg.f32 \t{d}, {b};\n\tmax.f32 \t{d}, {x}, {d};\n\tmin.f32 \t{d}, {d}, {b};",
                        d = regs[0],
                        x = regs[2],
                    );
                    n += 1;
                }
            }
        }
        assert!(n >= 5, "replaced {n} clamps");
    });
    let report = run(&ptx);
    // `d` now has three definitions: unprovable, or (if evaluated) wrong for NaN.
    only(&report, kernel, |v| {
        matches!(v, Violation::ClampBypassed { failure, .. }
            if !matches!(failure, ClampFailure::NoBound))
    });
}

#[test]
fn a_clamp_without_the_bound_gt_0_test_fails() {
    // Dropping `bound > 0 ? ... : x`: a negative bound clamps every weight to ±|bound|.
    let kernel = "attn_adam_kernel";
    let ptx = edit_entry(real(), kernel, |e| {
        let pre = pre_clamp_values(e);
        for line in e.iter_mut() {
            let regs = registers(line);
            if line.trim_start().starts_with("selp.f32")
                && regs.len() == 4
                && pre.contains_key(&regs[1])
            {
                *line = format!("\tmov.b32 \t{}, {};", regs[0], regs[1]);
            }
        }
    });
    let report = run(&ptx);
    wrong_for(&report, kernel, false);
}

#[test]
fn a_clamp_to_a_constant_instead_of_the_bound_fails() {
    let kernel = "iql_adam_kernel_multi";
    let report = run_edited(kernel, |l| {
        if l.trim_start().starts_with("copysign.f32") {
            let regs = registers(l);
            format!("\tcopysign.f32 \t{}, {}, 0f3F800000;", regs[0], regs[1])
        } else {
            l.to_string()
        }
    });
    wrong_for(&report, kernel, false);
}

// --- 6. Module-level escapes ----------------------------------------------------------------

#[test]
fn a_call_is_a_violation() {
    let kernel = "iqn_adam_kernel";
    let report = edit_and_run(kernel, "\tcall.uni \thelper, ();");
    only(&report, kernel, |v| matches!(v, Violation::Call { .. }));
}

#[test]
fn an_instruction_the_audit_does_not_model_is_a_violation() {
    let kernel = "iqn_adam_kernel";
    let p = param_register(kernel, 0);
    for text in [
        format!("\tmultimem.st.global.f32 \t[{p}], %r1;"),
        format!("\tcp.async.bulk.global.shared::cta.bulk_group \t[{p}], [%rd1], 16;"),
        "\tdiscard.global.L2 \t[%rd1], 128;".to_string(),
    ] {
        let report = edit_and_run(kernel, &text);
        only(&report, kernel, |v| {
            matches!(v, Violation::UnknownInstruction { .. })
        });
    }
}

#[test]
fn functions_and_inline_assembly_in_the_module_are_violations() {
    let with_func = format!("{}\n.func helper()\n{{\n\tret;\n}}\n", real());
    let report = run(&with_func);
    assert!(
        report
            .violations
            .iter()
            .any(|v| matches!(v, Violation::Module { problem } if problem.contains("function"))),
        "{report}"
    );
    let with_asm = insert_before_ret(
        real(),
        "iqn_adam_kernel",
        "\t// begin inline asm\n\t// end inline asm",
    );
    let report = run(&with_asm);
    assert!(
        report
            .violations
            .iter()
            .any(|v| matches!(v, Violation::Module { problem } if problem.contains("assembly"))),
        "{report}"
    );
}

#[test]
fn the_clamp_table_covers_the_edge_cases() {
    use adamant_build::audit::{clamp_cases, clamp_contract};
    let cases = clamp_cases();
    let has = |p: &dyn Fn(f32, f32) -> bool| {
        cases
            .iter()
            .any(|&(x, b)| p(f32::from_bits(x), f32::from_bits(b)))
    };
    assert!(cases.len() >= 1000, "{} cases", cases.len());
    assert!(has(&|x, b| x.is_nan() && b > 0.0));
    assert!(has(&|x, b| x == f32::INFINITY && b > 0.0 && b.is_finite()));
    assert!(has(&|x, b| x == f32::NEG_INFINITY && b > 0.0));
    assert!(has(&|x, b| x == b.next_up() && b > 0.0));
    assert!(has(&|x, b| x == -b && b > 0.0));
    assert!(has(&|x, b| x == b.next_down() && b > 1.0));
    assert!(has(&|_, b| b.is_nan()));
    assert!(has(&|_, b| b < 0.0));
    assert!(has(&|_, b| b == 0.0 && b.is_sign_negative()));
    assert!(has(&|x, _| x.is_subnormal()));
    // The contract itself, from its definition.
    assert!(clamp_contract(f32::NAN, 1.0).is_nan());
    assert_eq!(clamp_contract(f32::NEG_INFINITY, 2.0), -2.0);
    assert_eq!(clamp_contract(2.0f32.next_up(), 2.0), 2.0);
    assert_eq!(clamp_contract(-5.0, 0.0), -5.0);
    assert_eq!(clamp_contract(-5.0, -1.0), -5.0);
    assert_eq!(clamp_contract(-5.0, f32::NAN), -5.0);
    assert_eq!(clamp_contract(-0.0, 1.0).to_bits(), (-0.0f32).to_bits());
}

/// `iqn_adam_kernel` with a backdoor in its clamp: `compare(x)` (a PTX line setting `%p9250`
/// from the clamped value `x`) selects 1e30 instead of the clamp's result. Refused at the
/// backdoor's value, 12345.678 (`0x4640E6B6`).
fn backdoor_is_found(compare: impl Fn(&str) -> String) {
    let kernel = "iqn_adam_kernel";
    let ptx = edit_entry(real(), kernel, |e| {
        let pre = pre_clamp_values(e);
        let at = e
            .iter()
            .position(|l| {
                let r = registers(l);
                l.trim_start().starts_with("selp.f32") && r.len() == 4 && pre.contains_key(&r[1])
            })
            .expect("the outer select of the clamp");
        let r = registers(&e[at]);
        let (out, x) = (r[0].clone(), r[2].clone());
        e[at] = e[at].replacen(&out, "%r9250", 1);
        e.insert(at + 1, compare(&x));
        e.insert(
            at + 2,
            format!("\tselp.f32 \t{out}, 0f7149F2CA, %r9250, %p9250;"),
        );
    });
    let report = run(&ptx);
    only(&report, kernel, |v| {
        matches!(v, Violation::ClampBypassed { failure: ClampFailure::Wrong { x, .. }, .. }
            if *x == 0x4640_E6B6)
    });
}

#[test]
fn a_clamp_with_a_backdoor_at_one_value_fails() {
    // `x == 12345.678 ? 1e30 : clamp(x)`: right on every value of the fixed table; the cases
    // drawn from the clamp's own constants find it.
    backdoor_is_found(|x| format!("\tsetp.eq.f32 \t%p9250, {x}, 0f4640E6B6;"));
}

#[test]
fn a_backdoor_on_the_bits_of_one_value_fails() {
    // The same backdoor through an integer compare of the value's bits (`setp.eq.b32` against
    // 12345.678's pattern): integer constants are tried as values too.
    backdoor_is_found(|x| format!("\tsetp.eq.b32 \t%p9250, {x}, 1178658486;"));
}

#[test]
fn a_generic_store_through_a_shared_address_is_not_private() {
    // `cvta.shared` makes a generic address inside the shared window; an offset can take it
    // out of the window into global memory, so only st.shared / st.local count as private.
    let report = edit_and_run(
        CHECKER,
        "\tcvta.shared.u64 \t%rd9250, gpu_launch_sized_workgroup_mem;\n\
         \tmov.u32 \t%r9250, %tid.x;\n\tmul.wide.u32 \t%rd9252, %r9250, 1048576;\n\
         \tadd.s64 \t%rd9251, %rd9250, %rd9252;\n\tst.u32 \t[%rd9251], 0;",
    );
    only(&report, CHECKER, |v| {
        matches!(
            v,
            Violation::UnattributedWrite {
                reason: Unattributed::PrivateThroughGeneric { .. },
                ..
            }
        )
    });
    // The same address written with st.shared stays inside the block's shared memory.
    let report = edit_and_run(
        CHECKER,
        "\tmov.u64 \t%rd9250, gpu_launch_sized_workgroup_mem;\n\tst.shared.u32 \t[%rd9250+4], 0;",
    );
    assert!(report.is_ok(), "{report}");
}
