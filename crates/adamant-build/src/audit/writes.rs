//! The write audit of one entry, optimizer or not: every store, vector store, atomic and
//! reduction to global (or generic) memory is attributed, through pointer provenance, to exactly
//! one pointer parameter whose declared role is writable (for a pointer table: one pointer
//! loaded from it); every store to a parameter buffer is proven clamped ([`super::clamp`]).
//! Writes to `.shared`/`.local` memory (private to the block or thread) need no attribution.
//! An instruction the audit does not know, and any call, is a violation.
use std::collections::{BTreeMap, HashSet};

use adamant_abi::{KernelDescriptor, KernelKind, ParamRole};

use super::clamp::{BoundSource, ClampProver, ClampSources};
use super::explain::StoreExplanation;
use super::located::At;
use super::opcodes::{address, class, space, written_values, Class, Space};
use super::provenance::{Provenance, Root};
use super::unattributed::Unattributed;
use super::{ClampAudit, Violation, WriteAudit};
use crate::ptx::{Instruction, Operand, PtxEntry};

/// What an address was attributed to.
enum Target {
    /// Pointer parameter `i` (or, for a table, a buffer pointer loaded from table `i`).
    Param(usize),
    /// Memory private to the block or thread.
    Private,
}

pub(super) struct WriteContext<'a> {
    pub entry: &'a PtxEntry,
    pub descriptor: &'a KernelDescriptor,
    /// `.shared` and `.local` variables of the module and the entry.
    pub private_symbols: &'a HashSet<String>,
}

