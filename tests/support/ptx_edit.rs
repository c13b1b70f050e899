//! Helpers of the PTX audit tests: the real module, and edits of one entry of it.

use std::collections::HashMap;

use adamant_build::audit::{audit, AuditReport, ClampFailure, Violation};
use adamant_device::abi::{self, KernelKind};

/// The single-buffer optimizer entries (each also has `<name>_multi`), from the registry.
pub fn optimizers() -> Vec<&'static str> {
    abi::kernels()
        .into_iter()
        .filter(|k| k.kind == KernelKind::Optimizer && !k.is_multi_tensor() && !k.is_stepped())
        .map(|k| k.name)
        .collect()
}

pub fn real() -> &'static str {
    adamant_runtime::PTX
}

pub fn run(ptx: &str) -> AuditReport {
    audit(ptx, &abi::kernels())
}

/// Line indices of `.entry name(` .. its closing `}` (inclusive).
pub fn entry_lines(ptx: &str, name: &str) -> (usize, usize) {
    let lines: Vec<&str> = ptx.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains(&format!(".entry {name}(")))
        .unwrap_or_else(|| panic!("no entry {name} in the PTX"));
    let end = start
        + lines[start..]
            .iter()
            .position(|l| *l == "}")
            .expect("entry is closed");
    (start, end)
}

/// `ptx` with the lines of entry `name` passed through `edit`.
pub fn edit_entry(ptx: &str, name: &str, edit: impl FnOnce(&mut Vec<String>)) -> String {
    let (start, end) = entry_lines(ptx, name);
    let mut lines: Vec<String> = ptx.lines().map(str::to_string).collect();
    let mut entry: Vec<String> = lines[start..=end].to_vec();
    edit(&mut entry);
    lines.splice(start..=end, entry);
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// Registers in `text` (`%r12`, `%rd3`, `%p1`).
pub fn registers(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '%'))
        .filter(|t| t.starts_with('%'))
        .map(str::to_string)
        .collect()
}

/// A finder of one hold step at a line: its destination and the operand it holds
/// ([`element_hold`], [`limit_step`]).
type HoldStep = fn(&[String], usize) -> Option<(String, String)>;

/// Entry `name` of `ptx` without each step of its 16-bit stores' hold, one edit at a time, each
/// audited: without each element's `min.u16` with the limit ([`element_hold`]) the stored value
/// reads no bound, refused as unclamped (checked here); without the limit's step back from the
/// rounded bound ([`limit_step`]) the limit is one step too far, and the report of that edit is
/// returned for the caller's own check of it. Each edit must change at least two lines.
pub fn without_each_hold(ptx: &str, name: &str) -> AuditReport {
    let edit = |step: HoldStep, what: &str| {
        let (edited, edits) = edit_lines(ptx, name, |lines, i| {
            let (held, rounded) = step(lines, i)?;
            Some(format!("\tmov.b16 \t{held}, {rounded};"))
        });
        assert!(edits >= 2, "{name}: {edits} {what} hold steps found");
        let report = run(&edited);
        only_about(&report, name);
        report
    };
    let unclamped = edit(element_hold, "element");
    assert!(
        clamp_failures(&unclamped)
            .iter()
            .any(|f| matches!(f, ClampFailure::NoBound)),
        "{name} (element): not refused as unclamped\n{unclamped}"
    );
    edit(limit_step, "limit")
}

/// The limit's hold step at line `i` of an entry (`storage::Half::limit`: the bound rounded,
/// minus 0 or 1), `add.s16 %d, %a, %b` with one operand the step (`selp.b16 %s, -1, 0, %p`):
/// its destination and the rounded operand.
pub fn limit_step(lines: &[String], i: usize) -> Option<(String, String)> {
    let regs = registers(lines[i].trim().strip_prefix("add.s16")?);
    if regs.len() != 3 {
        return None;
    }
    let is_step = |r: &String| {
        lines.iter().any(|l| {
            let t = l.trim();
            t.starts_with("selp.b16") && t.contains(", -1, 0,") && registers(t)[0] == *r
        })
    };
    let rounded = regs[1..].iter().find(|r| !is_step(r))?;
    regs[1..]
        .iter()
        .any(is_step)
        .then(|| (regs[0].clone(), rounded.clone()))
}

