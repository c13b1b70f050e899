//! A `mov` into a vector destination takes a register apart: `mov.b32 {%rs1, %rs2}, %r3` puts
//! the low 16 bits of `%r3` in `%rs1` and the high 16 in `%rs2` (`_` discards a half). LLVM
//! takes the high half of an f32 this way, which is what a bf16 store keeps of it, so a bf16
//! parameter's slice meets it. The interpreter evaluates one destination at a time; this is the
//! one the slice defines, by its place in the vector.
use crate::audit::eval::EvalError;
use crate::ptx::{Instruction, Operand};

/// The place of `reg` in `inst`'s vector destination, if it has one.
pub(super) fn lane_of(inst: &Instruction, reg: &str) -> Option<usize> {
    match inst.operands.first() {
        Some(Operand::Vector(items)) => items
            .iter()
            .position(|o| matches!(o, Operand::Register(r) if r == reg)),
        _ => None,
    }
}

/// Lane `lane` of `source` as `inst` (a `mov.b32` into two 16-bit halves) splits it. Every other
/// instruction with a vector destination is refused: the audit does not guess at its layout.
pub(super) fn unpack(inst: &Instruction, source: u32, lane: usize) -> Result<u32, EvalError> {
    let halves = match inst.operands.first() {
        Some(Operand::Vector(items)) => items.len(),
        _ => 0,
    };
    if inst.opcode != "mov.b32" || halves != 2 || lane >= 2 {
        return Err(EvalError::VectorDestination);
    }
    Ok((source >> (16 * lane)) & 0xffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inst(text: &str) -> Instruction {
        crate::ptx::instructions(&[format!("{text};")], 1)
            .into_iter()
            .next()
            .expect("one instruction")
    }

    #[test]
    fn the_halves_of_a_32_bit_register() {
        let i = inst("mov.b32 {%rs1, %rs2}, %r3");
        assert_eq!(lane_of(&i, "%rs1"), Some(0));
        assert_eq!(lane_of(&i, "%rs2"), Some(1));
        assert_eq!(unpack(&i, 0x1234_5678, 0), Ok(0x5678));
        assert_eq!(unpack(&i, 0x1234_5678, 1), Ok(0x1234));
        let high = inst("mov.b32 {_, %rs9}, %r3");
        assert_eq!(lane_of(&high, "%rs9"), Some(1));
        assert_eq!(unpack(&high, 0xbf80_0001, 1), Ok(0xbf80));
    }

    #[test]
    fn other_vector_destinations_are_refused() {
        let wide = inst("mov.b64 {%r1, %r2}, %rd3");
        assert_eq!(unpack(&wide, 7, 0), Err(EvalError::VectorDestination));
        let four = inst("mov.b64 {%rs1, %rs2, %rs3, %rs4}, %rd3");
        assert_eq!(unpack(&four, 7, 3), Err(EvalError::VectorDestination));
        let plain = inst("mov.b32 %r1, %r2");
        assert_eq!(lane_of(&plain, "%r1"), None);
    }
}
