//! The clamp proof of one optimizer entry: every store through its parameter-buffer pointer
//! writes values clamped to the bound.
use std::collections::BTreeSet;

use adamant_kernels::abi::{KernelDescriptor, ParamRole, ParamType};

use super::dataflow::{Dataflow, Root};
use super::opcodes::{is_memory_write, written_values};
use super::{ClampAudit, ClampMissing, Violation};
use crate::ptx::{Operand, PtxEntry};

pub(super) fn audit_optimizer(
    entry: &PtxEntry,
    descriptor: &KernelDescriptor,
    violations: &mut Vec<Violation>,
) -> ClampAudit {
    let name = &entry.name;
    let bound_index = descriptor.clamp_bound_index();
    if bound_index != Some(descriptor.params.len().saturating_sub(1))
        || descriptor.params.is_empty()
    {
        violations.push(Violation::BoundNotLast {
            entry: name.clone(),
            bound_index,
            param_count: descriptor.params.len(),
        });
    }
    let param_buffer = descriptor
        .param_buffer_index()
        .filter(|&i| descriptor.params[i].ty == ParamType::Ptr);
    let Some(param_buffer) = param_buffer else {
        violations.push(Violation::NoParamBuffer {
            entry: name.clone(),
        });
        return ClampAudit::default();
    };
    // The analysis works on PTX positions: the bound is where the descriptor says it is, or (when
    // it declares none) the last PTX parameter.
    let bound = bound_index
        .or_else(|| entry.params.len().checked_sub(1))
        .and_then(|i| entry.params.get(i).map(|p| p.name.clone()));

    let instructions = entry.instructions();
    // Multi-tensor entries take their buffers from pointer tables: a pointer loaded from a
    // table belongs to that table's buffers.
    let tables: BTreeSet<usize> = descriptor
        .params
        .iter()
        .enumerate()
        .filter(|(_, p)| {
            matches!(
                p.role,
                ParamRole::ParamTable | ParamRole::InputTable | ParamRole::StateTable
            )
        })
        .map(|(i, _)| i)
        .collect();
    let flow = Dataflow::new(entry, &instructions, tables);
    let mut clamp = ClampAudit::default();
    let mut other_bounds = BTreeSet::new();

    for inst in &instructions {
        if !is_memory_write(inst) {
            continue;
        }
        let Some(address) = inst
            .operands
            .iter()
            .find(|o| matches!(o, Operand::Address { .. }))
        else {
            continue;
        };
        let roots = flow.address_roots(address);
        let values = written_values(inst);
        for v in &values {
            for reg in v.registers() {
                if flow.roots(reg).contains(&Root::Param(param_buffer)) {
                    violations.push(Violation::ParamPointerEscapes {
                        entry: name.clone(),
                        line: inst.line,
                        instruction: inst.text.clone(),
                    });
                }
            }
        }
        if !roots.contains(&Root::Param(param_buffer)) {
            let traced = roots
                .iter()
                .any(|r| matches!(r, Root::Param(_) | Root::Symbol(_)));
            if !traced {
                violations.push(Violation::UntracedStore {
                    entry: name.clone(),
                    line: inst.line,
                    instruction: inst.text.clone(),
                });
            }
            continue;
        }
        if inst.op() != "st" {
            violations.push(Violation::UncheckableWrite {
                entry: name.clone(),
                line: inst.line,
                instruction: inst.text.clone(),
            });
            continue;
        }
        clamp.param_stores += 1;
        let lanes: Vec<&Operand> = values.iter().flat_map(|v| v.elements()).collect();
        let vector = lanes.len() > 1;
        for (lane, value) in lanes.into_iter().enumerate() {
            if matches!(value, Operand::Symbol(s) if s == "_") {
                continue;
            }
            clamp.stored_values += 1;
            let verdict = match value {
                Operand::Register(reg) => flow.clamp_verdict(reg, bound.as_deref()),
                _ => Err((ClampMissing::Bound, None)),
            };
            match verdict {
                Ok(()) => clamp.clamped_values += 1,
                Err((missing, other)) => {
                    if let Some(i) = other {
                        other_bounds.insert(i);
                    }
                    violations.push(Violation::ClampBypassed {
                        entry: name.clone(),
                        line: inst.line,
                        instruction: inst.text.clone(),
                        lane: vector.then_some(lane),
                        value: value.to_string(),
                        missing,
                    });
                }
            }
        }
    }
    for i in other_bounds {
        violations.push(Violation::ClampReadsOtherParam {
            entry: name.clone(),
            param_index: i,
            param_name: entry.params[i].name.clone(),
        });
    }
    if clamp.param_stores == 0 {
        violations.push(Violation::NoParamStore {
            entry: name.clone(),
        });
    }
    clamp
}