/// The per-element hold of a 16-bit parameter store at line `i` of an entry, `min.u16 %d, %a,
/// %b` (`storage::Half::store`: the rounded magnitude against the largest one within the
/// bound): its destination and the rounded operand. The other operand, the limit, is computed
/// once from the bound and shared by every lane's hold, so it is the one that more than one
/// `min.u16` of the entry reads.
pub fn element_hold(lines: &[String], i: usize) -> Option<(String, String)> {
    let regs = registers(lines[i].trim().strip_prefix("min.u16")?);
    if regs.len() != 3 {
        return None;
    }
    let holds = |r: &String| {
        lines
            .iter()
            .filter(|l| l.trim().starts_with("min.u16") && registers(l)[1..].contains(r))
            .count()
    };
    let rounded = regs[1..].iter().find(|r| holds(r) == 1)?;
    Some((regs[0].clone(), rounded.clone()))
}

/// For every `selp.f32 %d, %a, %b, %p` line: `%d -> %b`. In an optimizer entry those are the
/// clamp's selects, and `%b` is the value before the clamp.
pub fn pre_clamp_values(entry: &[String]) -> HashMap<String, String> {
    entry
        .iter()
        .filter(|l| l.trim_start().starts_with("selp.f32"))
        .filter_map(|l| {
            let regs = registers(l);
            (regs.len() == 4).then(|| (regs[0].clone(), regs[2].clone()))
        })
        .collect()
}

/// Rewrites the value operands of the entry's global stores (`lanes`: which elements, None =
/// all) from the clamped register to the value before the clamp. Returns how many it rewrote.
pub fn bypass_clamp(entry: &mut [String], lanes: Option<&[usize]>, vector_only: bool) -> usize {
    let pre = pre_clamp_values(entry);
    let mut rewritten = 0;
    for line in entry.iter_mut() {
        let trimmed = line.trim_start();
        // Global stores: `st.global.*`, or generic `st.*` through a pointer loaded from a
        // multi-tensor entry's table.
        let generic = trimmed.starts_with("st.")
            && !["st.param", "st.shared", "st.local"]
                .iter()
                .any(|s| trimmed.starts_with(s));
        if !(trimmed.starts_with("st.global") || generic) {
            continue;
        }
        let is_vector = trimmed.contains(".v4.") || trimmed.contains(".v2.");
        if vector_only && !is_vector {
            continue;
        }
        let Some((address, values)) = line.split_once("],") else {
            continue;
        };
        let mut new_values = String::new();
        let mut lane = 0;
        for token in values.split_inclusive([',', '}', ';', ' ', '{', '\t']) {
            let reg: String = token
                .trim_end_matches([',', '}', ';', ' ', '{', '\t'])
                .to_string();
            let tail = &token[reg.len()..];
            if reg.starts_with('%') {
                let wanted = lanes.is_none_or(|l| l.contains(&lane));
                match pre.get(&reg) {
                    Some(raw) if wanted => {
                        new_values.push_str(raw);
                        rewritten += 1;
                    }
                    _ => new_values.push_str(&reg),
                }
                lane += 1;
            } else {
                new_values.push_str(&reg);
            }
            new_values.push_str(tail);
        }
        *line = format!("{address}],{new_values}");
    }
    rewritten
}

pub fn bypasses<'a>(report: &'a AuditReport, entry: &str) -> Vec<&'a Violation> {
    report
        .violations
        .iter()
        .filter(|v| matches!(v, Violation::ClampBypassed { entry: e, .. } if e == entry))
        .collect()
}

/// Every violation is about `entry`, and every other optimizer entry is still verified.
pub fn only_about(report: &AuditReport, entry: &str) {
    assert!(!report.is_ok(), "the audit passed:\n{report}");
    for v in &report.violations {
        assert_eq!(v.entry(), entry, "unexpected violation: {v}\n{report}");
    }
    for e in report.optimizer_entries() {
        if e.name != entry {
            assert_eq!(
                e.clamp_verified,
                Some(true),
                "{} lost its clamp\n{report}",
                e.name
            );
        }
    }
}

