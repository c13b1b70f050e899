//! The explanation mode on real entries: every value an entry stores to its parameter buffer is
//! explained by a chain of definitions, each reading the register the next one defines, from the
//! stored register down to the bound's load found here independently from the PTX (the last
//! parameter's `ld.param`, or the step record's field at `BOUND_OFFSET` through a pointer from
//! it), with the audit's own verdict; an unclamped store is explained as not proven.
#[path = "../support/mod.rs"]
mod support;

use adamant_build::audit::{audit, explain, ClampFailure, LinkRole, StoreExplanation};
use adamant_build::ptx::{self, Instruction};
use adamant_device::abi;
use adamant_device::step::BOUND_OFFSET;

use support::ptx_edit::*;

/// The instructions of entry `name` of `ptx`, and the name of its last parameter.
fn body(ptx: &str, name: &str) -> (Vec<Instruction>, String) {
    let entry = ptx::entries(ptx)
        .into_iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no entry {name}"));
    let last = entry.params.last().expect("a parameter").name.clone();
    (entry.instructions(), last)
}

/// The one instruction at `line`.
fn at(insts: &[Instruction], line: usize) -> &Instruction {
    insts
        .iter()
        .find(|i| i.line == line)
        .unwrap_or_else(|| panic!("no instruction at line {line}"))
}

/// Whether `inst` defines `reg` (a load: any of its destinations, before the address).
fn defines(inst: &Instruction, reg: &str) -> bool {
    let dests = match inst.op() {
        "ld" => registers(inst.text.split('[').next().unwrap_or_default()),
        _ => registers(&inst.text).into_iter().take(1).collect(),
    };
    dests.iter().any(|d| d == reg)
}

/// Each link defines its register, which the instruction before it in the chain reads (the
/// store, for the first, which must store that register).
fn assert_linked(insts: &[Instruction], store: &StoreExplanation) {
    let mut reader = at(insts, store.store.line);
    assert_eq!(store.chain.first().map(|l| &l.register), Some(&store.value));
    for link in &store.chain {
        let inst = at(insts, link.at.line);
        assert_eq!(inst.text, link.at.instruction);
        assert!(defines(inst, &link.register), "{store:#?}");
        assert!(
            registers(&reader.text).contains(&link.register),
            "`{}` does not read {}",
            reader.text,
            link.register
        );
        reader = inst;
    }
}

/// The `ld.param` lines of `last` and the registers they define.
fn param_loads<'a>(insts: &'a [Instruction], last: &str) -> Vec<&'a Instruction> {
    let operand = format!("[{last}]");
    insts
        .iter()
        .filter(|i| i.op() == "ld" && i.has_modifier("param") && i.text.contains(&operand))
        .collect()
}

/// A stepped entry's bound loads, found from the text: a load through `[q]` or `[q+k]`, with `q`
/// the `cvta` of the step-state parameter's register, whose element at `BOUND_OFFSET` is
/// `(line, register)`.
fn record_bound_loads(insts: &[Instruction], last: &str) -> Vec<(usize, String)> {
    let params: Vec<String> = param_loads(insts, last)
        .iter()
        .map(|i| registers(&i.text)[0].clone())
        .collect();
    let pointers: Vec<String> = insts
        .iter()
        .filter(|i| i.op() == "cvta" && params.contains(&registers(&i.text)[1]))
        .map(|i| registers(&i.text)[0].clone())
        .collect();
    let mut out = Vec::new();
    for i in insts
        .iter()
        .filter(|i| i.op() == "ld" && !i.has_modifier("param"))
    {
        let Some((dests, address)) = i.text.split_once('[') else {
            continue;
        };
        let (base, offset) = match address.trim_end_matches(']').split_once('+') {
            Some((b, k)) => (b, k.parse::<usize>().unwrap()),
            None => (address.trim_end_matches(']'), 0),
        };
        if pointers.iter().any(|p| p == base) && offset <= BOUND_OFFSET {
            if let Some(reg) = registers(dests).get((BOUND_OFFSET - offset) / 4) {
                out.push((i.line, reg.clone()));
            }
        }
    }
    out
}

