//! The fused entry's per-tensor bounds, tried on the real PTX. `adamant_fused_step` clamps tensor
//! `t` with the `f32` at `BOUND_OFFSET` of the step record whose pointer is `step_states[t]`
//! (times `weight_clamp_scales[t]`), and the audit must prove, per store, that the record is the
//! stored tensor's: its pointer loaded from `step_states` at the index the parameter pointer was
//! loaded at. Each edit below breaks that in one way (another tensor's record, another field of
//! the right record, a pointer from another table, a write into a record, one rule's clamp
//! removed) and the audit must name it, for `adamant_fused_step` only.
#[path = "../support/mod.rs"]
mod support;

use adamant_abi::record::BOUND_OFFSET;
use adamant_build::audit::{
    clamp_scaled_cases, AuditReport, ClampAudit, ClampFailure, TraceReason, Unprovable, Violation,
};
use adamant_device::abi::{self, ParamRole};
use adamant_kernels::fused::adamant_fused_step::RULES;

use ptx_edit::*;
use support::ptx_edit;

const FUSED: &str = "adamant_fused_step";

/// The fused entry's lines in the real PTX, and the index of its first line in the module.
fn entry_text() -> (Vec<String>, usize) {
    let (start, end) = entry_lines(real(), FUSED);
    let lines = real().lines().skip(start).take(end - start + 1);
    (lines.map(str::to_string).collect(), start)
}

/// The first token of a line (`ld.global.b64`), or "".
fn op(line: &str) -> &str {
    line.split_whitespace().next().unwrap_or("")
}

/// The `[base+offset]` operand of a line, if it has one.
fn address(line: &str) -> Option<(String, i64)> {
    let inner = line.split_once('[')?.1.split_once(']')?.0.trim();
    Some(match inner.split_once('+') {
        Some((base, off)) => (base.trim().to_string(), off.trim().parse().ok()?),
        None => (inner.to_string(), 0),
    })
}

/// The line that defines `reg` last before `before` (the PTX's registers are SSA values here).
fn def_line(e: &[String], before: usize, reg: &str) -> usize {
    (0..before)
        .rev()
        .find(|&j| registers(&e[j]).first().map(String::as_str) == Some(reg))
        .unwrap_or_else(|| panic!("{FUSED}: no definition of {reg}"))
}

/// The global-space register the entry holds its table parameter of `role` in
/// (`ld.param.b64 %a, [param_i]`, then `cvta.to.global.u64 %g, %a`).
fn table(e: &[String], role: ParamRole) -> String {
    let index = abi::kernel(FUSED)
        .expect("the fused entry is declared")
        .params
        .iter()
        .position(|p| p.role == role)
        .unwrap_or_else(|| panic!("{FUSED}: no {role:?} parameter"));
    let param = param_register(FUSED, index);
    e.iter()
        .find(|l| op(l) == "cvta.to.global.u64" && registers(l).get(1) == Some(&param))
        .map(|l| registers(l)[0].clone())
        .unwrap_or_else(|| panic!("{FUSED}: {role:?} ({param}) is never made global"))
}

/// One read of a tensor's bound: `ld.b32 %b, [%rec+12]`, or lane `(12 - k) / 4` of a vector
/// load `ld.v4.b32 {..}, [%rec+k]` that covers it; `%rec` loaded by `ld.global.b64 %rec, [%at]`,
/// `%at = add.s64 <step_states>, %offset`.
struct BoundRead {
    bound: usize,
    record: usize,
    record_reg: String,
    /// The load's address as written between the brackets (`%rd156+12`, `%rd325`).
    address: String,
    /// The bound's lane in a vector load; None for a scalar load.
    lane: Option<usize>,
    offset: String,
    states: String,
}

