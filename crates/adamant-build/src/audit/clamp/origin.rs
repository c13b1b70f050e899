//! Where the bound (and a multi-tensor entry's per-tensor scale) comes from: which loads are the
//! bound's and the scale's origin, and what each definition gives the register lattice's clamp
//! inputs (`lattice.rs`).
use std::collections::BTreeSet;

use adamant_abi::record::BOUND_OFFSET;

use crate::audit::lattice::ClampInput;
use crate::audit::opcodes::{address, destinations, sources};
use crate::audit::provenance::{Provenance, Root};
use crate::ptx::{Instruction, Operand};

/// Where an optimizer entry reads its clamp bound: always through its last parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::audit) enum BoundSource {
    /// A plain entry (the codegen's `ScalarSource::Arguments`): parameter `i` is the bound
    /// itself (`ld.param`).
    Argument(usize),
    /// A stepped entry (`ScalarSource::Record`): parameter `i` points at a step record, whose
    /// `f32` at [`BOUND_OFFSET`] is the bound.
    Record(usize),
    /// A fused entry: parameter `i` is a table of step-record pointers, one per tensor; a bound
    /// is the `f32` at [`BOUND_OFFSET`] of a record whose pointer was loaded from it (at which
    /// index is checked per store, as a scale's is).
    RecordTable(usize),
}

/// Where an optimizer entry's clamp inputs come from: its bound, and in a multi-tensor entry its
/// `weight_clamp_scales` parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::audit) struct ClampSources {
    pub(in crate::audit) bound: BoundSource,
    pub(in crate::audit) scales: Option<usize>,
}

/// The base register and constant offset of an unguarded load of 32-bit words (`[base+offset]`),
/// the only loads a step record's bound may come from.
fn word_load_base(inst: &Instruction) -> Option<(&str, i64)> {
    if !is_word_load(inst, &["b32", "f32", "u32", "s32"]) {
        return None;
    }
    let Some(Operand::Address { base, offset }) = address(inst) else {
        return None;
    };
    let Operand::Register(base) = base.as_ref() else {
        return None;
    };
    Some((base, *offset))
}

/// The destination of a load starting `start` bytes into a step record that holds the bound
/// (the element at [`BOUND_OFFSET`], for a vector load), if one does.
fn bound_element<'a>(dests: &[&'a str], start: i64) -> Option<&'a str> {
    let element = (BOUND_OFFSET as i64).checked_sub(start)?;
    if element % 4 != 0 {
        return None;
    }
    dests.get(usize::try_from(element / 4).ok()?).copied()
}

/// Whether `inst` is an unguarded load of 32-bit words of one of `types` from global or
/// generic memory: the only loads a step-state bound or a tensor's scale may come from.
fn is_word_load(inst: &Instruction, types: &[&str]) -> bool {
    inst.op() == "ld"
        && inst.guard.is_none()
        && !["param", "shared", "local", "const"]
            .iter()
            .any(|s| inst.has_modifier(s))
        && types.iter().any(|t| inst.has_modifier(t))
}

