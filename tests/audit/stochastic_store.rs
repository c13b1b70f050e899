//! The clamp on stochastically rounded bf16 weights (issue 26), on the real PTX of the four
//! entries of `adamw_bf16_sr` and of `adamw_bf16_sr_moments` (whose moments are stochastic too): the audit proves each store for every value its random word
//! can take (a free input: the proof does not rest on the hash), against the stochastic contract
//! (up when the dropped bits plus the word's low 16 reach 2^16, then held within the bound). Each
//! edit below is a way such a store could pass the bound or stop being a rounding, and the audit
//! must refuse it; so must descriptors that misstate the rounding either way.
#[path = "../support/mod.rs"]
mod support;

use adamant_build::audit::{audit, ClampFailure};
use adamant_device::abi::{KernelParam, Rounding};

use ptx_edit::*;
use support::ptx_edit;

const ENTRIES: [&str; 8] = [
    "adamw_bf16_sr",
    "adamw_bf16_sr_stepped",
    "adamw_bf16_sr_multi",
    "adamw_bf16_sr_multi_stepped",
    "adamw_bf16_sr_moments",
    "adamw_bf16_sr_moments_stepped",
    "adamw_bf16_sr_moments_multi",
    "adamw_bf16_sr_moments_multi_stepped",
];

/// The stepped entries (single-buffer and multi-tensor), which the edits are tried on.
fn edited() -> impl Iterator<Item = &'static str> {
    ENTRIES.into_iter().filter(|n| n.ends_with("_stepped"))
}

/// Whether one of `lines` defines `reg` as a magnitude: `abs.f32` of the value, or its bits
/// masked by `0x7fffffff`.
fn magnitude_of(lines: &[String], reg: &str) -> bool {
    lines.iter().any(|l| {
        let t = l.trim();
        (t.starts_with("abs.f32") || (t.starts_with("and.b32") && t.contains("2147483647")))
            && registers(t).first().map(String::as_str) == Some(reg)
    })
}

/// The additions of a random word to a weight's magnitude: `add.s32 %d, %a, %b` whose sum is
/// taken apart for its high half on the next line (`mov.b32 {_, %rs}, %d`).
fn word_addition(lines: &[String], i: usize) -> Option<Vec<String>> {
    let regs = registers(lines[i].trim().strip_prefix("add.s32")?);
    let next = lines.get(i + 1)?.trim();
    (regs.len() == 3 && next.starts_with("mov.b32") && next.contains(&format!("}}, {};", regs[0])))
        .then_some(regs)
}

#[test]
fn every_stochastic_entry_is_proven_for_every_word() {
    let report = run(real());
    assert_clamp_proven(&report, ENTRIES);
}

/// Without the hold, a value within the bound that the word rounds up past it (0.08 is no bf16
/// value) is stored: refused, at a case one bf16 step past the contract, with its word. The
/// hold is each element's `min.u16` with the limit, and the limit's own step back from the
/// rounded bound (`add.s16`); each is removed in turn (without the element's, the stored value
/// reads no bound: refused as no clamp).
#[test]
fn a_stochastic_store_without_the_hold_is_refused() {
    for name in edited() {
        let report = without_each_hold(real(), name);
        let caught = clamp_failures(&report).iter().any(|f| {
                matches!(f, ClampFailure::Wrong { word: Some(_), got, expected, .. } if *got == expected + 1)
            });
        assert!(
            caught,
            "{name} (limit): no case one step past the bound\n{report}"
        );
        assert!(report.to_string().contains("random word"), "{report}");
    }
}

/// A store that drops the word (always down: a truncation, biased toward zero) is no stochastic
/// rounding: refused at a word that rounds up.
#[test]
fn a_store_that_ignores_its_word_is_refused() {
    for name in edited() {
        let (ptx, edits) = edit_lines(real(), name, |lines, i| {
            let regs = word_addition(lines, i)?;
            // The magnitude is the operand defined as `|x|`; the other one is the word.
            let magnitude = regs[1..].iter().find(|r| magnitude_of(&lines[..i], r))?;
            Some(format!("\tmov.b32 \t{}, {magnitude};", regs[0]))
        });
        assert!(edits >= 2, "{name}: {edits} word additions found");
        let report = run(&ptx);
        only_about(&report, name);
        let failures = clamp_failures(&report);
        assert!(!failures.is_empty(), "{report}");
        assert!(
            failures.iter().any(|f| matches!(
                f,
                ClampFailure::Wrong { word: Some(w), got, expected, .. } if *w != 0 && *expected == got + 1
            )),
            "{name}: no case where the word should have rounded up\n{report}"
        );
    }
}