/// Audits every write of `cx`'s entry into `violations`; with `explain`, also records there the
/// reasoning behind each value stored to a parameter buffer (the explanation mode).
pub(super) fn audit_writes(
    cx: &WriteContext<'_>,
    violations: &mut Vec<Violation>,
    mut explain: Option<&mut Vec<StoreExplanation>>,
) -> (WriteAudit, Option<ClampAudit>, (usize, usize)) {
    let entry = cx.entry;
    let descriptor = cx.descriptor;
    let name = &entry.name;
    let instructions = entry.instructions();
    let is_optimizer = descriptor.kind == KernelKind::Optimizer;
    let last = |i: &usize| i + 1 == descriptor.params.len() && *i < entry.params.len();
    let bound = match (
        descriptor.clamp_bound_index(),
        descriptor.step_state_index(),
        descriptor.step_state_table_index(),
    ) {
        (Some(i), None, None) if last(&i) => Some(BoundSource::Argument(i)),
        (None, Some(i), None) if last(&i) => Some(BoundSource::Record(i)),
        (None, None, Some(i)) if last(&i) => Some(BoundSource::RecordTable(i)),
        _ => None,
    };
    // A multi-tensor entry's scales (entry.rs checks that every entry with a parameter table
    // has exactly one, and no other entry has any).
    let scales = descriptor.clamp_scales_index();
    let sources = bound.map(|bound| ClampSources { bound, scales });
    let flow = Provenance::new(entry, descriptor, &instructions, sources);
    // Each store is proven against the storage of the buffer it writes (`ClampProver::storing`).
    let prover = bound.map(|_| {
        ClampProver::new(
            &flow,
            &instructions,
            scales,
            Default::default(),
            Default::default(),
        )
    });
    let mut writes = WriteAudit::default();
    let mut clamp = is_optimizer.then(ClampAudit::default);
    let mut per_param: BTreeMap<usize, usize> = BTreeMap::new();
    // Per parameter buffer, each store's instruction and the value each lane clamps
    // (`check_companions`).
    let mut lanes_of: BTreeMap<usize, Vec<StoredLanes>> = BTreeMap::new();
    // Writes through the records header: (atomics and reductions, plain stores).
    let mut records = (0usize, 0usize);

    let at = |inst: &Instruction| (name.clone(), inst.line, inst.text.clone());
    for inst in &instructions {
        match class(inst) {
            Class::Unknown => {
                let (entry, line, instruction) = at(inst);
                violations.push(Violation::UnknownInstruction {
                    entry,
                    line,
                    instruction,
                });
                continue;
            }
            Class::Call => {
                let (entry, line, instruction) = at(inst);
                violations.push(Violation::Call {
                    entry,
                    line,
                    instruction,
                });
                continue;
            }
            Class::Write => {}
            _ => continue,
        }
        // A pointer written to memory could be loaded back and written through.
        for v in written_values(inst) {
            let escaped = flow
                .operand_roots(v)
                .into_iter()
                .find(|r| matches!(r, Root::Pointer(_) | Root::TableEntry(_)));
            if let Some(Root::Pointer(i) | Root::TableEntry(i)) = escaped {
                let (entry, line, instruction) = at(inst);
                violations.push(Violation::PointerEscapes {
                    entry,
                    line,
                    instruction,
                    pointer: descriptor.params[i].name.to_string(),
                });
            }
        }
        let target = match attribute(cx, &flow, inst) {
            Ok(t) => t,
            Err(reason) => {
                let (entry, line, instruction) = at(inst);
                violations.push(Violation::UnattributedWrite {
                    entry,
                    line,
                    instruction,
                    reason,
                });
                continue;
            }
        };
        let Target::Param(i) = target else {
            writes.private_writes += 1;
            continue;
        };
        let param = descriptor.params[i];
        if !param.role.is_writable() || param.role.is_pointer_table() && is_direct(&flow, inst, i) {
            let (entry, line, instruction) = at(inst);
            violations.push(Violation::WriteToReadOnly {
                entry,
                line,
                instruction,
                param: param.name.to_string(),
                role: format!("{:?}", param.role),
            });
            continue;
        }
        writes.attributed_writes += 1;
        *per_param.entry(i).or_default() += 1;
        if param.role == ParamRole::Records {
            match inst.op() {
                "st" => records.1 += 1,
                "atom" | "red" => records.0 += 1,
                _ => {}
            }
        }
        if !param.role.is_param() {
            continue;
        }
        // A parameter buffer: only plain stores, of clamped values.
        let Some(clamp) = clamp.as_mut() else {
            // Roles are checked against the kind in entry.rs; a non-optimizer with a parameter
            // role is already a violation there, and has no bound to prove a clamp with.
            continue;
        };
        if inst.op() != "st" {
            let (entry, line, instruction) = at(inst);
            violations.push(Violation::UncheckableWrite {
                entry,
                line,
                instruction,
            });
            continue;
        }
        let (storage, rounding) = (param.storage, param.rounding);
        let bits = element_bits(inst);
        let elements: Vec<&Operand> = written_values(inst)
            .into_iter()
            .flat_map(|v| v.elements())
            .collect();
        let lanes = match bits == Some(storage.bytes() as u32 * 8) {
            true => Some(elements),
            // 16-bit lanes packed in pairs (`packed_halves`), or a width that writes beside the
            // element.
            false if storage.bytes() == 2 && bits == Some(32) => packed_halves(&flow, &elements),
            false => None,
        };
        let Some(lanes) = lanes else {
            let (entry, line, instruction) = at(inst);
            violations.push(Violation::StoreWidth {
                entry,
                line,
                instruction,
                storage,
                bits,
            });
            continue;
        };
        clamp.param_stores += 1;
        let vector = lanes.len() > 1;
        let mut clamped_lanes = Vec::with_capacity(lanes.len());
        for (lane, value) in lanes.into_iter().enumerate() {
            if matches!(value, Operand::Symbol(s) if s == "_") {
                continue;
            }
            clamp.stored_values += 1;
            let verdict = match prover.map(|p| p.storing(storage, rounding)) {
                Some(p) => p.prove(value, address(inst), i),
                None => Err(super::ClampFailure::Unprovable {
                    reason: super::Unprovable::NoBoundDeclared,
                }),
            };
            if let Some(sink) = explain.as_deref_mut() {
                let register = match value {
                    Operand::Register(r) => Some(r.as_str()),
                    _ => None,
                };
                let chain = register.map(|r| flow.bound_chain(r)).unwrap_or_default();
                let (clamped, scales) = match (prover, register) {
                    (Some(p), Some(r)) => p.slice_inputs(r),
                    _ => (None, Vec::new()),
                };
                sink.push(StoreExplanation {
                    store: At::of(inst),
                    lane: vector.then_some(lane),
                    value: value.to_string(),
                    buffer: param.name.to_string(),
                    storage,
                    rounding,
                    chain,
                    clamped,
                    scales,
                    verdict: verdict.clone().map(|(cases, _)| cases),
                });
            }
            clamped_lanes.push(verdict.as_ref().ok().and_then(|&(_, x)| x));
            match verdict {
                Ok((cases, _)) => {
                    clamp.clamped_values += 1;
                    clamp.cases_evaluated += cases;
                }
                Err(failure) => {
                    let (entry, line, instruction) = at(inst);
                    violations.push(Violation::ClampBypassed {
                        entry,
                        line,
                        instruction,
                        lane: vector.then_some(lane),
                        value: value.to_string(),
                        failure,
                    });
                }
            }
        }
        lanes_of.entry(i).or_default().push((inst, clamped_lanes));
    }
    check_companions(cx, &lanes_of, violations);
    writes.per_param = per_param
        .into_iter()
        .map(|(i, n)| (descriptor.params[i].name.to_string(), n))
        .collect();
    (writes, clamp, records)
}

