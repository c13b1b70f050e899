//! The checks every entry gets: its kind, and its parameter list against its descriptor.
use std::collections::HashSet;

use adamant_abi::{KernelDescriptor, KernelKind, ParamRole, ParamType};

use super::writes::{audit_writes, WriteContext};
use super::{EntryAudit, EntryKind, ParamAudit, Violation};
use crate::ptx::PtxEntry;

/// Whether an entry of `kind` may have a parameter with `role`.
fn role_allowed(kind: KernelKind, role: ParamRole) -> bool {
    use ParamRole::*;
    match kind {
        KernelKind::Optimizer => !matches!(role, Output | IndexTable),
        KernelKind::Other => matches!(role, Input | Output | IndexTable | Scalar { .. }),
        // Records is an optimizer role: listed under Optimizer by the `!matches!` above.
    }
}

pub(super) fn audit_entry(
    entry: &PtxEntry,
    descriptor: Option<&KernelDescriptor>,
    private_symbols: &HashSet<String>,
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
        writes: None,
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

    for p in descriptor.params {
        let pointer_role = p.role.is_pointer();
        // A pointer must say what the entry does with it; a pointer-typed scalar would be
        // treated as an offset.
        let typed_right = pointer_role == (p.ty == ParamType::Ptr)
            || matches!(p.role, ParamRole::UniformPtr { .. });
        if !role_allowed(descriptor.kind, p.role) || !typed_right {
            violations.push(Violation::RoleNotAllowed {
                entry: entry.name.clone(),
                param: p.name.to_string(),
                role: format!("{:?} ({:?})", p.role, p.ty),
                kind: descriptor.kind,
            });
        }
    }
    if kind == EntryKind::Optimizer {
        optimizer_shape(entry, descriptor, violations);
    }
    let cx = WriteContext {
        entry,
        descriptor,
        private_symbols,
    };
    let (writes, clamp, records) = audit_writes(&cx, violations, None);
    if let Some(c) = clamp {
        if c.param_stores == 0 {
            violations.push(Violation::NoParamStore {
                entry: entry.name.clone(),
            });
        }
    }
    if kind == EntryKind::Optimizer && descriptor.records_index().is_some() {
        let (atomics, stores) = records;
        if atomics == 0 || stores == 0 {
            violations.push(Violation::RecordsNotWritten {
                entry: entry.name.clone(),
                atomics,
                stores,
            });
        }
    }
    audit.writes = Some(writes);
    audit.clamp = clamp;
    audit
}

/// An optimizer entry: the bound (a plain entry's `f32`, or a stepped entry's step-state pointer,
/// exactly one of them) is its last parameter, and it has a pointer parameter buffer (or table).
fn optimizer_shape(
    entry: &PtxEntry,
    descriptor: &KernelDescriptor,
    violations: &mut Vec<Violation>,
) {
    let name = &entry.name;
    let bound_index = descriptor
        .clamp_bound_index()
        .or(descriptor.step_state_index())
        .or(descriptor.step_state_table_index());
    let bounds = descriptor
        .params
        .iter()
        .filter(|p| {
            matches!(
                p.role,
                ParamRole::ClampBound | ParamRole::StepState | ParamRole::StepStateTable
            )
        })
        .count();
    let last_is_bound = descriptor.params.last().is_some_and(|p| {
        matches!(
            (p.role, p.ty),
            (ParamRole::ClampBound, ParamType::F32)
                | (ParamRole::StepState, ParamType::Ptr)
                | (ParamRole::StepStateTable, ParamType::Ptr)
        )
    });
    if bounds != 1 || !last_is_bound {
        violations.push(Violation::BoundNotLast {
            entry: name.clone(),
            bound_index,
            param_count: descriptor.params.len(),
        });
    }
    // The records header comes right before the last parameter, once.
    let records = descriptor
        .params
        .iter()
        .filter(|p| p.role == ParamRole::Records)
        .count();
    let n = descriptor.params.len();
    let records_before_last = n >= 2
        && descriptor.params[n - 2].role == ParamRole::Records
        && descriptor.params[n - 2].ty == ParamType::Ptr;
    if records != 1 || !records_before_last {
        violations.push(Violation::RecordsMissing {
            entry: name.clone(),
        });
    }
    let count = |role: ParamRole| descriptor.params.iter().filter(|p| p.role == role).count();
    let (param_tables, scales) = (count(ParamRole::ParamTable), count(ParamRole::ClampScales));
    if scales != usize::from(param_tables > 0) {
        violations.push(Violation::ScalesMisdeclared {
            entry: name.clone(),
            param_tables,
            scales,
        });
    }
    let has_param_buffer = descriptor
        .params
        .iter()
        .any(|p| p.role.is_param() && p.ty == ParamType::Ptr);
    if !has_param_buffer {
        violations.push(Violation::NoParamBuffer {
            entry: name.clone(),
        });
    }
}
