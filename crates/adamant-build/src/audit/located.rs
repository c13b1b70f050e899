//! Where in an entry a reason points, and why a register cannot be followed back to one
//! definition: the located pieces the audit's typed errors are built from (the entry itself is
//! named by the [`Violation`](super::Violation) that carries them).
use std::fmt;

use crate::ptx::Instruction;

/// One instruction of the entry: its PTX line and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct At {
    pub line: usize,
    pub instruction: String,
}

impl At {
    pub(super) fn of(inst: &Instruction) -> At {
        At {
            line: inst.line,
            instruction: inst.text.clone(),
        }
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` (line {})", self.instruction, self.line)
    }
}

/// Why a register has no one unguarded definition. The clamp's slice and the tensor index
/// follow values back only through such definitions: a register defined twice or under a guard
/// could hold either value at a use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DefinitionError {
    /// Its one definition is guarded by a predicate.
    Guarded { register: String, at: At },
    /// It is defined at several lines.
    Several { register: String, lines: Vec<usize> },
    /// Nothing defines it.
    Undefined { register: String },
}

impl fmt::Display for DefinitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DefinitionError::Guarded { register, at } => {
                write!(f, "`{register}` is defined under a guard ({at})")
            }
            DefinitionError::Several { register, lines } => write!(
                f,
                "`{register}` has {} definitions (lines {})",
                lines.len(),
                lines
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            DefinitionError::Undefined { register } => write!(f, "`{register}` is never defined"),
        }
    }
}
