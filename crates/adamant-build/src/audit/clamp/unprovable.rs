//! Why a stored value's clamp cannot be proven, typed and located: each reason names the
//! instruction it is about (line and text) where there is one, so a violation points at the
//! place to look, not only at the store.
use std::fmt;

use crate::audit::eval::EvalError;
use crate::audit::located::{At, DefinitionError};
use crate::audit::tensor_index::TraceError;

/// Why the instructions between the bound and a stored value could not be evaluated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unprovable {
    /// The entry declares no clamp bound (or step state) as its last parameter.
    NoBoundDeclared,
    /// A register on the way has no one unguarded definition.
    Definition(DefinitionError),
    /// An instruction on the way reads a negated or paired predicate.
    PredicateForm { at: At },
    /// An instruction on the way reads an operand that is neither a register nor an immediate.
    NotAValue { at: At, operand: String },
    /// The bound is loaded as something other than a 32-bit float.
    BoundNotF32 { at: At },
    /// The value depends on the bound, but the bound's load is not among its definitions.
    BoundNotRead,
    /// The value is computed from the bound alone, not from an updated value.
    BoundOnly,
    /// Besides the bound, the value depends on several registers not all computed from one.
    SeveralInputs { registers: Vec<String> },
    /// The chain of definitions is deeper than the prover follows.
    TooDeep,
    /// A register the value reads is not among its definitions.
    OutsideSlice { register: String },
    /// An immediate the interpreter cannot read.
    Immediate { at: At, text: String },
    /// The interpreter cannot evaluate an instruction ([`EvalError`] says why).
    Evaluation { at: At, error: EvalError },
    /// A multi-tensor entry's store has no address.
    NoStoreAddress,
    /// The tensor the stored pointer was loaded for cannot be traced.
    StoredTensor(TraceError),
    /// The tensor a scale was loaded for cannot be traced.
    ScaleTensor(TraceError),
    /// A fused entry's bound (the load at `line`) is not read through a record pointer loaded
    /// from its step-state table.
    BoundRecord { line: usize },
    /// The tensor a fused entry's bound record was loaded for cannot be traced.
    BoundTensor(TraceError),
}

impl fmt::Display for Unprovable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Unprovable as U;
        match self {
            U::NoBoundDeclared => f.write_str(
                "the entry declares no clamp bound (or step state) as its last parameter",
            ),
            U::Definition(e) => write!(f, "{e}"),
            U::PredicateForm { at } => write!(f, "{at} has a negated or paired predicate"),
            U::NotAValue { at, operand } => write!(
                f,
                "{at} reads {operand}, which is neither a register nor an immediate"
            ),
            U::BoundNotF32 { at } => write!(
                f,
                "the bound is read as `{}` (line {}), not as a 32-bit float",
                at.instruction, at.line
            ),
            U::BoundNotRead => f.write_str("the bound is not read where the value is built"),
            U::BoundOnly => f.write_str(
                "the stored value is computed from the bound alone, not from an updated value",
            ),
            U::SeveralInputs { registers } => write!(
                f,
                "besides the bound, the stored value depends on {} values that are not all \
                 computed from one of them ({})",
                registers.len(),
                registers.join(", ")
            ),
            U::TooDeep => f.write_str("the clamp's slice is too deep"),
            U::OutsideSlice { register } => write!(f, "`{register}` is outside the clamp's slice"),
            U::Immediate { at, text } => write!(f, "cannot read the immediate `{text}` of {at}"),
            U::Evaluation { at, error } => write!(f, "{error} ({at})"),
            U::NoStoreAddress => f.write_str("the store has no address"),
            U::StoredTensor(e) => write!(f, "the stored pointer's tensor cannot be traced: {e}"),
            U::ScaleTensor(e) => write!(f, "the scale's tensor cannot be traced: {e}"),
            U::BoundRecord { line } => write!(
                f,
                "the bound (line {line}) is not read through a record pointer loaded from the \
                 step-state table"
            ),
            U::BoundTensor(e) => write!(f, "the bound's tensor cannot be traced: {e}"),
        }
    }
}
