//! The PTX audit: checks the PTX module against the kernel descriptors that `#[optimizer_kernel]`
//! and `#[kernel_entry]` register, and proves from the PTX itself that every optimizer entry
//! clamps what it writes to its parameter buffer.
//!
//! For each `.entry`, optimizer or not:
//! - its kind comes from the descriptor of the same name (an entry nobody declared is a
//!   violation, and so is a declared kernel the PTX lacks);
//! - its PTX parameter list must match the descriptor (count, and each `.param` type equal to
//!   [`ParamType::ptx`]), and every parameter's role must suit its type and the entry's kind;
//! - every write (`st`, vector `st`, `atom`, `red`) to global or generic memory is attributed by
//!   pointer provenance to exactly one pointer parameter with a writable role, or to one pointer
//!   loaded from a writable pointer table (`provenance.rs`, `writes.rs`). Anything else is a
//!   violation: an address from scalars alone, from a module variable, from memory, from
//!   several pointers, or through a read-only role. An opcode the audit does not know and any
//!   `call` are violations too;
//! - for an optimizer entry, every value stored to a parameter buffer is proven to be
//!   `bound > 0 && |x| > bound ? copysign(bound, x) : x` of one value `x` and the bound the
//!   entry loaded from its last parameter, by running the device code's own instructions on a
//!   table of inputs (`clamp/`, `eval.rs`). In a multi-tensor entry the bound is the tensor's
//!   own, `tensor_bound(bound, scale)` with `scale` loaded from `weight_clamp_scales` at the very
//!   index the parameter pointer was loaded at from its table (`tensor_index.rs`); the inputs are
//!   then `(x, bound, scale)` triples.
//!
//! The module itself must have no `.func`, no `.extern .func` and no inline assembly.
//!
//! Every pass reads one register lattice (`lattice.rs`): for each register, the pointers its
//! value may derive from and the clamp inputs it is computed from, both computed by one
//! fixpoint. Whatever the audit cannot prove is a [`Violation`], typed, naming the entry, the line
//! and the instruction, and where the proof of a stored value stopped elsewhere, that
//! instruction too ([`Unprovable`]). [`explain`] (`adamant audit --explain ENTRY`) shows the
//! reasoning behind every value an entry stores to its parameter buffer, with the same verdicts.
//!
//! [`ParamType::ptx`]: adamant_abi::ParamType::ptx
use std::collections::{HashMap, HashSet};

use adamant_abi::KernelDescriptor;

use crate::ptx;

mod clamp;
mod entry;
mod eval;
mod eval16;
mod explain;
mod lattice;
mod located;
mod opcodes;
mod provenance;
mod report;
mod tensor_index;
mod unattributed;
mod violation;
mod writes;

pub use clamp::{
    cases as clamp_cases, contract as clamp_contract, scaled_cases as clamp_scaled_cases,
    storage_cases as clamp_storage_cases, stored_contract as clamp_stored_contract,
    tensor_contract as clamp_tensor_contract, Link, LinkRole, Unprovable,
};
pub use eval::EvalError;
pub use explain::{explain, Explanation, StoreExplanation, UnknownEntry};
pub use located::{At, DefinitionError};
pub use report::{
    param_type_name, AuditReport, ClampAudit, EntryAudit, EntryKind, ParamAudit, WriteAudit,
};
pub use tensor_index::{TraceError, TraceReason};
pub use unattributed::Unattributed;
pub use violation::{ClampFailure, Violation};

use entry::audit_entry;

/// Audits `ptx` against `kernels` (normally [`adamant_abi::kernels`]).
pub fn audit(ptx: &str, kernels: &[&KernelDescriptor]) -> AuditReport {
    let entries = ptx::entries(ptx);
    let mut violations: Vec<Violation> = module_problems(ptx)
        .into_iter()
        .map(|problem| Violation::Module { problem })
        .collect();
    let module_variables = ptx::variables(ptx);
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
        let private = private_symbols(&module_variables, entry);
        audits.push(audit_entry(entry, descriptor, &private, &mut violations));
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

/// What is wrong with the module as a whole: a lexical error, inline assembly, a function
/// (defined, declared or external) or an alias. Entries are checked one by one above.
fn module_problems(ptx: &str) -> Vec<String> {
    use ptx::ModuleProblem as P;
    ptx::module_problems(ptx, &[])
        .into_iter()
        .filter(|p| {
            matches!(
                p,
                P::Lexical { .. }
                    | P::InlineAsm { .. }
                    | P::ExternFunction { .. }
                    | P::Function { .. }
                    | P::Alias { .. }
            )
        })
        .map(|p| p.to_string())
        .collect()
}

/// The `.shared` and `.local` variables of the module and of `entry`: memory private to a block
/// or a thread, which a write may target without attribution. An entry's own declaration
/// shadows a module variable of the same name.
pub(super) fn private_symbols(
    module: &[ptx::PtxVariable],
    entry: &ptx::PtxEntry,
) -> HashSet<String> {
    use ptx::StateSpace;
    let private = |v: &ptx::PtxVariable| matches!(v.space, StateSpace::Shared | StateSpace::Local);
    let mut out: HashSet<String> = module
        .iter()
        .filter(|v| private(v))
        .map(|v| v.name.clone())
        .collect();
    for v in &entry.variables {
        if private(v) {
            out.insert(v.name.clone());
        } else {
            out.remove(&v.name);
        }
    }
    out
}
