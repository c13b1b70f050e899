//! The PTX audit: checks the PTX module against the kernel descriptors that `#[optimizer_kernel]`
//! and `#[kernel_entry]` register, and proves from the PTX itself that every optimizer entry
//! clamps what it writes to its parameter buffer.
//!
//! For each `.entry`:
//! - its kind comes from the descriptor of the same name (an entry nobody declared is a
//!   violation, and so is a declared kernel the PTX lacks);
//! - its PTX parameter list must match the descriptor (count, and each `.param` type equal to
//!   [`ParamType::ptx`]);
//! - for an optimizer entry, the clamp bound must be the last parameter, and a def-use analysis of
//!   the body must show that every store whose address derives from the parameter-buffer pointer
//!   stores values whose backward slice reads the bound (`ld.param` of the last parameter) and
//!   goes through a `copysign` whose magnitude operand is derived from that bound (the clamp's
//!   `copysign(bound, p)`), with at least one such store. Registers with several definitions (loop
//!   variables, values merged after branches) take the union of all of them.
//!
//! The address side follows pointer provenance (`cvta`, `add`, `mov`, `mul.wide`, `shl`,
//! `selp` values...) but not predicates, so the alignment test that `or`s every buffer pointer
//! together does not make every buffer look like the parameter buffer. A store whose address
//! derives from no parameter at all (a pointer loaded from memory) cannot be told apart from a
//! parameter store and is reported too.
//!
//! The code: `report` and `violation` hold what the audit returns, `entry` the checks every
//! entry gets, `optimizer` the clamp proof of an optimizer entry, built on `dataflow` (the def-use
//! analysis) over `opcodes` (what each instruction defines, reads and writes).
//!
//! [`ParamType::ptx`]: adamant_kernels::abi::ParamType::ptx
use std::collections::{HashMap, HashSet};

use adamant_kernels::abi::KernelDescriptor;

use crate::ptx;

mod dataflow;
mod entry;
mod opcodes;
mod optimizer;
mod report;
mod violation;

pub use report::{param_type_name, AuditReport, ClampAudit, EntryAudit, EntryKind, ParamAudit};
pub use violation::{ClampMissing, Violation};

use entry::audit_entry;

/// Audits the PTX embedded in this crate ([`crate::PTX`]) against every registered kernel.
pub fn audit_embedded() -> AuditReport {
    audit(crate::PTX, &adamant_kernels::abi::kernels())
}

/// Audits `ptx` against `kernels` (normally [`adamant_kernels::abi::kernels`]).
pub fn audit(ptx: &str, kernels: &[&KernelDescriptor]) -> AuditReport {
    let entries = ptx::entries(ptx);
    let mut violations = Vec::new();
    let mut audits = Vec::new();

    let mut declared: HashMap<&str, &KernelDescriptor> = HashMap::new();
    for k in kernels {
        if declared.insert(k.name, k).is_some() {
            violations.push(Violation::DuplicateDeclaration {
                kernel: k.name.to_string(),
            });
        }
    }

    let mut seen = HashSet::new();
    for entry in &entries {
        if !seen.insert(entry.name.as_str()) {
            violations.push(Violation::DuplicateEntry {
                entry: entry.name.clone(),
                line: entry.line,
            });
        }
        if !entry.complete {
            violations.push(Violation::Incomplete {
                entry: entry.name.clone(),
                line: entry.line,
            });
        }
        let descriptor = declared.get(entry.name.as_str()).copied();
        audits.push(audit_entry(entry, descriptor, &mut violations));
    }

    for k in kernels {
        if !seen.contains(k.name) {
            violations.push(Violation::MissingEntry {
                kernel: k.name.to_string(),
                kind: k.kind,
            });
        }
    }

    for a in &mut audits {
        if a.kind == EntryKind::Optimizer {
            a.clamp_verified = Some(!violations.iter().any(|v| v.entry() == a.name));
        }
    }
    AuditReport {
        entries: audits,
        violations,
    }
}
