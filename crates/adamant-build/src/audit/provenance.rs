//! Pointer provenance in one entry body: for every register, which pointers its value may be
//! derived from. It is one part of the register lattice (`lattice.rs`), computed by its one
//! flow-insensitive fixpoint, so it over-approximates: a value gets every root any of its
//! definitions could give it.
//!
//! What counts as a root:
//! - an entry parameter of pointer type, read with `ld.param` ([`Root::Pointer`]);
//! - a 64-bit value loaded through a pointer table parameter (a multi-tensor entry's per-tensor
//!   buffer pointers, [`Root::TableEntry`]);
//! - the address of a named variable ([`Root::Symbol`]);
//! - any other value loaded from memory ([`Root::Loaded`]): it could be any address.
//!
//! Values with no root are offsets: immediates, special registers (`%tid.x`), scalar parameters
//! and values loaded through a table of offsets the runtime builds (a chunk table, a
//! `#[kernel_entry]`'s `#[index]` table). Predicates carry no provenance (`setp` results): the
//! alignment test of the optimizer entries `or`s every buffer pointer into a predicate, which
//! selects the loop bounds without making every address derive from every buffer. The price is
//! stated in the README's threat model: an address rebuilt bit by bit through predicates or
//! branches from another pointer is attributed to the pointer it is added to, not to the one it
//! was rebuilt from; that takes hand-written `unsafe` device code, which optimizer bodies cannot
//! contain.
use std::collections::{BTreeSet, HashMap};

use adamant_abi::{KernelDescriptor, ParamType};

use super::clamp::ClampSources;
use super::lattice::Value;
use super::located::{At, DefinitionError};
use super::opcodes::{address, class, destinations, sources, Class};
use crate::ptx::{Instruction, Operand, PtxEntry};

/// Where a pointer-like value may come from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Root {
    /// `ld.param` of pointer parameter `i`.
    Pointer(usize),
    /// A pointer loaded through the pointer-table parameter `i`.
    TableEntry(usize),
    /// The address of a named variable (`__local_depot0`, a `.shared` array, a `.global`).
    Symbol(String),
    /// Read from memory through anything else: could be any address.
    Loaded,
}

pub(super) type Roots = BTreeSet<Root>;

/// Def-use facts of one entry body: every register's definitions and its value in the lattice.
pub(super) struct Provenance<'a> {
    pub(super) entry: &'a PtxEntry,
    descriptor: &'a KernelDescriptor,
    pub(super) instructions: &'a [Instruction],
    /// Register -> the instructions that define it.
    pub(super) defs: HashMap<&'a str, Vec<usize>>,
    /// Register -> what the lattice knows of its value.
    pub(super) values: HashMap<&'a str, Value>,
    /// Where an optimizer entry's clamp inputs come from (none in other entries).
    pub(super) clamp: Option<ClampSources>,
}

