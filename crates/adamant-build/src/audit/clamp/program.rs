//! The slice compiled to straight-line steps in dependency order, and the extra cases around its
//! constants.
use std::collections::HashMap;

use super::slice::Slice;
use super::{ClampProver, Unprovable};
use crate::audit::eval;
use crate::audit::located::At;
use crate::audit::opcodes::sources;
use crate::ptx::Operand;

impl<'a> ClampProver<'a> {
    /// The slice as straight-line steps in dependency order, and where `value` ends up.
    pub(super) fn compile(
        &self,
        value: &'a str,
        slice: &Slice<'a>,
    ) -> Result<(Vec<Step>, Src), Unprovable> {
        let mut program: Vec<Step> = Vec::new();
        let mut slot_of: HashMap<&'a str, usize> = HashMap::new();
        let result = self.emit(value, slice, &mut program, &mut slot_of, 0)?;
        Ok((program, result))
    }

    fn emit(
        &self,
        reg: &'a str,
        slice: &Slice<'a>,
        program: &mut Vec<Step>,
        slot_of: &mut HashMap<&'a str, usize>,
        depth: usize,
    ) -> Result<Src, Unprovable> {
        if slice.x == Some(reg) {
            return Ok(Src::X);
        }
        if slice.bound_regs.contains(reg) {
            return Ok(Src::Bound);
        }
        if slice.word == Some(reg) {
            return Ok(Src::Word);
        }
        if slice.scale_regs.contains_key(reg) {
            return Ok(Src::Scale);
        }
        if let Some(&k) = slot_of.get(reg) {
            return Ok(Src::Slot(k));
        }
        if depth > 256 {
            return Err(Unprovable::TooDeep);
        }
        let i = *slice
            .defs
            .get(reg)
            .ok_or_else(|| Unprovable::OutsideSlice {
                register: reg.to_string(),
            })?;
        let inst = &self.instructions[i];
        let f32_immediates = eval::is_f32(inst);
        let mut args = Vec::new();
        for o in sources(inst) {
            args.push(match o {
                Operand::Register(r) => self.emit(r, slice, program, slot_of, depth + 1)?,
                Operand::Immediate(text) => {
                    Src::Imm(eval::immediate(text, f32_immediates).ok_or_else(|| {
                        let (at, text) = (At::of(inst), text.clone());
                        Unprovable::Immediate { at, text }
                    })?)
                }
                other => {
                    let (at, operand) = (At::of(inst), other.to_string());
                    return Err(Unprovable::NotAValue { at, operand });
                }
            });
        }
        // One half of a register taken apart (`mov.b32 {lo, hi}, %r`): the half this slice reads.
        let lane = super::unpack::lane_of(inst, reg);
        program.push(Step {
            inst: i,
            args,
            lane,
        });
        let k = program.len() - 1;
        slot_of.insert(reg, k);
        Ok(Src::Slot(k))
    }
}

/// Where one argument of a compiled step comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Src {
    X,
    Bound,
    /// A multi-tensor entry's scale of the stored tensor.
    Scale,
    /// A stochastic store's random word.
    Word,
    Imm(u32),
    Slot(usize),
}

/// One instruction of a compiled clamp: its index and its arguments, and for an instruction
/// with a vector destination the place of the register it defines for the slice.
pub(super) struct Step {
    pub(super) inst: usize,
    pub(super) args: Vec<Src>,
    pub(super) lane: Option<usize>,
}
