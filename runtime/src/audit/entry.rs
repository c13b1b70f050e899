//! The checks every entry gets: its kind, and its parameter list against its descriptor.
use adamant_kernels::abi::{KernelDescriptor, KernelKind};

use super::optimizer::audit_optimizer;
use super::{EntryAudit, EntryKind, ParamAudit, Violation};
use crate::ptx::PtxEntry;

pub(super) fn audit_entry(
    entry: &PtxEntry,
    descriptor: Option<&KernelDescriptor>,
    violations: &mut Vec<Violation>,
) -> EntryAudit {
    let kind = match descriptor.map(|d| d.kind) {
        Some(KernelKind::Optimizer) => EntryKind::Optimizer,
        Some(KernelKind::Other) => EntryKind::Other,
        None => EntryKind::Undeclared,
    };
    let params: Vec<ParamAudit> = entry
        .params
        .iter()
        .enumerate()
        .map(|(index, p)| ParamAudit {
            index,
            ptx_name: p.name.clone(),
            ptx_type: p.ty.clone(),
            declared: descriptor.and_then(|d| d.params.get(index).copied()),
        })
        .collect();
    let mut audit = EntryAudit {
        name: entry.name.clone(),
        kind,
        line: entry.line,
        params,
        clamp: None,
        clamp_verified: None,
    };
    let Some(descriptor) = descriptor else {
        violations.push(Violation::UndeclaredEntry {
            entry: entry.name.clone(),
            line: entry.line,
        });
        return audit;
    };

    if descriptor.params.len() != entry.params.len() {
        violations.push(Violation::ParamCount {
            entry: entry.name.clone(),
            declared: descriptor.params.len(),
            ptx: entry.params.len(),
        });
    }
    for p in &audit.params {
        if let Some(declared) = p.declared {
            if declared.ty.ptx() != p.ptx_type {
                violations.push(Violation::ParamType {
                    entry: entry.name.clone(),
                    index: p.index,
                    name: declared.name.to_string(),
                    expected: declared.ty.ptx().to_string(),
                    ptx: p.ptx_type.clone(),
                });
            }
        }
    }

    if kind == EntryKind::Optimizer {
        audit.clamp = Some(audit_optimizer(entry, descriptor, violations));
    }
    audit
}
