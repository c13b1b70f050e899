//! Which tensor a multi-tensor entry's value belongs to: the index register a load from a
//! per-tensor table was addressed with. A multi-tensor entry clamps tensor `t` with a bound
//! scaled by `weight_clamp_scales[t]`; the audit proves that the scale a stored value is clamped
//! with was loaded at the same index as the parameter-buffer pointer the value is stored
//! through, by tracing both addresses to one register.
//!
//! Accepted address shapes, all of single, unguarded definitions (anything else is not traced,
//! and a store that needs it is unproven):
//! - the table load reads `[a]` (no constant offset: `[a+8]` would be the next tensor);
//! - `a = add.{s,u,b}64 base, off` (either order), or `a = mad.wide.u32 i, size, base`, with
//!   `base` the table parameter itself (`ld.param`, `cvta`, `mov`, no offset);
//! - `off = shl.b64 i, log2(size)`, `mul.wide.u32 i, size` or `mul.lo.{s,u}64 i, size`, `size`
//!   being the table's element size (8 for pointers, 4 for scales);
//! - `i` followed through `cvt.u64.u32` and `mov` to the register that holds the index, which
//!   must have one definition.
//!
//! Single-definition registers are SSA values in the PTX that LLVM's NVPTX backend emits (its
//! multi-definition registers are the copies that lower its phi nodes, and the audit follows no
//! value through them here). So two loads traced to one index register read the index of the same
//! chunk: a use always sees its definition's latest execution, and both loads' definitions
//! dominate the store that uses them.
use std::fmt;

use super::located::{At, DefinitionError};
use super::opcodes::{address, sources};
use super::provenance::{is_64, Provenance, Root};
use crate::ptx::{parse_integer, Instruction, Operand};

/// Why a per-tensor table address is not traced to its index register: the instruction where
/// the trace stopped, if one, and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub at: Option<At>,
    pub reason: TraceReason,
}

/// What stopped a trace (the accepted shapes are listed in this module's documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceReason {
    /// The load or store has no address operand.
    NoAddress,
    /// The load reads the table at a constant byte offset (another tensor's element).
    ConstantOffset { bytes: i64 },
    /// The load's address is not a register.
    NoIndex,
    /// The address adds an index to something that is not the table's own address.
    NoTableOperand,
    /// The address is not the table's address plus an index.
    NotTablePlusIndex,
    /// The index is multiplied by `factor`, not by the table's element size.
    WrongElementSize { factor: String, size: i64 },
    /// The index (or the byte offset) is the constant `operand`.
    ConstantIndex { operand: String },
    /// The stored pointer is loaded, but not from the table.
    NotFromTable,
    /// The stored pointer passes through an instruction the trace does not follow.
    NotFollowed,
    /// The stored pointer's definitions are too deep to follow.
    TooDeep,
    /// A register on the way has no one unguarded definition.
    Definition(DefinitionError),
}

impl TraceError {
    fn at(inst: &Instruction, reason: TraceReason) -> TraceError {
        TraceError {
            at: Some(At::of(inst)),
            reason,
        }
    }

    fn bare(reason: TraceReason) -> TraceError {
        TraceError { at: None, reason }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use TraceReason as R;
        if let Some(at) = &self.at {
            write!(f, "{at} ")?;
        }
        match &self.reason {
            R::NoAddress => f.write_str("has no address"),
            R::ConstantOffset { bytes } => {
                write!(f, "reads the table at a constant offset of {bytes} bytes")
            }
            R::NoIndex => f.write_str("reads the table without an index"),
            R::NoTableOperand => f.write_str("does not add an index to the table's own address"),
            R::NotTablePlusIndex => f.write_str("is not the table's address plus an index"),
            R::WrongElementSize { factor, size } => write!(
                f,
                "scales the index by {factor}, not by the table's {size}-byte elements"
            ),
            R::ConstantIndex { operand } => write!(f, "the index is the constant {operand}"),
            R::NotFromTable => f.write_str("loads the stored pointer, but not from the table"),
            R::NotFollowed => f.write_str(
                "passes the stored pointer on in a way the audit does not follow to its table load",
            ),
            R::TooDeep => f.write_str("the stored pointer's definitions are too deep to follow"),
            R::Definition(e) => write!(f, "{e}"),
        }
    }
}

/// Traces per-tensor table addresses in one entry body.
pub(super) struct TensorIndex<'a> {
    pub(super) flow: &'a Provenance<'a>,
    pub(super) instructions: &'a [Instruction],
}