/// The bound reads from a record whose pointer is read from the step-state table. Every one is
/// the stored tensor's: the entry reads one bound per chunk, and the chunk's record flush uses
/// that value. (The compiler need not compute the record's table offset in the register the
/// parameter table's offset is in, so the finder does not ask for the same register: the audit
/// itself proves the indices equal. A read that no parameter store depended on would make the
/// edits below prove nothing, and their tests fail, not pass.) The compiler may read the bound
/// alone or with the fields before it in one vector load; both are found.
fn bound_reads(e: &[String]) -> Vec<BoundRead> {
    let states = table(e, ParamRole::StepStateTable);
    let mut out = Vec::new();
    for (i, line) in e.iter().enumerate() {
        let o = op(line);
        let word = o.starts_with("ld.") && (o.ends_with(".b32") || o.ends_with(".f32"));
        if !word
            || [".param", ".shared", ".local"]
                .iter()
                .any(|s| o.contains(s))
        {
            continue;
        }
        let Some((record_reg, off)) = address(line) else {
            continue;
        };
        let lanes = if o.contains(".v4") {
            4
        } else if o.contains(".v2") {
            2
        } else {
            1
        };
        let bound = BOUND_OFFSET as i64;
        if !(off <= bound && bound < off + 4 * lanes && (bound - off) % 4 == 0) {
            continue;
        }
        let lane = (lanes > 1).then_some(((bound - off) / 4) as usize);
        let record = def_line(e, i, &record_reg);
        if op(&e[record]) != "ld.global.b64" {
            continue;
        }
        let Some((at, 0)) = address(&e[record]) else {
            continue;
        };
        let add = def_line(e, record, &at);
        let r = registers(&e[add]);
        if op(&e[add]) != "add.s64" || r.len() != 3 || !r[1..].contains(&states) {
            continue;
        }
        let offset = if r[1] == states { &r[2] } else { &r[1] }.clone();
        let address = line
            .split_once('[')
            .unwrap()
            .1
            .split_once(']')
            .unwrap()
            .0
            .trim();
        out.push(BoundRead {
            bound: i,
            record,
            record_reg,
            address: address.to_string(),
            lane,
            offset,
            states: states.clone(),
        });
    }
    assert!(
        !out.is_empty(),
        "{FUSED}: no bound read from the stored tensor's record"
    );
    out
}

/// `ptx` with every bound read's record pointer replaced: `load(entry, read)` gives the lines
/// that load the new pointer into `%rd9604` (scratch registers `%rd9601..%rd9604`, `%r9601`),
/// inserted before the bound's read, which then reads from `%rd9604` at its own offset. Each read gets its own
/// copies of the scratch registers (`fresh`), so the edit stays in SSA form whether the entry
/// reads one bound per chunk before branching to the rule or one in each rule's sweep.
fn redirect_bound(load: impl Fn(&[String], &BoundRead) -> Vec<String>) -> String {
    edit_entry(real(), FUSED, |e| {
        let reads = bound_reads(e);
        for (k, read) in reads.iter().enumerate().rev() {
            let lines: Vec<String> = load(e, read).iter().map(|l| fresh(l, k)).collect();
            let from = format!("[{}]", read.address);
            let moved = read.address.replacen(&read.record_reg, "%rd9604", 1);
            let to = fresh(&format!("[{moved}]"), k);
            e[read.bound] = e[read.bound].replace(&from, &to);
            e.splice(read.bound..read.bound, lines);
        }
    })
}

/// `line` with the scratch registers `%rd9601..%rd9604` and `%r9601` renamed for the `k`-th
/// bound read: `%rd9601` becomes `%rd90<k>1` (`%rd90001`, `%rd90011`, ...).
fn fresh(line: &str, k: usize) -> String {
    let mut out = line.to_string();
    for n in 1..=4 {
        out = out.replace(&format!("%rd960{n}"), &format!("%rd9{:03}{n}", k));
    }
    out.replace("%r9601", &format!("%r9{:03}1", k))
}