/// One store to a parameter buffer: its instruction, and the register each lane clamps (None
/// where the lane was not proven).
type StoredLanes<'a> = (&'a Instruction, Vec<Option<&'a str>>);

/// An entry with two parameter buffers (a parameter and the companion its storage adds): each
/// store to either is proven on its own, so nothing yet ties one buffer's value to the other's.
/// The k-th store of each (in program order: the vector loop's, then the scalar tail's) must
/// write lanes clamped from the same registers, in the same order; otherwise the two buffers hold
/// halves (or copies) of different values, which no contract of either describes. A lane whose
/// value was not proven is already a violation, and stays one.
fn check_companions(
    cx: &WriteContext<'_>,
    lanes_of: &BTreeMap<usize, Vec<StoredLanes>>,
    violations: &mut Vec<Violation>,
) {
    if cx.descriptor.is_fused() {
        // A fused entry's parameter tables are alternatives, one per storage (a tensor's address
        // is in the table of its rule's storage and null in the others), never a parameter and
        // its companion: a rule with a companion has no fused branch. Each store is proven
        // against its own table's storage above.
        return;
    }
    let params: Vec<usize> = (0..cx.descriptor.params.len())
        .filter(|&i| cx.descriptor.params[i].role.is_param())
        .collect();
    if params.len() > 2 {
        // No kernel has more than a parameter and its companion: nothing says how a third
        // buffer's values relate to the others', so nothing about them is proven.
        let names: Vec<&str> = params
            .iter()
            .map(|&i| cx.descriptor.params[i].name)
            .collect();
        let (first, second) = (names[0].to_string(), names[1].to_string());
        let inst = lanes_of.values().flatten().map(|(inst, _)| *inst).next();
        violations.push(Violation::CompanionApart {
            entry: cx.entry.name.clone(),
            line: inst.map_or(0, |i| i.line),
            instruction: inst.map_or_else(String::new, |i| i.text.clone()),
            buffers: (first, second),
            reason: format!(
                "the entry declares {} parameter buffers ({}), and a parameter has at most one \
                 companion",
                names.len(),
                names.join(", ")
            ),
        });
        return;
    }
    let [first, second] = params[..] else {
        return;
    };
    let none = Vec::new();
    let (a, b) = (
        lanes_of.get(&first).unwrap_or(&none),
        lanes_of.get(&second).unwrap_or(&none),
    );
    let apart = |inst: &Instruction, reason: String| Violation::CompanionApart {
        entry: cx.entry.name.clone(),
        line: inst.line,
        instruction: inst.text.clone(),
        buffers: (
            cx.descriptor.params[first].name.to_string(),
            cx.descriptor.params[second].name.to_string(),
        ),
        reason,
    };
    if a.len() != b.len() {
        let (inst, _) = a.first().or(b.first()).expect("a parameter store");
        let reason = format!("they are stored {} and {} times", a.len(), b.len());
        violations.push(apart(inst, reason));
        return;
    }
    for ((inst, lanes_a), (other, lanes_b)) in a.iter().zip(b) {
        let proven = |lanes: &[Option<&str>]| lanes.iter().all(Option::is_some);
        if proven(lanes_a) && proven(lanes_b) && lanes_a != lanes_b {
            let show = |lanes: &[Option<&str>]| {
                lanes
                    .iter()
                    .map(|x| x.unwrap_or("?"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let reason = format!(
                "it clamps [{}], its counterpart at line {} clamps [{}]",
                show(lanes_a),
                other.line,
                show(lanes_b)
            );
            violations.push(apart(inst, reason));
        }
    }
}

/// The 16-bit lanes of a store of 32-bit `elements` to a 16-bit buffer, in memory order, where
/// every element is two lanes packed by LLVM: `prmt.b32 %d, %a, %b, 0x5410`, the one unguarded
/// definition of `%d`, puts the low 16 bits of `%a` in its low half and those of `%b` in its
/// high half, which a little-endian store writes first and second. Each lane is then proven as
/// a 16-bit store of `%a` or `%b` (its low bits). Any other element: None (a store width
/// violation, nothing assumed of its layout).
fn packed_halves<'a>(flow: &Provenance<'a>, elements: &[&'a Operand]) -> Option<Vec<&'a Operand>> {
    let mut lanes = Vec::with_capacity(2 * elements.len());
    for element in elements {
        let Operand::Register(reg) = element else {
            return None;
        };
        let def = flow.instruction(flow.single_def(reg).ok()?);
        match def.operands.as_slice() {
            [_, low @ Operand::Register(_), high @ Operand::Register(_), Operand::Immediate(selector)]
                if def.opcode == "prmt.b32"
                    && crate::ptx::parse_integer(selector.trim_end_matches(['U', 'u']))
                        == Some(0x5410) =>
            {
                lanes.extend([low, high]);
            }
            _ => return None,
        }
    }
    Some(lanes)
}

/// Whether the write's address is the table parameter `i` itself (writing into the table),
/// rather than a pointer loaded from it.
fn is_direct(flow: &Provenance<'_>, inst: &Instruction, i: usize) -> bool {
    address(inst).is_some_and(|a| flow.address_roots(a).contains(&Root::Pointer(i)))
}

/// The one writable place a write's address derives from, or why there is none.
fn attribute(
    cx: &WriteContext<'_>,
    flow: &Provenance<'_>,
    inst: &Instruction,
) -> Result<Target, Unattributed> {
    match space(inst) {
        Space::Private => return Ok(Target::Private),
        Space::Param => return Err(Unattributed::ParamSpace),
        Space::Const => return Err(Unattributed::ConstSpace),
        Space::GlobalOrGeneric => {}
    }
    let Some(address) = address(inst) else {
        return Err(Unattributed::NoAddress);
    };
    let roots: Vec<Root> = flow.address_roots(address).into_iter().collect();
    let params = &cx.descriptor.params;
    let describe = |r: &Root| match r {
        Root::Pointer(i) => format!("parameter `{}`", params[*i].name),
        Root::TableEntry(i) => format!("a pointer loaded from table `{}`", params[*i].name),
        Root::Symbol(s) => format!("variable `{s}`"),
        Root::Loaded => "a value loaded from memory".to_string(),
    };
    match roots.as_slice() {
        [] => Err(Unattributed::NoPointer),
        [Root::Pointer(i)] | [Root::TableEntry(i)] => Ok(Target::Param(*i)),
        [Root::Symbol(s)] if cx.private_symbols.contains(s) => {
            Err(Unattributed::PrivateThroughGeneric { symbol: s.clone() })
        }
        [Root::Symbol(s)] => Err(Unattributed::ModuleVariable { symbol: s.clone() }),
        [Root::Loaded] => Err(Unattributed::Loaded),
        several => Err(Unattributed::Several {
            places: several.iter().map(describe).collect(),
        }),
    }
}

/// Bits per element of a store, from its last type suffix (`st.global.v4.b16` → 16).
fn element_bits(inst: &Instruction) -> Option<u32> {
    inst.opcode
        .split('.')
        .skip(1)
        .filter_map(|m| match m {
            "b8" | "u8" | "s8" => Some(8),
            "b16" | "u16" | "s16" | "f16" | "bf16" => Some(16),
            "b32" | "u32" | "s32" | "f32" => Some(32),
            "b64" | "u64" | "s64" | "f64" => Some(64),
            "b128" => Some(128),
            _ => None,
        })
        .last()
}