impl<'a> TensorIndex<'a> {
    /// The one unguarded definition of `reg`, or why there is none.
    fn def(&self, reg: &str) -> Result<&'a Instruction, TraceError> {
        self.flow
            .single_def(reg)
            .map(|i| &self.instructions[i])
            .map_err(|e| TraceError::bare(TraceReason::Definition(e)))
    }

    /// The index register the table parameter `table`, of elements of `size` bytes, is read at
    /// by the load `load`.
    pub(super) fn load_index(
        &self,
        load: &'a Instruction,
        table: usize,
        size: i64,
    ) -> Result<&'a str, TraceError> {
        let Some(Operand::Address { base, offset }) = address(load) else {
            return Err(TraceError::at(load, TraceReason::NoAddress));
        };
        if *offset != 0 {
            let bytes = *offset;
            return Err(TraceError::at(load, TraceReason::ConstantOffset { bytes }));
        }
        let Operand::Register(a) = base.as_ref() else {
            return Err(TraceError::at(load, TraceReason::NoIndex));
        };
        let inst = self.def(a)?;
        let (base, index) = match (inst.op(), sources(inst)) {
            ("add", [x, y]) if is_64(inst) => {
                if self.is_table(x, table) {
                    (x, self.scaled(y, size)?)
                } else if self.is_table(y, table) {
                    (y, self.scaled(x, size)?)
                } else {
                    return Err(TraceError::at(inst, TraceReason::NoTableOperand));
                }
            }
            ("mad", [i, k, b]) if inst.has_modifier("wide") && inst.has_modifier("u32") => {
                self.expect_size(k, size, inst)?;
                (b, self.index(i)?)
            }
            _ => return Err(TraceError::at(inst, TraceReason::NotTablePlusIndex)),
        };
        if !self.is_table(base, table) {
            return Err(TraceError::at(inst, TraceReason::NoTableOperand));
        }
        Ok(index)
    }

    /// Whether `operand` is the table parameter's own address (no offset).
    fn is_table(&self, operand: &Operand, table: usize) -> bool {
        matches!(operand, Operand::Register(r) if self.flow.offset_from_param(r, table) == Some(0))
    }

    fn expect_size(&self, k: &Operand, size: i64, inst: &Instruction) -> Result<(), TraceError> {
        match k {
            Operand::Immediate(t) if parse_integer(t) == Some(size) => Ok(()),
            _ => {
                let factor = k.to_string();
                let reason = TraceReason::WrongElementSize { factor, size };
                Err(TraceError::at(inst, reason))
            }
        }
    }

    /// The index register of a byte offset `index × size`.
    fn scaled(&self, operand: &'a Operand, size: i64) -> Result<&'a str, TraceError> {
        let Operand::Register(r) = operand else {
            let operand = operand.to_string();
            return Err(TraceError::bare(TraceReason::ConstantIndex { operand }));
        };
        let inst = self.def(r)?;
        match (inst.op(), sources(inst)) {
            ("shl", [i, Operand::Immediate(n)]) if is_64(inst) => {
                match parse_integer(n).and_then(|n| 1i64.checked_shl(u32::try_from(n).ok()?)) {
                    Some(k) if k == size => self.index(i),
                    _ => {
                        let factor = format!("2^{n}");
                        let reason = TraceReason::WrongElementSize { factor, size };
                        Err(TraceError::at(inst, reason))
                    }
                }
            }
            ("mul", [i, k])
                if (inst.has_modifier("wide") && inst.has_modifier("u32"))
                    || (inst.has_modifier("lo") && is_64(inst)) =>
            {
                self.expect_size(k, size, inst)?;
                self.index(i)
            }
            _ => Err(TraceError::at(inst, TraceReason::NotTablePlusIndex)),
        }
    }

    /// The register holding an index, followed through zero extensions and moves.
    fn index(&self, operand: &'a Operand) -> Result<&'a str, TraceError> {
        let Operand::Register(r) = operand else {
            let operand = operand.to_string();
            return Err(TraceError::bare(TraceReason::ConstantIndex { operand }));
        };
        let inst = self.def(r)?;
        match (inst.op(), sources(inst)) {
            ("cvt", [src]) if inst.opcode == "cvt.u64.u32" => self.index(src),
            ("mov", [src @ Operand::Register(_)]) => self.index(src),
            _ => Ok(r),
        }
    }

    /// The tensor index a stored address's parameter-buffer pointer was loaded at, from table
    /// parameter `table`: the address is followed back through single definitions (adding
    /// offsets, which carry no pointer) to the pointer's load from the table.
    pub(super) fn stored_index(
        &self,
        stored: &'a Operand,
        table: usize,
    ) -> Result<&'a str, TraceError> {
        let Operand::Address { base, .. } = stored else {
            return Err(TraceError::bare(TraceReason::NoAddress));
        };
        let Operand::Register(first) = base.as_ref() else {
            return Err(TraceError::bare(TraceReason::NoIndex));
        };
        let mut reg: &'a str = first;
        for _ in 0..64 {
            let inst = self.def(reg)?;
            let srcs = sources(inst);
            if inst.op() == "ld" && !Provenance::is_param_load(inst) {
                let from_table = address(inst).is_some_and(|a| {
                    self.flow.address_roots(a) == [Root::Pointer(table)].into_iter().collect()
                });
                if !from_table {
                    return Err(TraceError::at(inst, TraceReason::NotFromTable));
                }
                return self.load_index(inst, table, 8);
            }
            let carriers: Vec<&Operand> = srcs
                .iter()
                .filter(|s| {
                    self.flow
                        .operand_roots(s)
                        .contains(&Root::TableEntry(table))
                })
                .collect();
            match (inst.op(), carriers.as_slice()) {
                ("add" | "mov" | "cvta", [Operand::Register(r)]) => reg = r,
                _ => return Err(TraceError::at(inst, TraceReason::NotFollowed)),
            }
        }
        Err(TraceError::bare(TraceReason::TooDeep))
    }
}
