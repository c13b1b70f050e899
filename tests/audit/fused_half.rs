//! The 16-bit stores of a fused entry, tried on the real PTX (`adamant_fused_mixed`: five 16-bit
//! rules beside two f32 ones). Each rule stores its weight through the parameter table of its
//! storage, so the audit proves each store against that table's type (bf16 or f16, rounded to
//! nearest or stochastically), as in the rule's own entries. Each 16-bit store in turn gets, in
//! place of its values, a group of 16-bit values loaded from memory (never clamped): a store to
//! a weight must be caught, lane by lane, at its line; a store to a 16-bit moment (no contract)
//! may pass. Every weight store of the five 16-bit rules is caught: a vector and a scalar one
//! each.
#[path = "../support/mod.rs"]
mod support;

use adamant_build::audit::Violation;
use adamant_kernels::fused::adamant_fused_mixed::RULES;

use ptx_edit::*;
use support::ptx_edit;

const MIXED: &str = "adamant_fused_mixed";

fn op(line: &str) -> &str {
    line.split_whitespace().next().unwrap_or("")
}

/// A store of 16-bit elements to global (or generic) memory.
fn is_store16(line: &str) -> bool {
    let o = op(line);
    o.starts_with("st.")
        && o.ends_with(".b16")
        && ![".shared", ".local", ".param"]
            .iter()
            .any(|s| o.contains(s))
}

/// A load of 16-bit elements, and its destination registers.
fn load16(line: &str) -> Option<Vec<String>> {
    let o = op(line);
    if !(o.starts_with("ld.") && o.ends_with(".b16")) || o.contains(".param") {
        return None;
    }
    let rest = line.trim_start().strip_prefix(o)?;
    Some(registers(rest.split_once('[')?.0))
}

/// The two registers of a load of two 32-bit words (`ld[.global].v2.b32 {%a, %b}, [...]`).
fn load_words(line: &str) -> Option<Vec<String>> {
    let o = op(line);
    if !(o.starts_with("ld.") && o.ends_with(".v2.b32")) || o.contains(".param") {
        return None;
    }
    let rest = line.trim_start().strip_prefix(o)?;
    Some(registers(rest.split_once('[')?.0)).filter(|r| r.len() == 2)
}

#[test]
fn every_sixteen_bit_weight_store_is_proven_and_an_unclamped_one_is_caught() {
    let report = run(real());
    let entry = report.entry(MIXED).expect("the mixed entry is audited");
    assert_eq!(entry.clamp_verified, Some(true), "{report}");
    let sixteen_bit_rules = RULES
        .iter()
        .filter(|r| {
            r.params
                .iter()
                .any(|p| p.role.is_param() && p.storage.bytes() == 2)
        })
        .count();
    assert_eq!(
        sixteen_bit_rules, 5,
        "adamw_bf16, _f16, _bf16_sr, _sr_moments, soft_update_bf16"
    );

    let (start, end) = entry_lines(real(), MIXED);
    let e: Vec<String> = real()
        .lines()
        .skip(start)
        .take(end - start + 1)
        .map(str::to_string)
        .collect();
    let stores: Vec<usize> = (0..e.len()).filter(|&i| is_store16(&e[i])).collect();
    assert!(
        stores.len() >= 2 * sixteen_bit_rules,
        "{} 16-bit stores",
        stores.len()
    );
    let mut caught = 0;
    for &at in &stores {
        let (address, values) = e[at].split_once("],").unwrap();
        let lanes = registers(values);
        // The nearest earlier load of as many 16-bit lanes: a value read from memory, unclamped.
        // A group of four is loaded as two 32-bit words (`vector::W2`): the nearest such load,
        // taken apart into its four lanes just before the store.
        let (prelude, loaded) = (0..at)
            .rev()
            .find_map(|j| load16(&e[j]).filter(|r| r.len() == lanes.len()))
            .map(|r| (String::new(), r))
            .or_else(|| {
                (lanes.len() == 4).then_some(())?;
                let words = (0..at).rev().find_map(|j| load_words(&e[j]))?;
                let split = format!(
                    "\tmov.b32 \t{{%rs_u0, %rs_u1}}, {};\n\tmov.b32 \t{{%rs_u2, %rs_u3}}, {};\n",
                    words[0], words[1]
                );
                Some((split, (0..4).map(|l| format!("%rs_u{l}")).collect()))
            })
            .unwrap_or_else(|| panic!("no 16-bit load before line {}", start + at + 1));
        let unclamped = match values.contains('{') {
            true => format!(" {{{}}};", loaded.join(", ")),
            false => format!(" {};", loaded[0]),
        };
        let ptx = edit_entry(real(), MIXED, |e| {
            e[at] = format!("{prelude}{address}],{unclamped}")
        });
        let edited = run(&ptx);
        // The store's line, after the lines the prelude put before it.
        let line = start + at + 1 + prelude.lines().count();
        let here: Vec<&Violation> = edited
            .violations
            .iter()
            .filter(|v| matches!(v, Violation::ClampBypassed { line: l, .. } if *l == line))
            .collect();
        if here.is_empty() {
            // A moment's store: nothing about its values is a contract.
            assert!(edited.is_ok(), "line {line}: {edited}");
            continue;
        }
        caught += 1;
        assert_eq!(here.len(), lanes.len(), "line {line}: every lane, {edited}");
        assert!(
            edited
                .violations
                .iter()
                .all(|v| matches!(v, Violation::ClampBypassed { line: l, .. } if *l == line)),
            "line {line}: only that store: {edited}"
        );
    }
    assert_eq!(
        caught,
        2 * sixteen_bit_rules,
        "each 16-bit rule's vector and scalar weight stores"
    );
}
