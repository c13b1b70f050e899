//! What a PTX instruction defines, reads and writes, by opcode.
use crate::ptx::{Instruction, Operand};

/// Opcodes (up to the first `.`) that define no register: their operands are all sources.
const NO_DEST: &[&str] = &[
    "st",
    "red",
    "bra",
    "brx",
    "ret",
    "exit",
    "bar",
    "barrier",
    "membar",
    "fence",
    "trap",
    "brkpt",
    "prefetch",
    "prefetchu",
    "call",
    "cp",
    "pmevent",
    "nanosleep",
    "sust",
    "sured",
    "stmatrix",
    "discard",
    "applypriority",
    "griddepcontrol",
    "setmaxnreg",
];

/// Opcodes whose result comes from memory (or another thread), not from their operands.
pub(super) const FROM_MEMORY: &[&str] = &[
    "ld",
    "ldu",
    "atom",
    "suld",
    "tex",
    "tld4",
    "ldmatrix",
    "shfl",
    "vote",
    "match",
    "redux",
    "activemask",
];

/// Opcodes that write memory (`st.param` too: it passes call arguments).
pub(super) fn is_memory_write(inst: &Instruction) -> bool {
    matches!(
        inst.op(),
        "st" | "red" | "atom" | "cp" | "stmatrix" | "multimem"
    )
}

/// The operands a memory write stores (after its address; for `atom`, after the destination
/// and the address).
pub(super) fn written_values(inst: &Instruction) -> Vec<&Operand> {
    let mut after_address = inst
        .operands
        .iter()
        .skip_while(|o| !matches!(o, Operand::Address { .. }));
    after_address.next();
    if inst.op() == "cp" {
        return Vec::new();
    }
    after_address
        .filter(|o| !matches!(o, Operand::Address { .. }))
        .collect()
}

pub(super) fn destinations(inst: &Instruction) -> Vec<&str> {
    if NO_DEST.contains(&inst.op()) {
        return Vec::new();
    }
    match inst.operands.first() {
        Some(Operand::Address { .. }) | None => Vec::new(),
        Some(first) => first.registers(),
    }
}

pub(super) fn sources(inst: &Instruction) -> &[Operand] {
    if NO_DEST.contains(&inst.op()) {
        &inst.operands
    } else {
        inst.operands.get(1..).unwrap_or(&[])
    }
}