/// Whether `reg` is one of [`fresh`]'s renamings of `%r9601` or `%rd9601`.
fn is_fresh_index(reg: &str) -> bool {
    let digits = reg.trim_start_matches("%rd").trim_start_matches("%r");
    digits.len() == 5 && digits.starts_with('9') && digits.ends_with('1')
}

/// The pristine entry's clamp audit.
fn pristine() -> ClampAudit {
    let report = run(real());
    assert!(report.is_ok(), "{report}");
    report
        .entry(FUSED)
        .and_then(|e| e.clamp)
        .expect("the fused entry's clamp is audited")
}

/// The audit rejects the edit, only for the fused entry, and every violation is a bypass of its
/// clamp whose failure satisfies `want`; returns how many there are.
fn rejected(ptx: &str, want: impl Fn(&ClampFailure) -> bool) -> (AuditReport, usize) {
    let report = run(ptx);
    only_about(&report, FUSED);
    assert_eq!(report.entry(FUSED).unwrap().clamp_verified, Some(false));
    for v in &report.violations {
        match v {
            Violation::ClampBypassed { failure, .. } if want(failure) => {}
            other => panic!("unexpected violation: {other}\n{report}"),
        }
    }
    let n = report.violations.len();
    (report, n)
}

/// Every stored value of the entry is rejected for a failure that satisfies `want`: they all
/// share the one bound read.
fn every_store_rejected(ptx: &str, want: impl Fn(&ClampFailure) -> bool) {
    let (report, n) = rejected(ptx, want);
    assert_eq!(n, pristine().stored_values, "{report}");
}

/// Whether line `l` is a global (or generic) store whose every value is a clamp's result (a
/// `selp.f32` output, `pre_clamp_values`): the parameter stores.
fn is_clamped_store(l: &str, pre: &std::collections::HashMap<String, String>) -> bool {
    let o = op(l);
    let global = o.starts_with("st.")
        && ![".param", ".shared", ".local"]
            .iter()
            .any(|s| o.contains(s));
    let values = l
        .split_once("],")
        .map(|(_, v)| registers(v))
        .unwrap_or_default();
    global && !values.is_empty() && values.iter().all(|v| pre.contains_key(v))
}

#[test]
fn the_pristine_fused_entry_proves_every_parameter_store() {
    let clamp = pristine();
    let report = run(real());
    let entry = report.entry(FUSED).unwrap();
    assert_eq!(entry.clamp_verified, Some(true), "{report}");
    // Counted from the text: the stores of clamped values, and the values they store.
    let (e, _) = entry_text();
    let pre = pre_clamp_values(&e);
    let stores: Vec<&String> = e.iter().filter(|l| is_clamped_store(l, &pre)).collect();
    let values: usize = stores
        .iter()
        .map(|l| registers(l.split_once("],").unwrap().1).len())
        .sum();
    // Each rule's sweep has its own clamped stores, exactly two for these f32 rules (a vector
    // loop and a scalar tail), however the entry reaches it (a switch per chunk, or a loop per
    // rule): a rule the entry never reached would leave two fewer. (This replaces counting the
    // switch's branches, which only the switch layout has.)
    assert!(RULES.len() >= 6, "{} rules", RULES.len());
    assert_eq!(stores.len(), 2 * RULES.len(), "{} stores", stores.len());
    assert_eq!(clamp.param_stores, stores.len(), "{clamp:?}");
    assert_eq!(clamp.stored_values, values, "{clamp:?}");
    assert_eq!(clamp.clamped_values, clamp.stored_values, "{clamp:?}");
    assert!(
        clamp.cases_evaluated >= clamp.stored_values * clamp_scaled_cases().len(),
        "{clamp:?}"
    );
    let written = entry
        .writes
        .as_ref()
        .unwrap()
        .per_param
        .iter()
        .find(|(p, _)| p == "param");
    assert_eq!(
        written.map(|(_, n)| *n),
        Some(clamp.param_stores),
        "{report}"
    );
    assert!(!bound_reads(&e).is_empty());
}