impl<'a> Provenance<'a> {
    /// The register that `inst` loads the bound into, if `inst` is the bound's load.
    pub(in crate::audit) fn bound_register(&self, inst: &'a Instruction) -> Option<&'a str> {
        let dests = destinations(inst);
        match self.clamp?.bound {
            BoundSource::Argument(i) => {
                let loads = Provenance::is_param_load(inst)
                    && address(inst).and_then(|a| self.param_of(a)) == Some(i);
                match dests.as_slice() {
                    [d] if loads => Some(*d),
                    _ => None,
                }
            }
            BoundSource::Record(i) => {
                let (base, offset) = word_load_base(inst)?;
                let start = self.offset_from_param(base, i)?.checked_add(offset)?;
                bound_element(&dests, start)
            }
            BoundSource::RecordTable(i) => {
                let (_, start) = self.record_word(inst, i)?;
                bound_element(&dests, start)
            }
        }
    }

    /// For a 32-bit word load through a pointer loaded from table parameter `table` (a fused
    /// entry's step-state table): that pointer's load, and the word's byte offset from it.
    pub(in crate::audit) fn record_word(
        &self,
        inst: &'a Instruction,
        table: usize,
    ) -> Option<(usize, i64)> {
        let (base, offset) = word_load_base(inst)?;
        let (load, from) = self.table_pointer(base, table, 0)?;
        Some((load, from.checked_add(offset)?))
    }

    /// The load of a pointer from table parameter `table` that pointer register `reg` is
    /// computed from, and `reg`'s constant byte offset from that pointer: followed through
    /// unguarded single definitions of `cvta`, `mov` and 64-bit `add` of an immediate only, to a
    /// 64-bit scalar load whose address derives from the table parameter alone. How a fused
    /// entry's bound is addressed in its tensor's record.
    pub(in crate::audit) fn table_pointer(
        &self,
        reg: &str,
        table: usize,
        depth: usize,
    ) -> Option<(usize, i64)> {
        if depth > 16 {
            return None;
        }
        let i = self.single_def(reg).ok()?;
        let inst = &self.instructions[i];
        match (inst.op(), sources(inst)) {
            ("ld", [a]) if !Provenance::is_param_load(inst) => {
                let wide = ["b64", "u64", "s64"].iter().any(|m| inst.has_modifier(m))
                    && !inst.opcode.split('.').any(|m| m.starts_with('v'));
                let from_table = self.address_roots(a) == BTreeSet::from([Root::Pointer(table)]);
                (wide && inst.guard.is_none() && from_table).then_some((i, 0))
            }
            ("cvta" | "mov", [Operand::Register(r)]) => self.table_pointer(r, table, depth + 1),
            ("add", [Operand::Register(r), Operand::Immediate(imm)])
            | ("add", [Operand::Immediate(imm), Operand::Register(r)])
                if super::super::provenance::is_64(inst) =>
            {
                let imm = crate::ptx::parse_integer(imm)?;
                let (load, offset) = self.table_pointer(r, table, depth + 1)?;
                Some((load, offset.checked_add(imm)?))
            }
            _ => None,
        }
    }

    /// The register that `inst` loads a tensor's scale into, if `inst` is a 32-bit load through
    /// the `weight_clamp_scales` pointer alone (at which index is checked per store).
    pub(in crate::audit) fn scale_register(&self, inst: &'a Instruction) -> Option<&'a str> {
        self.scale_load(inst, |roots, scales| {
            *roots == BTreeSet::from([Root::Pointer(scales)])
        })
    }

    /// The register of a 32-bit scalar load whose address roots pass `through(roots, scales)`.
    fn scale_load(
        &self,
        inst: &'a Instruction,
        through: impl Fn(&BTreeSet<Root>, usize) -> bool,
    ) -> Option<&'a str> {
        let scales = self.clamp?.scales?;
        if !is_word_load(inst, &["b32", "f32"])
            || inst.opcode.split('.').any(|m| m.starts_with('v'))
        {
            return None;
        }
        let from_scales = address(inst).is_some_and(|a| through(&self.address_roots(a), scales));
        match destinations(inst).as_slice() {
            [d] if from_scales => Some(*d),
            _ => None,
        }
    }

    /// The clamp inputs the definition `inst` (instruction `i`) gives each of `dests`: the
    /// bound's load gives its register the bound (and nothing else); any other instruction gives
    /// every destination the inputs of every register it reads, and a load that may be a
    /// tensor's scale (its address may derive from the scales pointer) records itself, to be
    /// judged once the roots are final.
    pub(in crate::audit) fn defined_clamp_inputs(
        &self,
        i: usize,
        inst: &'a Instruction,
        dests: &[&'a str],
    ) -> Vec<BTreeSet<ClampInput>> {
        if let Some(bound) = self.bound_register(inst) {
            return dests
                .iter()
                .map(|&d| match d == bound {
                    true => BTreeSet::from([ClampInput::Bound]),
                    false => BTreeSet::new(),
                })
                .collect();
        }
        let mut read = BTreeSet::new();
        for s in sources(inst) {
            for r in s.registers() {
                if let Some(value) = self.values.get(r) {
                    read.extend(value.clamp_inputs.iter().copied());
                }
            }
        }
        if self
            .scale_load(inst, |roots, scales| roots.contains(&Root::Pointer(scales)))
            .is_some()
        {
            read.insert(ClampInput::ScaleLoad(i));
        }
        vec![read; dests.len()]
    }

    /// Whether `reg`'s value is computed from the bound or a tensor's scale.
    pub(in crate::audit) fn depends_on_bound(&self, reg: &str) -> bool {
        self.values.get(reg).is_some_and(|v| {
            v.clamp_inputs.iter().any(|input| match *input {
                ClampInput::Bound => true,
                ClampInput::ScaleLoad(i) => self.scale_register(&self.instructions[i]).is_some(),
            })
        })
    }
}