impl<'a> Provenance<'a> {
    pub(super) fn new(
        entry: &'a PtxEntry,
        descriptor: &'a KernelDescriptor,
        instructions: &'a [Instruction],
        clamp: Option<ClampSources>,
    ) -> Self {
        let mut defs: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, inst) in instructions.iter().enumerate() {
            for d in destinations(inst) {
                defs.entry(d).or_default().push(i);
            }
        }
        let mut flow = Provenance {
            entry,
            descriptor,
            instructions,
            defs,
            values: HashMap::new(),
            clamp,
        };
        flow.fixpoint();
        flow
    }

    /// The entry parameter a `.param` address names, if any.
    pub(super) fn param_of(&self, operand: &Operand) -> Option<usize> {
        match operand {
            Operand::Address { base, .. } => match base.as_ref() {
                Operand::Symbol(s) => self.entry.param_index(s),
                _ => None,
            },
            _ => None,
        }
    }

    pub(super) fn is_param_load(inst: &Instruction) -> bool {
        inst.op() == "ld" && inst.has_modifier("param")
    }

    /// Instruction `i` of the entry.
    pub(super) fn instruction(&self, i: usize) -> &'a Instruction {
        &self.instructions[i]
    }

    /// The one definition of `reg`, unguarded, or why there is none: what the clamp's slice
    /// and the tensor index follow back, since a register defined twice or under a guard could
    /// hold either value at a use.
    pub(super) fn single_def(&self, reg: &str) -> Result<usize, DefinitionError> {
        let register = reg.to_string();
        match self.defs.get(reg).map(Vec::as_slice) {
            Some([i]) => match &self.instructions[*i] {
                inst if inst.guard.is_some() => Err(DefinitionError::Guarded {
                    register,
                    at: At::of(inst),
                }),
                _ => Ok(*i),
            },
            Some(defs) if defs.len() > 1 => Err(DefinitionError::Several {
                register,
                lines: defs.iter().map(|&i| self.instructions[i].line).collect(),
            }),
            _ => Err(DefinitionError::Undefined { register }),
        }
    }

    /// The constant byte offset of pointer register `reg` from the value of pointer parameter
    /// `param`, if `reg` is computed from it by unguarded single definitions of `ld.param`,
    /// `cvta`, `mov` and 64-bit `add` of an immediate only: how a stepped entry's bound is
    /// addressed in its step-state record, and how a table's own address is recognised.
    pub(super) fn offset_from_param(&self, reg: &str, param: usize) -> Option<i64> {
        self.offset_within(reg, param, 0)
    }

    fn offset_within(&self, reg: &str, param: usize, depth: usize) -> Option<i64> {
        if depth > 16 {
            return None;
        }
        let inst = &self.instructions[self.single_def(reg).ok()?];
        match (inst.op(), sources(inst)) {
            ("ld", [a]) if Provenance::is_param_load(inst) => {
                (self.param_of(a) == Some(param)).then_some(0)
            }
            ("cvta" | "mov", [Operand::Register(r)]) => self.offset_within(r, param, depth + 1),
            ("add", [Operand::Register(r), Operand::Immediate(imm)])
            | ("add", [Operand::Immediate(imm), Operand::Register(r)])
                if is_64(inst) =>
            {
                let imm = crate::ptx::parse_integer(imm)?;
                self.offset_within(r, param, depth + 1)?.checked_add(imm)
            }
            _ => None,
        }
    }

    fn is_pointer_param(&self, i: usize) -> bool {
        self.descriptor
            .params
            .get(i)
            .is_some_and(|p| p.ty == ParamType::Ptr)
    }

    /// The roots one definition gives its destinations.
    pub(super) fn defined_roots(&self, inst: &Instruction) -> Roots {
        let mut out = Roots::new();
        match class(inst) {
            Class::Load if Self::is_param_load(inst) => {
                match address(inst).and_then(|a| self.param_of(a)) {
                    Some(i) if self.is_pointer_param(i) => {
                        out.insert(Root::Pointer(i));
                    }
                    Some(_) => {} // a scalar parameter: an offset
                    None => {
                        out.insert(Root::Loaded);
                    }
                }
            }
            Class::Load => out.extend(self.loaded_roots(inst)),
            Class::Write => {
                // `atom`'s result: the old memory contents.
                out.insert(Root::Loaded);
            }
            Class::Compare => {}
            Class::Exchange | Class::Compute => {
                for s in sources(inst) {
                    for r in s.registers() {
                        if let Some(value) = self.values.get(r) {
                            out.extend(value.roots.iter().cloned());
                        }
                    }
                    for sym in s.symbols() {
                        out.insert(Root::Symbol(sym.to_string()));
                    }
                }
            }
            Class::Control | Class::Call | Class::Unknown => {}
        }
        out
    }

    /// What a (non-param) load yields: a table's buffer pointer, an offset from an index table,
    /// or an unknown value.
    fn loaded_roots(&self, inst: &Instruction) -> Roots {
        let loaded = Roots::from([Root::Loaded]);
        let Some(address) = address(inst) else {
            return loaded;
        };
        let roots = self.address_roots(address);
        let [Root::Pointer(i)] = roots.iter().collect::<Vec<_>>()[..] else {
            return loaded;
        };
        let role = self.descriptor.params[*i].role;
        let wide = ["b64", "u64", "s64"].iter().any(|m| inst.has_modifier(m))
            && !inst.opcode.split('.').any(|m| m.starts_with('v'));
        if role.is_pointer_table() && wide {
            Roots::from([Root::TableEntry(*i)])
        } else if role.is_index_table() {
            Roots::new()
        } else {
            loaded
        }
    }

    pub(super) fn roots(&self, reg: &str) -> Roots {
        self.values
            .get(reg)
            .map(|v| v.roots.clone())
            .unwrap_or_default()
    }

    /// The roots of an operand: a register's, a symbol's own, an address's base's.
    pub(super) fn operand_roots(&self, operand: &Operand) -> Roots {
        let mut out = Roots::new();
        for r in operand.registers() {
            out.extend(self.roots(r));
        }
        for s in operand.symbols() {
            out.insert(Root::Symbol(s.to_string()));
        }
        out
    }

    /// The roots of a memory operand `[base+offset]`.
    pub(super) fn address_roots(&self, address: &Operand) -> Roots {
        let Operand::Address { base, .. } = address else {
            return Roots::new();
        };
        match base.as_ref() {
            Operand::Register(r) => self.roots(r),
            Operand::Symbol(s) => Roots::from([Root::Symbol(s.clone())]),
            other => self.operand_roots(other),
        }
    }
}

/// Whether `inst` operates on 64-bit integers (`.s64`, `.u64`, `.b64`): address arithmetic.
pub(super) fn is_64(inst: &Instruction) -> bool {
    ["s64", "u64", "b64"].iter().any(|t| inst.has_modifier(t))
}