/// The lines that load the pointer at the bound read's own offset from the table of `role` into
/// `%rd9604`.
fn pointer_from(role: ParamRole) -> impl Fn(&[String], &BoundRead) -> Vec<String> {
    move |e, r| {
        vec![
            format!("\tadd.s64 \t%rd9603, {}, {};", table(e, role), r.offset),
            "\tld.global.b64 \t%rd9604, [%rd9603];".to_string(),
        ]
    }
}

#[test]
fn the_bound_reread_from_the_right_record_is_proven() {
    // The control of the edits below: the record pointer loaded again, from `step_states` at
    // the stored pointer's index, still proves every store, so what they break is their change.
    let report = run(&redirect_bound(pointer_from(ParamRole::StepStateTable)));
    assert!(report.is_ok(), "{report}");
    let clamp = report.entry(FUSED).and_then(|e| e.clamp).unwrap();
    assert_eq!(clamp, pristine());
}

#[test]
fn the_bound_of_the_next_tensors_record_is_another_tensors() {
    // `step_states[t + 1]`: a well-formed table load, at another index than the parameter
    // pointer's.
    let ptx = redirect_bound(|e, r| {
        let scaled = def_line(e, r.record, &r.offset);
        let regs = registers(&e[scaled]);
        let index = match op(&e[scaled]) {
            "shl.b64" => vec![
                format!("\tadd.s64 \t%rd9601, {}, 1;", regs[1]),
                "\tshl.b64 \t%rd9602, %rd9601, 3;".to_string(),
            ],
            "mul.wide.u32" => vec![
                format!("\tadd.s32 \t%r9601, {}, 1;", regs[1]),
                "\tmul.wide.u32 \t%rd9602, %r9601, 8;".to_string(),
            ],
            other => panic!("the record's offset is `{other}`"),
        };
        let load = [
            format!("\tadd.s64 \t%rd9603, {}, %rd9602;", r.states),
            "\tld.global.b64 \t%rd9604, [%rd9603];".to_string(),
        ];
        index.into_iter().chain(load).collect()
    });
    every_store_rejected(&ptx, |f| {
        matches!(f, ClampFailure::OtherTensorBound { bound_index, pointer_index, .. }
            if is_fresh_index(bound_index) && pointer_index != bound_index)
    });
}

#[test]
fn a_record_pointer_read_at_a_constant_offset_is_unprovable() {
    // `[&step_states[t] + 8]`: the next tensor's record, by an offset the index tracer refuses.
    let ptx = redirect_bound(|e, r| {
        let at = address(&e[r.record]).unwrap().0;
        vec![format!("\tld.global.b64 \t%rd9604, [{at}+8];")]
    });
    every_store_rejected(&ptx, |f| {
        matches!(f, ClampFailure::Unprovable { reason: Unprovable::BoundTensor(e) }
            if e.reason == TraceReason::ConstantOffset { bytes: 8 })
    });
}

#[test]
fn the_first_tensors_record_is_unprovable() {
    // `step_states[0]`: the table read with no index at all.
    let ptx = redirect_bound(|_, r| vec![format!("\tld.global.b64 \t%rd9604, [{}];", r.states)]);
    every_store_rejected(&ptx, |f| {
        matches!(f, ClampFailure::Unprovable { reason: Unprovable::BoundTensor(e) }
            if e.reason == TraceReason::NotTablePlusIndex)
    });
}