/// A store that special-cases one word value (here: stores 1.0 when the word is 0x1235, a value
/// no table would hold) is caught at that value: the audit also runs every constant of the
/// program as the word.
#[test]
fn a_store_that_special_cases_a_word_is_refused() {
    for name in edited() {
        // The new text spans three lines, spliced in for the one it replaces.
        let (ptx, edits) = edit_lines(real(), name, |lines, i| {
            // The word of the store that follows: the operand of the last word addition before
            // this hold that is not the magnitude.
            let (held, rounded) = element_hold(lines, i)?;
            let limit = registers(&lines[i])
                .into_iter()
                .skip(1)
                .find(|r| *r != rounded)?;
            let word = (0..i).rev().find_map(|j| {
                let add = word_addition(lines, j)?;
                add[1..]
                    .iter()
                    .find(|r| !magnitude_of(&lines[..j], r))
                    .cloned()
            })?;
            Some(format!(
                "\tsetp.eq.s32 \t%p_special{i}, {word}, 4661;\n\tmin.u16 \t%rs_special{i}, {limit}, \
                 {rounded};\n\tselp.b16 \t{held}, 16256, %rs_special{i}, %p_special{i};"
            ))
        });
        assert!(edits >= 2, "{name}: {edits} hold steps found");
        let report = run(&ptx);
        only_about(&report, name);
        let caught = clamp_failures(&report).iter().any(|f| {
            matches!(
                f,
                ClampFailure::Wrong {
                    word: Some(0x1235),
                    got: 0x3f80,
                    ..
                }
            )
        });
        assert!(caught, "{name}: the special word was not tried\n{report}");
    }
}

/// Unmasking the draw (the word's `and` with 0xffff made `and` with all ones) lets words of 32
/// bits reach the addition, which then wraps: the audit widens the words it tries with the
/// register's width, and refuses.
#[test]
fn a_draw_wider_than_16_bits_is_refused() {
    for name in edited() {
        let (ptx, edits) = edit_lines(real(), name, |lines, i| {
            let line = &lines[i];
            (line.trim().starts_with("and.b32") && line.contains(", 65535;"))
                .then(|| line.replace(", 65535;", ", -1;"))
        });
        assert!(edits >= 2, "{name}: {edits} masks found");
        let report = run(&ptx);
        only_about(&report, name);
        assert!(!clamp_failures(&report).is_empty(), "{name}: {report}");
    }
}

/// The descriptor is the one source of the rounding: the stochastic kernel described as rounding
/// to nearest has a second input the proof does not take (refused as unprovable), and a kernel
/// that rounds to nearest described as stochastic departs from the stochastic contract at a word
/// (refused).
#[test]
fn a_descriptor_that_misstates_the_rounding_is_refused() {
    let swap = |target: &str, to: Rounding| {
        with_param_edited(target, |p| KernelParam { rounding: to, ..p })
    };
    for target in ["adamw_bf16_sr_stepped", "adamw_bf16_sr_multi"] {
        let report = audit(real(), &swap(target, Rounding::Nearest));
        only_about(&report, target);
        let failures = clamp_failures(&report);
        assert!(
            !failures.is_empty()
                && failures
                    .iter()
                    .all(|f| matches!(f, ClampFailure::Unprovable { .. })),
            "{target}: {report}"
        );
    }
    for target in ["adamw_bf16_stepped", "adamw_bf16_multi"] {
        let report = audit(real(), &swap(target, Rounding::Stochastic));
        only_about(&report, target);
        let failures = clamp_failures(&report);
        assert!(
            failures
                .iter()
                .any(|f| matches!(f, ClampFailure::Wrong { word: Some(_), .. })),
            "{target}: {report}"
        );
    }
}