/// Inserts `text` before the entry's last `ret;`.
pub fn insert_before_ret(ptx: &str, kernel: &str, text: &str) -> String {
    edit_entry(ptx, kernel, |e| {
        let ret = e.iter().rposition(|l| l.trim() == "ret;").unwrap();
        e.insert(ret, text.to_string());
    })
}

/// The register the entry loads parameter `index` into.
pub fn param_register(kernel: &str, index: usize) -> String {
    let (start, end) = entry_lines(real(), kernel);
    let needle = format!("[{kernel}_param_{index}]");
    let line = real().lines().collect::<Vec<_>>()[start..=end]
        .iter()
        .find(|l| l.contains(&needle))
        .unwrap()
        .to_string();
    registers(&line)[0].clone()
}

/// The registered descriptors with every parameter of entry `target` passed through `edit`: a
/// descriptor that misstates a parameter (its storage, its rounding, its role) for the audit to
/// refuse.
pub fn with_params_edited(
    target: &str,
    edit: impl Fn(adamant_device::abi::KernelParam) -> adamant_device::abi::KernelParam,
) -> Vec<&'static adamant_device::abi::KernelDescriptor> {
    use adamant_device::abi::{self, KernelDescriptor, KernelParam};
    abi::kernels()
        .into_iter()
        .map(|d| {
            if d.name != target {
                return d;
            }
            let params: Vec<KernelParam> = d.params.iter().map(|p| edit(*p)).collect();
            &*Box::leak(Box::new(KernelDescriptor {
                params: Box::leak(params.into_boxed_slice()),
                ..*d
            }))
        })
        .collect()
}

/// [`with_params_edited`] for the parameter buffers (or tables) of entry `target` only.
pub fn with_param_edited(
    target: &str,
    edit: impl Fn(adamant_device::abi::KernelParam) -> adamant_device::abi::KernelParam,
) -> Vec<&'static adamant_device::abi::KernelDescriptor> {
    with_params_edited(target, |p| if p.role.is_param() { edit(p) } else { p })
}

/// Asserts that `report` is clean and proves the clamp of every entry of `names`.
pub fn assert_clamp_proven<'a>(report: &AuditReport, names: impl IntoIterator<Item = &'a str>) {
    assert!(report.is_ok(), "{report}");
    for name in names {
        let entry = report
            .optimizer_entries()
            .find(|e| e.name == name)
            .unwrap_or_else(|| panic!("{name} audited"));
        assert_eq!(entry.clamp_verified, Some(true), "{name}");
    }
}

/// `ptx` with every line of entry `name` that `edit` rewrites rewritten (given the line), and the
/// number of lines it rewrote.
pub fn edit_each_line(
    ptx: &str,
    name: &str,
    edit: impl Fn(&str) -> Option<String>,
) -> (String, usize) {
    let mut edits = 0;
    let out = edit_entry(ptx, name, |lines| {
        for line in lines.iter_mut() {
            if let Some(new) = edit(line) {
                *line = new;
                edits += 1;
            }
        }
    });
    (out, edits)
}

/// `ptx` with entry `name`'s lines passed through `edit` (all of them at once), and the number
/// of lines it changed.
pub fn edit_lines(
    ptx: &str,
    name: &str,
    edit: impl Fn(&[String], usize) -> Option<String>,
) -> (String, usize) {
    let mut edits = 0;
    let out = edit_entry(ptx, name, |lines| {
        let changed: Vec<(usize, String)> = (0..lines.len())
            .filter_map(|i| edit(lines, i).map(|new| (i, new)))
            .collect();
        edits = changed.len();
        for (i, new) in changed {
            lines[i] = new;
        }
    });
    (out, edits)
}

/// Why each value stored to a parameter buffer was not proven clamped, in `report`'s order.
pub fn clamp_failures(report: &AuditReport) -> Vec<&ClampFailure> {
    report
        .violations
        .iter()
        .filter_map(|v| match v {
            Violation::ClampBypassed { failure, .. } => Some(failure),
            _ => None,
        })
        .collect()
}
