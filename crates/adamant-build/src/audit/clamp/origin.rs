//! Where the bound (and a multi-tensor entry's per-tensor scale) comes from: which loads are the
//! bound's and the scale's origin.
use adamant_kernels::step::BOUND_OFFSET;

use super::ClampProver;
use crate::audit::opcodes::{address, destinations};
use crate::audit::provenance::Provenance;
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
}

/// Whether `inst` is an unguarded load of 32-bit words of one of `types` from global or
/// generic memory: the only loads a step-state bound or a tensor's scale may come from.
pub(super) fn is_word_load(inst: &Instruction, types: &[&str]) -> bool {
    inst.op() == "ld"
        && inst.guard.is_none()
        && !["param", "shared", "local", "const"]
            .iter()
            .any(|s| inst.has_modifier(s))
        && types.iter().any(|t| inst.has_modifier(t))
}

impl<'a> ClampProver<'a> {
    /// The register that `inst` loads the bound into, if `inst` is the bound's load.
    pub(super) fn bound_register(&self, inst: &'a Instruction) -> Option<&'a str> {
        let dests = destinations(inst);
        match self.source {
            BoundSource::Argument(i) => {
                let loads = Provenance::is_param_load(inst)
                    && address(inst).and_then(|a| self.flow.param_of(a)) == Some(i);
                match dests.as_slice() {
                    [d] if loads => Some(*d),
                    _ => None,
                }
            }
            BoundSource::Record(i) => {
                if !is_word_load(inst, &["b32", "f32", "u32", "s32"]) {
                    return None;
                }
                let Some(Operand::Address { base, offset }) = address(inst) else {
                    return None;
                };
                let Operand::Register(base) = base.as_ref() else {
                    return None;
                };
                let start = self.flow.offset_from_param(base, i)?.checked_add(*offset)?;
                let element = (BOUND_OFFSET as i64).checked_sub(start)?;
                if element % 4 != 0 {
                    return None;
                }
                dests.get(usize::try_from(element / 4).ok()?).copied()
            }
        }
    }

    /// The register that `inst` loads a tensor's scale into, if `inst` is a 32-bit load through
    /// the `weight_clamp_scales` pointer (at which index is checked per store).
    pub(super) fn scale_register(&self, inst: &'a Instruction) -> Option<&'a str> {
        let scales = self.scales?;
        if !is_word_load(inst, &["b32", "f32"])
            || inst.opcode.split('.').any(|m| m.starts_with('v'))
        {
            return None;
        }
        let from_scales = address(inst).is_some_and(|a| {
            self.flow.address_roots(a) == [crate::audit::provenance::Root::Pointer(scales)].into()
        });
        match destinations(inst).as_slice() {
            [d] if from_scales => Some(*d),
            _ => None,
        }
    }
}
