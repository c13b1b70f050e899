//! What the audit can find wrong. Every violation names the entry (or the module), and those
//! about an instruction give its line and text and say why.
use std::fmt;

use adamant_abi::KernelKind;

pub use super::clamp::ClampFailure;

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
    /// An optimizer descriptor without a pointer parameter buffer.
    NoParamBuffer { entry: String },
    /// An optimizer entry that never stores through its parameter-buffer pointer.
    NoParamStore { entry: String },
    /// An optimizer entry whose descriptor has no records header just before its bound (or
    /// step state).
    RecordsMissing { entry: String },
    /// An optimizer entry with parameter-buffer tables (a multi-tensor entry) that does not
    /// declare exactly one per-tensor scale table, or an entry without tables that declares one.
    ScalesMisdeclared {
        entry: String,
        param_tables: usize,
        scales: usize,
    },
    /// An optimizer entry that does not both reduce into its records' accumulators (an atomic)
    /// and publish them (a store) through its records header.
    RecordsNotWritten {
        entry: String,
        /// Atomics and reductions attributed to the records header.
        atomics: usize,
        /// Plain stores attributed to it.
        stores: usize,
    },
    /// A value stored to the parameter buffer that is not clamped. `line` and `instruction` are
    /// the store's; where the proof stopped at another instruction, the failure's
    /// [`Unprovable`](super::Unprovable) reason names that one's line and text too.
    ClampBypassed {
        entry: String,
        line: usize,
        instruction: String,
        /// The element of a vector store, if it is one.
        lane: Option<usize>,
        /// The stored operand.
        value: String,
        failure: ClampFailure,
    },
    /// A write to global (or generic) memory not attributed to exactly one writable pointer.
    UnattributedWrite {
        entry: String,
        line: usize,
        instruction: String,
        reason: super::Unattributed,
    },
    /// A write through a pointer whose declared role is read-only (or into a pointer table).
    WriteToReadOnly {
        entry: String,
        line: usize,
        instruction: String,
        param: String,
        role: String,
    },
    /// A store to a parameter buffer whose element width is not its declared storage type's
    /// (a 32-bit store into a bf16 buffer writes its neighbour too, whatever the value).
    StoreWidth {
        entry: String,
        line: usize,
        instruction: String,
        /// The buffer's declared storage type.
        storage: adamant_abi::Storage,
        /// Bits per element of the store (None: no width the audit reads from its type).
        bits: Option<u32>,
    },
    /// An entry with two parameter buffers (a parameter and its companion: a master and its
    /// bf16 copy, or a split's two halves) whose stores to them do not write the same clamped
    /// values lane by lane: the two buffers would hold halves or copies of different values.
    CompanionApart {
        entry: String,
        line: usize,
        instruction: String,
        /// The two buffers.
        buffers: (String, String),
        /// What differs: the store counts, or the lanes.
        reason: String,
    },
    /// An atomic or reduction into a parameter buffer (its value cannot be clamped).
    UncheckableWrite {
        entry: String,
        line: usize,
        instruction: String,
    },
    /// A pointer parameter (or a pointer from a table) is itself written to memory.
    PointerEscapes {
        entry: String,
        line: usize,
        instruction: String,
        pointer: String,
    },
    /// An instruction the audit does not know: it could write memory in a way not modelled.
    UnknownInstruction {
        entry: String,
        line: usize,
        instruction: String,
    },
    /// A call: the callee is code the audit cannot see.
    Call {
        entry: String,
        line: usize,
        instruction: String,
    },
    /// A parameter role the entry's kind may not have (a parameter buffer in a non-optimizer,
    /// an output in an optimizer, an unknown pointer role).
    RoleNotAllowed {
        entry: String,
        param: String,
        role: String,
        kind: KernelKind,
    },
    /// Something wrong with the module as a whole (a `.func`, inline assembly, an extern).
    Module { problem: String },
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
            | Violation::NoParamBuffer { entry }
            | Violation::NoParamStore { entry }
            | Violation::RecordsMissing { entry }
            | Violation::ScalesMisdeclared { entry, .. }
            | Violation::RecordsNotWritten { entry, .. }
            | Violation::ClampBypassed { entry, .. }
            | Violation::UnattributedWrite { entry, .. }
            | Violation::WriteToReadOnly { entry, .. }
            | Violation::UncheckableWrite { entry, .. }
            | Violation::StoreWidth { entry, .. }
            | Violation::CompanionApart { entry, .. }
            | Violation::PointerEscapes { entry, .. }
            | Violation::UnknownInstruction { entry, .. }
            | Violation::Call { entry, .. }
            | Violation::RoleNotAllowed { entry, .. } => entry,
            Violation::Module { .. } => "<module>",
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
            Violation::NoParamBuffer { entry } => {
                write!(f, "{entry}: the descriptor has no pointer parameter buffer")
            }
            Violation::NoParamStore { entry } => write!(
                f,
                "{entry}: no store through the parameter-buffer pointer was found"
            ),
            Violation::RecordsMissing { entry } => write!(
                f,
                "{entry}: an optimizer entry takes its diagnostics records header (role Records) \
                 just before its last parameter; this one does not"
            ),
            Violation::ScalesMisdeclared {
                entry,
                param_tables,
                scales,
            } => write!(
                f,
                "{entry}: a multi-tensor entry clamps each tensor with its own bound, so an entry \
                 with parameter-buffer tables declares exactly one per-tensor scale table (role \
                 ClampScales) and no other entry declares one; this one has {param_tables} \
                 parameter table(s) and {scales} scale table(s)"
            ),
            Violation::RecordsNotWritten {
                entry,
                atomics,
                stores,
            } => write!(
                f,
                "{entry}: an optimizer entry reduces into its diagnostics accumulators and \
                 publishes its records, both through its records header; found {atomics} \
                 atomic(s) and {stores} store(s) there"
            ),
            Violation::CompanionApart {
                entry,
                line,
                instruction,
                buffers: (first, second),
                reason,
            } => write!(
                f,
                "{entry} (line {line}): `{instruction}`: `{first}` and `{second}` are one \
                 parameter's two buffers, so the k-th store of each must write the same clamped \
                 values lane by lane (the halves of one master, or a master and its copy); \
                 {reason}"
            ),
            Violation::StoreWidth {
                entry,
                line,
                instruction,
                storage,
                bits,
            } => {
                let bits = bits.map_or("no width the audit reads".to_string(), |b| {
                    format!("{b}-bit elements")
                });
                write!(
                    f,
                    "{entry} (line {line}): `{instruction}` stores {bits} to a parameter buffer \
                     declared `{}` ({} bits an element): a store of another width writes \
                     beside the element, so nothing about its value holds",
                    storage.name(),
                    storage.bytes() * 8
                )
            }
            Violation::ClampBypassed {
                entry,
                line,
                instruction,
                lane,
                value,
                failure,
            } => {
                write!(f, "{entry} (line {line}): `{instruction}` stores {value}")?;
                if let Some(lane) = lane {
                    write!(f, " (element {lane})")?;
                }
                write!(f, " to a parameter buffer, but {failure}")
            }
            Violation::UnattributedWrite {
                entry,
                line,
                instruction,
                reason,
            } => write!(
                f,
                "{entry} (line {line}): `{instruction}` writes memory not attributed to one \
                 writable pointer parameter: {reason}"
            ),
            Violation::WriteToReadOnly {
                entry,
                line,
                instruction,
                param,
                role,
            } => write!(
                f,
                "{entry} (line {line}): `{instruction}` writes through `{param}`, whose role \
                 {role} is read-only (or is a pointer table, which is never written)"
            ),
            Violation::UncheckableWrite {
                entry,
                line,
                instruction,
            } => write!(
                f,
                "{entry} (line {line}): `{instruction}` writes a parameter buffer other than \
                 by a store, so its value cannot be clamped"
            ),
            Violation::PointerEscapes {
                entry,
                line,
                instruction,
                pointer,
            } => write!(
                f,
                "{entry} (line {line}): `{instruction}` writes the pointer `{pointer}` itself \
                 to memory (it could be loaded back and written through)"
            ),
            Violation::UnknownInstruction {
                entry,
                line,
                instruction,
            } => write!(
                f,
                "{entry} (line {line}): `{instruction}` is an instruction the audit does not \
                 model, so it cannot prove what it writes"
            ),
            Violation::Call {
                entry,
                line,
                instruction,
            } => write!(
                f,
                "{entry} (line {line}): `{instruction}` calls a function, whose body the audit \
                 does not see (device code must be inlined)"
            ),
            Violation::RoleNotAllowed {
                entry,
                param,
                role,
                kind,
            } => write!(
                f,
                "{entry}: parameter `{param}` has role {role}, which a {kind:?} entry may not \
                 have (a kernel that writes parameters is an optimizer kernel)"
            ),
            Violation::Module { problem } => write!(f, "the module: {problem}"),
        }
    }
}
