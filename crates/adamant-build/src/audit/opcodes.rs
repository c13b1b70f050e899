//! What a PTX instruction defines, reads and writes, by opcode. The audit knows a closed list of
//! opcodes; any other instruction is a violation (it could write memory in a way the audit does
//! not model), never assumed harmless.
use crate::ptx::{Instruction, Operand};

/// How the audit treats an opcode (the part before the first `.`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Class {
    /// Computes its destination from its sources (arithmetic, logic, moves, conversions).
    Compute,
    /// Defines a predicate (or a mask) by comparing: `setp`, `set`, `testp`.
    Compare,
    /// Defines its destination from memory: `ld`, `ldu`.
    Load,
    /// Defines its destination from another thread's copy of its source: `shfl`, `redux`...
    Exchange,
    /// Writes memory: `st`, `red`, `atom` (which also defines its destination from memory).
    Write,
    /// Neither defines a register nor writes memory: branches, barriers, fences, `ret`.
    Control,
    /// A call: the callee is code the audit cannot see.
    Call,
    /// Anything else.
    Unknown,
}

const COMPUTE: &[&str] = &[
    "abs",
    "add",
    "addc",
    "sub",
    "subc",
    "mul",
    "mul24",
    "mad",
    "mad24",
    "madc",
    "sad",
    "div",
    "rem",
    "neg",
    "min",
    "max",
    "popc",
    "clz",
    "bfind",
    "fns",
    "brev",
    "bfe",
    "bfi",
    "dp4a",
    "dp2a",
    "copysign",
    "sqrt",
    "rsqrt",
    "rcp",
    "sin",
    "cos",
    "lg2",
    "ex2",
    "tanh",
    "fma",
    "selp",
    "slct",
    "and",
    "or",
    "xor",
    "not",
    "cnot",
    "lop3",
    "shf",
    "shl",
    "shr",
    "mov",
    "prmt",
    "cvt",
    "cvta",
    "isspacep",
    "mapa",
    "createpolicy",
];
const COMPARE: &[&str] = &["setp", "set", "testp"];
const LOAD: &[&str] = &["ld", "ldu"];
const EXCHANGE: &[&str] = &["shfl", "vote", "match", "redux", "activemask", "elect"];
const WRITE: &[&str] = &["st", "red", "atom"];
const CONTROL: &[&str] = &[
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
    "nanosleep",
    "prefetch",
    "prefetchu",
    "pmevent",
    "griddepcontrol",
];

pub(super) fn class(inst: &Instruction) -> Class {
    let op = inst.op();
    let is = |list: &[&str]| list.contains(&op);
    if is(COMPUTE) {
        Class::Compute
    } else if is(COMPARE) {
        Class::Compare
    } else if is(LOAD) {
        Class::Load
    } else if is(EXCHANGE) {
        Class::Exchange
    } else if is(WRITE) {
        Class::Write
    } else if is(CONTROL) {
        Class::Control
    } else if op == "call" {
        Class::Call
    } else {
        Class::Unknown
    }
}

/// The memory a write or load addresses, from its state-space modifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Space {
    /// `.global`, or no state space (a generic address, which may be global memory).
    GlobalOrGeneric,
    /// `.shared` (any scope) or `.local`: memory private to the block or thread.
    Private,
    /// `.param`: the kernel's parameters.
    Param,
    /// `.const`.
    Const,
}

pub(super) fn space(inst: &Instruction) -> Space {
    let mods: Vec<&str> = inst.opcode.split('.').skip(1).collect();
    if mods.contains(&"param") {
        Space::Param
    } else if mods.contains(&"const") {
        Space::Const
    } else if mods
        .iter()
        .any(|m| m.starts_with("shared") || *m == "local")
    {
        Space::Private
    } else {
        Space::GlobalOrGeneric
    }
}

/// The registers an instruction defines (its first operand, unless it defines none).
pub(super) fn destinations(inst: &Instruction) -> Vec<&str> {
    match class(inst) {
        Class::Write if inst.op() != "atom" => return Vec::new(),
        Class::Control | Class::Call | Class::Unknown => return Vec::new(),
        _ => {}
    }
    match inst.operands.first() {
        Some(Operand::Address { .. }) | None => Vec::new(),
        Some(first) => first.registers(),
    }
}

/// The operands an instruction reads (everything after its destination, if it has one).
pub(super) fn sources(inst: &Instruction) -> &[Operand] {
    if destinations(inst).is_empty() {
        &inst.operands
    } else {
        inst.operands.get(1..).unwrap_or(&[])
    }
}

/// The address operand of a load or write.
pub(super) fn address(inst: &Instruction) -> Option<&Operand> {
    inst.operands
        .iter()
        .find(|o| matches!(o, Operand::Address { .. }))
}

/// The operands a write stores (after its address; for `atom`, after the destination and the
/// address).
pub(super) fn written_values(inst: &Instruction) -> Vec<&Operand> {
    let mut after_address = inst
        .operands
        .iter()
        .skip_while(|o| !matches!(o, Operand::Address { .. }));
    after_address.next();
    after_address
        .filter(|o| !matches!(o, Operand::Address { .. }))
        .collect()
}