#[test]
fn another_field_of_the_right_record_is_not_the_bound() {
    // `[%rec+12]` -> `[%rec+16]`: the right record, but not its bound. The values still depend
    // on the tensor's scale, so the prover follows them, and finds no read of a bound.
    // In a vector load that covers the bound, the bound's lane loads into a register nothing
    // reads, and the bound's register is loaded from the next field by a load of its own: every
    // other lane is left as it was.
    let ptx = edit_entry(real(), FUSED, |e| {
        for (k, r) in bound_reads(e).iter().enumerate().rev() {
            let moved = format!("[{}+{}]", r.record_reg, BOUND_OFFSET + 4);
            match r.lane {
                None => {
                    let from = format!("[{}+{BOUND_OFFSET}]", r.record_reg);
                    e[r.bound] = e[r.bound].replace(&from, &moved);
                }
                Some(lane) => {
                    let (head, rest) = e[r.bound].split_once('{').unwrap();
                    let (list, tail) = rest.split_once('}').unwrap();
                    let mut regs: Vec<String> =
                        list.split(',').map(|t| t.trim().to_string()).collect();
                    let bound = std::mem::replace(&mut regs[lane], fresh("%r9601", k));
                    e[r.bound] = format!("{head}{{{}}}{tail}", regs.join(", "));
                    e.insert(r.bound + 1, format!("\tld.b32 \t{bound}, {moved};"));
                }
            }
        }
    });
    every_store_rejected(&ptx, |f| {
        matches!(
            f,
            ClampFailure::Unprovable {
                reason: Unprovable::BoundNotRead
            }
        )
    });
}

#[test]
fn a_record_pointer_from_another_table_is_not_the_bound() {
    // The pointer at the right index, of the rule table and of the parameter table: what it
    // points at is no step record, so the values are built from the scale and no bound.
    for role in [ParamRole::RuleTable, ParamRole::ParamTable] {
        let ptx = redirect_bound(pointer_from(role));
        every_store_rejected(&ptx, |f| {
            matches!(
                f,
                ClampFailure::Unprovable {
                    reason: Unprovable::BoundNotRead
                }
            )
        });
    }
}

#[test]
fn a_store_into_a_step_record_is_a_write_to_a_read_only_table() {
    // An infinite bound written into the tensor's record would turn its clamp off from the next
    // launch on: the step-state table's records are not writable.
    let ptx = edit_entry(real(), FUSED, |e| {
        let r = bound_reads(e).remove(0);
        let store = format!("\tst.b32 \t[{}+{BOUND_OFFSET}], 0f7F800000;", r.record_reg);
        e.insert(r.record + 1, store);
    });
    let report = run(&ptx);
    only_about(&report, FUSED);
    assert!(
        matches!(report.violations.as_slice(), [Violation::WriteToReadOnly { param, role, .. }]
            if param == "step_states" && role == "StepStateTable"),
        "{report}"
    );
}

#[test]
fn each_clamped_store_with_its_clamp_removed_fails_alone() {
    // Every store of clamped values in turn (each rule's vector loop and scalar tail) gets the
    // values before the clamp: exactly that store's values are reported, and every other store
    // stays proven. One edit per store, so no rule's stores depend on how the entry is laid out.
    let stored = pristine().stored_values;
    let (e, start) = entry_text();
    let pre = pre_clamp_values(&e);
    let stores: Vec<usize> = (0..e.len())
        .filter(|&i| is_clamped_store(&e[i], &pre))
        .collect();
    assert!(stores.len() >= 2 * RULES.len(), "{} stores", stores.len());
    for at in stores {
        let (address, values) = e[at].split_once("],").unwrap();
        let lanes = registers(values);
        let raw: Vec<&str> = lanes.iter().map(|v| pre[v].as_str()).collect();
        let unclamped = match values.contains('{') {
            true => format!(" {{{}}};", raw.join(", ")),
            false => format!(" {};", raw[0]),
        };
        let ptx = edit_entry(real(), FUSED, |e| e[at] = format!("{address}],{unclamped}"));
        let (report, n) = rejected(&ptx, |f| matches!(f, ClampFailure::NoBound));
        assert_eq!(n, lanes.len(), "{report}");
        assert!(
            report.violations.iter().all(|v| matches!(v,
                Violation::ClampBypassed { line, .. } if *line == start + at + 1)),
            "{report}"
        );
        let clamp = report.entry(FUSED).unwrap().clamp.unwrap();
        assert_eq!(clamp.clamped_values, stored - lanes.len(), "{clamp:?}");
    }
}
