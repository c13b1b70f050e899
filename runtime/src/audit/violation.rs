//! What the audit can find wrong, and why a stored value is not known to be clamped.
use std::fmt;

use adamant_kernels::abi::KernelKind;

/// Why a value stored to the parameter buffer is not known to be clamped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClampMissing {
    /// Its backward slice never reads the bound parameter.
    Bound,
    /// Its backward slice has no `copysign`.
    Copysign,
    /// It has `copysign`s, but none whose magnitude operand derives from the bound.
    CopysignOfBound,
}

impl fmt::Display for ClampMissing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ClampMissing::Bound => "its backward slice never reads the bound parameter",
            ClampMissing::Copysign => "its backward slice has no copysign (no clamp)",
            ClampMissing::CopysignOfBound => {
                "its backward slice has no copysign whose magnitude is the bound"
            }
        })
    }
}

/// One thing the audit found wrong. Every variant names the entry (or declared kernel).
#[derive(Clone, Debug, PartialEq)]
pub enum Violation {
    /// A PTX entry that neither `#[optimizer_kernel]` nor `#[kernel_entry]` declared.
    UndeclaredEntry { entry: String, line: usize },
    /// A declared kernel that the PTX lacks.
    MissingEntry { kernel: String, kind: KernelKind },
    /// Two PTX entries with one name.
    DuplicateEntry { entry: String, line: usize },
    /// An entry whose parameter list or body is not closed (truncated or malformed PTX).
    Incomplete { entry: String, line: usize },
    /// Two descriptors with one name.
    DuplicateDeclaration { kernel: String },
    /// The PTX and the descriptor disagree on the number of parameters.
    ParamCount {
        entry: String,
        declared: usize,
        ptx: usize,
    },
    /// A PTX parameter's type is not the declared type's.
    ParamType {
        entry: String,
        index: usize,
        name: String,
        expected: String,
        ptx: String,
    },
    /// The descriptor's clamp bound is missing or not the last parameter.
    BoundNotLast {
        entry: String,
        bound_index: Option<usize>,
        param_count: usize,
    },
    /// The clamp found in the PTX uses another parameter than the last as its bound.
    ClampReadsOtherParam {
        entry: String,
        param_index: usize,
        param_name: String,
    },
    /// An optimizer descriptor without a pointer parameter buffer.
    NoParamBuffer { entry: String },
    /// An optimizer entry that never stores through its parameter-buffer pointer.
    NoParamStore { entry: String },
    /// A value stored to the parameter buffer that is not clamped.
    ClampBypassed {
        entry: String,
        line: usize,
        instruction: String,
        /// The element of a vector store, if it is one.
        lane: Option<usize>,
        /// The stored operand.
        value: String,
        missing: ClampMissing,
    },
    /// A store whose address derives from no entry parameter (could alias the parameter buffer).
    UntracedStore {
        entry: String,
        line: usize,
        instruction: String,
    },
    /// An atomic, reduction or copy into the parameter buffer (its value cannot be checked).
    UncheckableWrite {
        entry: String,
        line: usize,
        instruction: String,
    },
    /// The parameter-buffer pointer itself is written to memory (or passed to a call).
    ParamPointerEscapes {
        entry: String,
        line: usize,
        instruction: String,
    },
}

impl Violation {
    /// The entry (or declared kernel) this is about.
    pub fn entry(&self) -> &str {
        match self {
            Violation::UndeclaredEntry { entry, .. }
            | Violation::DuplicateEntry { entry, .. }
            | Violation::Incomplete { entry, .. }
            | Violation::ParamCount { entry, .. }
            | Violation::ParamType { entry, .. }
            | Violation::BoundNotLast { entry, .. }
            | Violation::ClampReadsOtherParam { entry, .. }
            | Violation::NoParamBuffer { entry }
            | Violation::NoParamStore { entry }
            | Violation::ClampBypassed { entry, .. }
            | Violation::UntracedStore { entry, .. }
            | Violation::UncheckableWrite { entry, .. }
            | Violation::ParamPointerEscapes { entry, .. } => entry,
            Violation::MissingEntry { kernel, .. } | Violation::DuplicateDeclaration { kernel } => {
                kernel
            }
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::UndeclaredEntry { entry, line } => write!(
                f,
                "{entry} (line {line}): entry declared by neither #[optimizer_kernel] nor \
                 #[kernel_entry]"
            ),
            Violation::MissingEntry { kernel, kind } => {
                write!(f, "{kernel}: declared ({kind:?}) but not in the PTX")
            }
            Violation::DuplicateEntry { entry, line } => {
                write!(f, "{entry} (line {line}): a second entry with this name")
            }
            Violation::Incomplete { entry, line } => write!(
                f,
                "{entry} (line {line}): the entry's parameter list or body is not closed \
                 (truncated or malformed PTX)"
            ),
            Violation::DuplicateDeclaration { kernel } => {
                write!(f, "{kernel}: declared more than once")
            }
            Violation::ParamCount {
                entry,
                declared,
                ptx,
            } => write!(
                f,
                "{entry}: the PTX has {ptx} parameters, the descriptor {declared}"
            ),
            Violation::ParamType {
                entry,
                index,
                name,
                expected,
                ptx,
            } => write!(
                f,
                "{entry}: parameter {index} `{name}` is {ptx} in the PTX, declared {expected}"
            ),
            Violation::BoundNotLast {
                entry,
                bound_index,
                param_count,
            } => match bound_index {
                Some(i) => write!(
                    f,
                    "{entry}: the clamp bound is parameter {i}, not the last ({})",
                    param_count.saturating_sub(1)
                ),
                None => write!(f, "{entry}: no clamp bound parameter is declared"),
            },
            Violation::ClampReadsOtherParam {
                entry,
                param_index,
                param_name,
            } => write!(
                f,
                "{entry}: the clamp's copysign takes its bound from parameter {param_index} \
                 ({param_name}), not from the last parameter"
            ),
            Violation::NoParamBuffer { entry } => {
                write!(f, "{entry}: the descriptor has no pointer parameter buffer")
            }
            Violation::NoParamStore { entry } => write!(
                f,
                "{entry}: no store through the parameter-buffer pointer was found"
            ),
            Violation::ClampBypassed {
                entry,
                line,
                instruction,
                lane,
                value,
                missing,
            } => {
                write!(f, "{entry} (line {line}): `{instruction}` stores {value}")?;
                if let Some(lane) = lane {
                    write!(f, " (element {lane})")?;
                }
                write!(f, " to the parameter buffer, but {missing}")
            }
            Violation::UntracedStore {
                entry,
                line,
                instruction,
            } => write!(
                f,
                "{entry} (line {line}): `{instruction}` stores through an address that derives \
                 from no parameter (it could be the parameter buffer)"
            ),
            Violation::UncheckableWrite {
                entry,
                line,
                instruction,
            } => write!(
                f,
                "{entry} (line {line}): `{instruction}` writes the parameter buffer other than \
                 by a store, so its value cannot be checked"
            ),
            Violation::ParamPointerEscapes {
                entry,
                line,
                instruction,
            } => write!(
                f,
                "{entry} (line {line}): `{instruction}` writes the parameter-buffer pointer \
                 itself to memory"
            ),
        }
    }
}