/// Explains `name`, checks every store's chain and verdict against the bound loads `bounds`
/// (line, register), and returns the explanation's text.
fn check(name: &str, bounds: impl Fn(&[Instruction], &str) -> Vec<(usize, String)>) -> String {
    let kernels = abi::kernels();
    let x = explain(real(), &kernels, name).unwrap();
    let (insts, last) = body(real(), name);
    let report = audit(real(), &kernels);
    let clamp = report.entry(name).unwrap().clamp.unwrap();
    assert_eq!(x.stores.len(), clamp.stored_values, "{x}");
    assert!(x.violations.is_empty() && x.declared, "{x}");
    let bounds = bounds(&insts, &last);
    assert!(!bounds.is_empty(), "{name}: no bound load found");
    let text = x.to_string();
    let mut cases = 0;
    for s in &x.stores {
        assert_eq!(at(&insts, s.store.line).op(), "st");
        assert_linked(&insts, s);
        let load = s
            .chain
            .iter()
            .find(|l| l.role == LinkRole::BoundLoad)
            .unwrap_or_else(|| panic!("no bound load in {s:#?}"));
        assert!(
            bounds.contains(&(load.at.line, load.register.clone())),
            "{s:#?}"
        );
        if let Some(origin) = s
            .chain
            .last()
            .filter(|l| l.role == LinkRole::RecordParameter)
        {
            assert!(origin.at.instruction.contains(&format!("[{last}]")));
        }
        assert!(s.clamped.is_some(), "{s:#?}");
        // The store is judged in the storage its parameter declares.
        let param = abi::kernel(name)
            .unwrap()
            .params
            .iter()
            .find(|p| p.name == s.buffer)
            .unwrap_or_else(|| panic!("{name} has no parameter `{}`", s.buffer));
        assert!(param.role.is_param(), "{s:#?}");
        assert_eq!(
            (param.storage, param.rounding),
            (s.storage, s.rounding),
            "{s:#?}"
        );
        cases += s.verdict.as_ref().copied().unwrap();
        for line in [s.store.line, load.at.line] {
            assert!(text.contains(&format!("line {line} ")), "{line}:\n{text}");
        }
    }
    assert_eq!(cases, clamp.cases_evaluated);
    text
}

#[test]
fn a_plain_entry_is_explained_down_to_its_bound_parameter() {
    let text = check("iqn_adam_kernel", |insts, last| {
        param_loads(insts, last)
            .iter()
            .map(|i| (i.line, registers(&i.text)[0].clone()))
            .collect()
    });
    assert!(text.contains("verdict: proven clamped"), "{text}");
    assert!(!text.contains("NOT proven"), "{text}");
}

#[test]
fn a_stepped_multi_tensor_entry_is_explained_down_to_its_step_record() {
    let name = "iqn_adam_kernel_multi_stepped";
    let text = check(name, record_bound_loads);
    let x = explain(real(), &abi::kernels(), name).unwrap();
    for s in &x.stores {
        assert!(!s.scales.is_empty(), "{s:#?}");
        let last = s.chain.last().unwrap();
        assert_eq!(last.role, LinkRole::RecordParameter, "{s:#?}");
    }
    assert!(text.contains("the tensor's scale"), "{text}");
}

/// The mixed-precision fused entry: each store is explained through the parameter table of its
/// rule's storage, and every table is used (bf16 to nearest and stochastically, f16, f32).
#[test]
fn a_fused_entrys_stores_are_explained_in_their_tables_storage() {
    let name = "adamant_fused_mixed";
    let kernels = abi::kernels();
    let x = explain(real(), &kernels, name).unwrap();
    let clamp = audit(real(), &kernels).entry(name).unwrap().clamp.unwrap();
    assert_eq!(x.stores.len(), clamp.stored_values, "{x}");
    let params = abi::kernel(name).unwrap().params;
    for s in &x.stores {
        assert!(s.verdict.is_ok(), "{s:#?}");
        let p = params.iter().find(|p| p.name == s.buffer).unwrap();
        assert_eq!((p.storage, p.rounding), (s.storage, s.rounding), "{s:#?}");
    }
    let text = x.to_string();
    for table in [
        "`param` (f32)",
        "`param_bf16` (bf16, nearest)",
        "`param_bf16_sr` (bf16, stochastic)",
        "`param_f16` (f16, nearest)",
    ] {
        assert!(text.contains(&format!("to {table}")), "{table}:\n{text}");
    }
}

#[test]
fn an_unclamped_store_is_explained_as_not_proven() {
    let name = "iqn_adam_kernel";
    let ptx = edit_entry(real(), name, |e| {
        assert!(bypass_clamp(e, None, false) > 0);
    });
    let x = explain(&ptx, &abi::kernels(), name).unwrap();
    assert!(!x.violations.is_empty());
    assert!(x
        .stores
        .iter()
        .all(|s| s.chain.is_empty() && s.verdict == Err(ClampFailure::NoBound)));
    let text = x.to_string();
    assert!(text.contains("is not computed from the bound") && text.contains("NOT proven"));
}

#[test]
fn an_unknown_entry_is_refused_with_the_entries_listed() {
    let err = explain(real(), &abi::kernels(), "no_such_entry").unwrap_err();
    assert!(err
        .entries
        .iter()
        .any(|e| e == "iqn_adam_kernel_multi_stepped"));
    let text = err.to_string();
    assert!(
        text.contains("no_such_entry") && text.contains("iqn_adam_kernel,"),
        "{text}"
    );
}
