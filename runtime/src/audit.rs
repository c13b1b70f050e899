//! The PTX audit: checks the PTX module against the kernel descriptors that `#[optimizer_kernel]`
//! and `#[kernel_entry]` register, and proves from the PTX itself that every optimizer entry
//! clamps what it writes to its parameter buffer.
//!
//! For each `.entry`:
//! - its kind comes from the descriptor of the same name (an entry nobody declared is a
//!   violation, and so is a declared kernel the PTX lacks);
//! - its PTX parameter list must match the descriptor (count, and each `.param` type equal to
//!   [`ParamType::ptx`]);
//! - for an optimizer entry, the clamp bound must be the last parameter, and a def-use analysis of
//!   the body must show that every store whose address derives from the parameter-buffer pointer
//!   stores values whose backward slice reads the bound (`ld.param` of the last parameter) and
//!   goes through a `copysign` whose magnitude operand is derived from that bound (the clamp's
//!   `copysign(bound, p)`), with at least one such store. Registers with several definitions (loop
//!   variables, values merged after branches) take the union of all of them.
//!
//! The address side follows pointer provenance (`cvta`, `add`, `mov`, `mul.wide`, `shl`,
//! `selp` values...) but not predicates, so the alignment test that `or`s every buffer pointer
//! together does not make every buffer look like the parameter buffer. A store whose address
//! derives from no parameter at all (a pointer loaded from memory) cannot be told apart from a
//! parameter store and is reported too.
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt;

use adamant_kernels::abi::{KernelDescriptor, KernelKind, KernelParam, ParamRole, ParamType};

use crate::ptx::{self, Instruction, Operand, PtxEntry};

/// What an entry was declared as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// Declared by `#[optimizer_kernel]`.
    Optimizer,
    /// Declared by `#[kernel_entry]`.
    Other,
    /// In the PTX, but declared by neither macro (always a violation).
    Undeclared,
}

impl fmt::Display for EntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EntryKind::Optimizer => "optimizer",
            EntryKind::Other => "other",
            EntryKind::Undeclared => "UNDECLARED",
        })
    }
}

/// One parameter of an entry: what the PTX says and, when declared, what the descriptor says.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamAudit {
    pub index: usize,
    /// `attn_adam_kernel_param_12`.
    pub ptx_name: String,
    /// `.f32`.
    pub ptx_type: String,
    /// The descriptor's parameter at this index, if any.
    pub declared: Option<KernelParam>,
}

impl ParamAudit {
    /// The declared name, else the PTX name.
    pub fn name(&self) -> &str {
        self.declared.map(|p| p.name).unwrap_or(&self.ptx_name)
    }

    /// The declared type (`ptr`, `f32`, `u32`, `usize`), else the PTX type.
    pub fn type_name(&self) -> &str {
        match self.declared.map(|p| p.ty) {
            Some(ty) => param_type_name(ty),
            None => &self.ptx_type,
        }
    }

    /// Whether the PTX type is the declared type's PTX type.
    pub fn type_matches(&self) -> bool {
        self.declared.is_some_and(|p| p.ty.ptx() == self.ptx_type)
    }

    pub fn role(&self) -> Option<ParamRole> {
        self.declared.map(|p| p.role)
    }
}

/// `ptr`, `f32`, `u32`, `usize`.
pub fn param_type_name(ty: ParamType) -> &'static str {
    match ty {
        ParamType::Ptr => "ptr",
        ParamType::F32 => "f32",
        ParamType::U32 => "u32",
        ParamType::Usize => "usize",
    }
}

/// What the def-use analysis found in an optimizer entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClampAudit {
    /// Stores whose address derives from the parameter-buffer pointer.
    pub param_stores: usize,
    /// Values those stores write (4 for a `.v4` store).
    pub stored_values: usize,
    /// Of those, values whose backward slice reads the bound and applies `copysign` to it.
    pub clamped_values: usize,
}

/// The audit of one `.entry`.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryAudit {
    pub name: String,
    pub kind: EntryKind,
    /// 1-based line of the `.entry` in the PTX.
    pub line: usize,
    /// The PTX parameters, in order, with the declared ones beside them.
    pub params: Vec<ParamAudit>,
    /// Optimizer entries only.
    pub clamp: Option<ClampAudit>,
    /// Optimizer entries only: every parameter-buffer store is clamped and the entry has no
    /// violation at all.
    pub clamp_verified: Option<bool>,
}

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

/// The audit of one PTX module.
#[derive(Clone, Debug, PartialEq)]
pub struct AuditReport {
    /// Every `.entry`, in PTX order.
    pub entries: Vec<EntryAudit>,
    pub violations: Vec<Violation>,
}

impl AuditReport {
    pub fn is_ok(&self) -> bool {
        self.violations.is_empty()
    }

    pub fn entry(&self, name: &str) -> Option<&EntryAudit> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// The optimizer entries, in PTX order.
    pub fn optimizer_entries(&self) -> impl Iterator<Item = &EntryAudit> {
        self.entries
            .iter()
            .filter(|e| e.kind == EntryKind::Optimizer)
    }

    /// The violations about `entry`.
    pub fn violations_of<'a>(&'a self, entry: &'a str) -> impl Iterator<Item = &'a Violation> {
        self.violations.iter().filter(move |v| v.entry() == entry)
    }
}

impl fmt::Display for AuditReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rows: Vec<[String; 5]> = self
            .entries
            .iter()
            .map(|e| {
                let stores = match e.clamp {
                    Some(c) => format!("{} ({} values)", c.param_stores, c.stored_values),
                    None => "-".to_string(),
                };
                let clamp = match e.clamp_verified {
                    Some(true) => "verified",
                    Some(false) => "NOT VERIFIED",
                    None => "-",
                };
                [
                    e.name.clone(),
                    e.kind.to_string(),
                    e.params.len().to_string(),
                    stores,
                    clamp.to_string(),
                ]
            })
            .collect();
        let header = ["entry", "kind", "params", "param stores", "clamp"];
        let mut widths = header.map(str::len);
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.len());
            }
        }
        let line = |f: &mut fmt::Formatter<'_>, cells: [&str; 5]| -> fmt::Result {
            for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
                if i + 1 == cells.len() {
                    writeln!(f, "{cell}")?;
                } else {
                    write!(f, "{cell:<w$}  ")?;
                }
            }
            Ok(())
        };
        line(f, header)?;
        for row in &rows {
            line(f, row.each_ref().map(String::as_str))?;
        }
        if self.violations.is_empty() {
            writeln!(f, "{} entries, no violations", self.entries.len())
        } else {
            writeln!(
                f,
                "{} entries, {} violations:",
                self.entries.len(),
                self.violations.len()
            )?;
            for v in &self.violations {
                writeln!(f, "  - {v}")?;
            }
            Ok(())
        }
    }
}

/// Audits the PTX embedded in this crate ([`crate::PTX`]) against every registered kernel.
pub fn audit_embedded() -> AuditReport {
    audit(crate::PTX, &adamant_kernels::abi::kernels())
}

/// Audits `ptx` against `kernels` (normally [`adamant_kernels::abi::kernels`]).
pub fn audit(ptx: &str, kernels: &[&KernelDescriptor]) -> AuditReport {
    let entries = ptx::entries(ptx);
    let mut violations = Vec::new();
    let mut audits = Vec::new();

    let mut declared: HashMap<&str, &KernelDescriptor> = HashMap::new();
    for k in kernels {
        if declared.insert(k.name, k).is_some() {
            violations.push(Violation::DuplicateDeclaration {
                kernel: k.name.to_string(),
            });
        }
    }

    let mut seen = HashSet::new();
    for entry in &entries {
        if !seen.insert(entry.name.as_str()) {
            violations.push(Violation::DuplicateEntry {
                entry: entry.name.clone(),
                line: entry.line,
            });
        }
        if !entry.complete {
            violations.push(Violation::Incomplete {
                entry: entry.name.clone(),
                line: entry.line,
            });
        }
        let descriptor = declared.get(entry.name.as_str()).copied();
        audits.push(audit_entry(entry, descriptor, &mut violations));
    }

    for k in kernels {
        if !seen.contains(k.name) {
            violations.push(Violation::MissingEntry {
                kernel: k.name.to_string(),
                kind: k.kind,
            });
        }
    }

    for a in &mut audits {
        if a.kind == EntryKind::Optimizer {
            a.clamp_verified = Some(!violations.iter().any(|v| v.entry() == a.name));
        }
    }
    AuditReport {
        entries: audits,
        violations,
    }
}

fn audit_entry(
    entry: &PtxEntry,
    descriptor: Option<&KernelDescriptor>,
    violations: &mut Vec<Violation>,
) -> EntryAudit {
    let kind = match descriptor.map(|d| d.kind) {
        Some(KernelKind::Optimizer) => EntryKind::Optimizer,
        Some(KernelKind::Other) => EntryKind::Other,
        None => EntryKind::Undeclared,
    };
    let params: Vec<ParamAudit> = entry
        .params
        .iter()
        .enumerate()
        .map(|(index, p)| ParamAudit {
            index,
            ptx_name: p.name.clone(),
            ptx_type: p.ty.clone(),
            declared: descriptor.and_then(|d| d.params.get(index).copied()),
        })
        .collect();
    let mut audit = EntryAudit {
        name: entry.name.clone(),
        kind,
        line: entry.line,
        params,
        clamp: None,
        clamp_verified: None,
    };
    let Some(descriptor) = descriptor else {
        violations.push(Violation::UndeclaredEntry {
            entry: entry.name.clone(),
            line: entry.line,
        });
        return audit;
    };

    if descriptor.params.len() != entry.params.len() {
        violations.push(Violation::ParamCount {
            entry: entry.name.clone(),
            declared: descriptor.params.len(),
            ptx: entry.params.len(),
        });
    }
    for p in &audit.params {
        if let Some(declared) = p.declared {
            if declared.ty.ptx() != p.ptx_type {
                violations.push(Violation::ParamType {
                    entry: entry.name.clone(),
                    index: p.index,
                    name: declared.name.to_string(),
                    expected: declared.ty.ptx().to_string(),
                    ptx: p.ptx_type.clone(),
                });
            }
        }
    }

    if kind == EntryKind::Optimizer {
        audit.clamp = Some(audit_optimizer(entry, descriptor, violations));
    }
    audit
}

fn audit_optimizer(
    entry: &PtxEntry,
    descriptor: &KernelDescriptor,
    violations: &mut Vec<Violation>,
) -> ClampAudit {
    let name = &entry.name;
    let bound_index = descriptor.clamp_bound_index();
    if bound_index != Some(descriptor.params.len().saturating_sub(1))
        || descriptor.params.is_empty()
    {
        violations.push(Violation::BoundNotLast {
            entry: name.clone(),
            bound_index,
            param_count: descriptor.params.len(),
        });
    }
    let param_buffer = descriptor
        .param_buffer_index()
        .filter(|&i| descriptor.params[i].ty == ParamType::Ptr);
    let Some(param_buffer) = param_buffer else {
        violations.push(Violation::NoParamBuffer {
            entry: name.clone(),
        });
        return ClampAudit::default();
    };
    // The analysis works on PTX positions: the bound is where the descriptor says it is, or (when
    // it declares none) the last PTX parameter.
    let bound = bound_index
        .or_else(|| entry.params.len().checked_sub(1))
        .and_then(|i| entry.params.get(i).map(|p| p.name.clone()));

    let instructions = entry.instructions();
    // Multi-tensor entries take their buffers from pointer tables: a pointer loaded from a
    // table belongs to that table's buffers.
    let tables: BTreeSet<usize> = descriptor
        .params
        .iter()
        .enumerate()
        .filter(|(_, p)| {
            matches!(
                p.role,
                ParamRole::ParamTable | ParamRole::InputTable | ParamRole::StateTable
            )
        })
        .map(|(i, _)| i)
        .collect();
    let flow = Dataflow::new(entry, &instructions, tables);
    let mut clamp = ClampAudit::default();
    let mut other_bounds = BTreeSet::new();

    for inst in &instructions {
        if !is_memory_write(inst) {
            continue;
        }
        let Some(address) = inst
            .operands
            .iter()
            .find(|o| matches!(o, Operand::Address { .. }))
        else {
            continue;
        };
        let roots = flow.address_roots(address);
        let values = written_values(inst);
        for v in &values {
            for reg in v.registers() {
                if flow.roots(reg).contains(&Root::Param(param_buffer)) {
                    violations.push(Violation::ParamPointerEscapes {
                        entry: name.clone(),
                        line: inst.line,
                        instruction: inst.text.clone(),
                    });
                }
            }
        }
        if !roots.contains(&Root::Param(param_buffer)) {
            let traced = roots
                .iter()
                .any(|r| matches!(r, Root::Param(_) | Root::Symbol(_)));
            if !traced {
                violations.push(Violation::UntracedStore {
                    entry: name.clone(),
                    line: inst.line,
                    instruction: inst.text.clone(),
                });
            }
            continue;
        }
        if inst.op() != "st" {
            violations.push(Violation::UncheckableWrite {
                entry: name.clone(),
                line: inst.line,
                instruction: inst.text.clone(),
            });
            continue;
        }
        clamp.param_stores += 1;
        let lanes: Vec<&Operand> = values.iter().flat_map(|v| v.elements()).collect();
        let vector = lanes.len() > 1;
        for (lane, value) in lanes.into_iter().enumerate() {
            if matches!(value, Operand::Symbol(s) if s == "_") {
                continue;
            }
            clamp.stored_values += 1;
            let verdict = match value {
                Operand::Register(reg) => flow.clamp_verdict(reg, bound.as_deref()),
                _ => Err((ClampMissing::Bound, None)),
            };
            match verdict {
                Ok(()) => clamp.clamped_values += 1,
                Err((missing, other)) => {
                    if let Some(i) = other {
                        other_bounds.insert(i);
                    }
                    violations.push(Violation::ClampBypassed {
                        entry: name.clone(),
                        line: inst.line,
                        instruction: inst.text.clone(),
                        lane: vector.then_some(lane),
                        value: value.to_string(),
                        missing,
                    });
                }
            }
        }
    }
    for i in other_bounds {
        violations.push(Violation::ClampReadsOtherParam {
            entry: name.clone(),
            param_index: i,
            param_name: entry.params[i].name.clone(),
        });
    }
    if clamp.param_stores == 0 {
        violations.push(Violation::NoParamStore {
            entry: name.clone(),
        });
    }
    clamp
}

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
const FROM_MEMORY: &[&str] = &[
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
fn is_memory_write(inst: &Instruction) -> bool {
    matches!(
        inst.op(),
        "st" | "red" | "atom" | "cp" | "stmatrix" | "multimem"
    )
}

/// The operands a memory write stores (after its address; for `atom`, after the destination
/// and the address).
fn written_values(inst: &Instruction) -> Vec<&Operand> {
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

fn destinations(inst: &Instruction) -> Vec<&str> {
    if NO_DEST.contains(&inst.op()) {
        return Vec::new();
    }
    match inst.operands.first() {
        Some(Operand::Address { .. }) | None => Vec::new(),
        Some(first) => first.registers(),
    }
}

fn sources(inst: &Instruction) -> &[Operand] {
    if NO_DEST.contains(&inst.op()) {
        &inst.operands
    } else {
        inst.operands.get(1..).unwrap_or(&[])
    }
}

/// Where a pointer-like value may come from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Root {
    /// `ld.param` of entry parameter `i`.
    Param(usize),
    /// The address of a named variable (`__local_depot0`, a global).
    Symbol(String),
    /// Read from memory: could be anything.
    Loaded,
}

/// Def-use facts of one entry body.
struct Dataflow<'a> {
    entry: &'a PtxEntry,
    instructions: &'a [Instruction],
    /// Register -> the instructions that define it.
    defs: HashMap<&'a str, Vec<usize>>,
    /// Register -> the roots its value (as a pointer) may derive from.
    provenance: HashMap<&'a str, BTreeSet<Root>>,
    /// Parameters that are tables of buffer pointers: a 64-bit load through one of them yields
    /// a pointer into that table's buffers (`Root::Param(table)`), not an unknown value.
    tables: BTreeSet<usize>,
}

impl<'a> Dataflow<'a> {
    fn new(entry: &'a PtxEntry, instructions: &'a [Instruction], tables: BTreeSet<usize>) -> Self {
        let mut defs: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, inst) in instructions.iter().enumerate() {
            for d in destinations(inst) {
                defs.entry(d).or_default().push(i);
            }
        }
        let mut flow = Dataflow {
            entry,
            instructions,
            defs,
            provenance: HashMap::new(),
            tables,
        };
        flow.compute_provenance();
        flow
    }

    /// The entry parameter an `ld.param` (or any operand naming it) reads, if any.
    fn param_symbol(&self, operand: &Operand) -> Option<usize> {
        operand
            .symbols()
            .into_iter()
            .find_map(|s| self.entry.param_index(s))
    }

    fn is_param_load(inst: &Instruction) -> bool {
        inst.op() == "ld" && inst.has_modifier("param")
    }

    /// Forward fixpoint: each register's roots are the union over all its definitions.
    fn compute_provenance(&mut self) {
        let empty = BTreeSet::new();
        // Sets only grow and are drawn from a finite set of roots, so this terminates; the
        // iteration cap only guards against a bug.
        for _ in 0..10_000 {
            let mut changed = false;
            for inst in self.instructions {
                let dests = destinations(inst);
                if dests.is_empty() {
                    continue;
                }
                let op = inst.op();
                let mut out: BTreeSet<Root> = BTreeSet::new();
                if Self::is_param_load(inst) {
                    match sources(inst).iter().find_map(|o| self.param_symbol(o)) {
                        Some(i) => {
                            out.insert(Root::Param(i));
                        }
                        None => {
                            out.insert(Root::Loaded);
                        }
                    }
                } else if let Some(table) = self.table_load(inst) {
                    out.insert(Root::Param(table));
                } else if FROM_MEMORY.contains(&op) {
                    out.insert(Root::Loaded);
                } else if matches!(op, "setp" | "set" | "testp") {
                    // Predicates and comparison masks carry no pointer.
                } else {
                    let srcs = sources(inst);
                    // `selp a, b, p`: the predicate selects, it is not part of the value.
                    let srcs = if op == "selp" && !srcs.is_empty() {
                        &srcs[..srcs.len() - 1]
                    } else {
                        srcs
                    };
                    for s in srcs {
                        for r in s.registers() {
                            out.extend(self.provenance.get(r).unwrap_or(&empty).iter().cloned());
                        }
                        for sym in s.symbols() {
                            out.insert(Root::Symbol(sym.to_string()));
                        }
                    }
                }
                for d in dests {
                    let set = self.provenance.entry(d).or_default();
                    let before = set.len();
                    set.extend(out.iter().cloned());
                    changed |= set.len() != before;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// The pointer table a 64-bit `ld` reads from, if its address derives from exactly one
    /// table parameter (and nothing else that is a parameter).
    fn table_load(&self, inst: &Instruction) -> Option<usize> {
        let wide = ["b64", "u64", "s64"].iter().any(|m| inst.has_modifier(m));
        if inst.op() != "ld" || inst.has_modifier("param") || !wide || self.tables.is_empty() {
            return None;
        }
        let address = sources(inst)
            .iter()
            .find(|o| matches!(o, Operand::Address { .. }))?;
        let params: Vec<usize> = self
            .address_roots(address)
            .into_iter()
            .filter_map(|r| match r {
                Root::Param(i) => Some(i),
                _ => None,
            })
            .collect();
        match params.as_slice() {
            [table] if self.tables.contains(table) => Some(*table),
            _ => None,
        }
    }

    fn roots(&self, reg: &str) -> BTreeSet<Root> {
        self.provenance.get(reg).cloned().unwrap_or_default()
    }

    fn address_roots(&self, address: &Operand) -> BTreeSet<Root> {
        let Operand::Address { base, .. } = address else {
            return BTreeSet::new();
        };
        match base.as_ref() {
            Operand::Register(r) => self.roots(r),
            Operand::Symbol(s) => match self.entry.param_index(s) {
                Some(i) => BTreeSet::from([Root::Param(i)]),
                None => BTreeSet::from([Root::Symbol(s.clone())]),
            },
            _ => BTreeSet::new(),
        }
    }

    /// The backward slice of `regs`: every instruction whose result the values depend on, in
    /// breadth-first order (nearest first). Loads end the slice (their value comes from memory),
    /// except that `ld.param` is kept as the slice's root.
    fn backward_slice(&self, regs: &[&str]) -> Vec<usize> {
        let mut order = Vec::new();
        let mut seen_insts = HashSet::new();
        let mut seen_regs: HashSet<&str> = HashSet::new();
        let mut queue: VecDeque<&str> = VecDeque::new();
        for &r in regs {
            if seen_regs.insert(r) {
                queue.push_back(r);
            }
        }
        while let Some(reg) = queue.pop_front() {
            let Some(defs) = self.defs.get(reg) else {
                continue;
            };
            for &i in defs {
                if !seen_insts.insert(i) {
                    continue;
                }
                order.push(i);
                let inst = &self.instructions[i];
                let op = inst.op();
                let mut follow: Vec<&str> = Vec::new();
                if Self::is_param_load(inst) {
                    // `ld.param [%rd]` where %rd holds a parameter's address.
                    for s in sources(inst) {
                        follow.extend(s.registers());
                    }
                } else if !FROM_MEMORY.contains(&op) {
                    for s in sources(inst) {
                        follow.extend(s.registers());
                    }
                    if let Some(g) = &inst.guard {
                        follow.push(g);
                    }
                }
                for r in follow {
                    if seen_regs.insert(r) {
                        queue.push_back(r);
                    }
                }
            }
        }
        order
    }

    /// Whether the slice reads entry parameter `name` (by `ld.param` or by naming it).
    fn slice_reads(&self, slice: &[usize], name: &str) -> bool {
        slice.iter().any(|&i| {
            self.instructions[i]
                .operands
                .iter()
                .any(|o| o.symbols().contains(&name))
        })
    }

    /// The entry parameters the slice reads.
    fn slice_params(&self, slice: &[usize]) -> BTreeSet<usize> {
        slice
            .iter()
            .flat_map(|&i| self.instructions[i].operands.iter())
            .filter_map(|o| self.param_symbol(o))
            .collect()
    }

    /// Whether the value in `reg` is clamped to the bound parameter `bound`. On failure, says
    /// what is missing and, when the nearest copysign takes its magnitude from a single other
    /// parameter, which one.
    fn clamp_verdict(
        &self,
        reg: &str,
        bound: Option<&str>,
    ) -> Result<(), (ClampMissing, Option<usize>)> {
        let slice = self.backward_slice(&[reg]);
        let copysigns: Vec<&Instruction> = slice
            .iter()
            .map(|&i| &self.instructions[i])
            .filter(|inst| inst.op() == "copysign")
            .collect();
        // PTX `copysign d, a, b` is `b` with the sign of `a`: the magnitude is the last operand.
        let magnitude_slice = |inst: &Instruction| -> Vec<usize> {
            let regs: Vec<&str> = inst
                .operands
                .last()
                .map(|o| o.registers())
                .unwrap_or_default();
            self.backward_slice(&regs)
        };
        let other = || {
            copysigns.first().and_then(|c| {
                let params = self.slice_params(&magnitude_slice(c));
                let bound_index = bound.and_then(|b| self.entry.param_index(b));
                let mut others = params.into_iter().filter(|&p| Some(p) != bound_index);
                match (others.next(), others.next()) {
                    (Some(p), None) => Some(p),
                    _ => None,
                }
            })
        };
        let Some(bound) = bound else {
            return Err((ClampMissing::Bound, other()));
        };
        if !self.slice_reads(&slice, bound) {
            return Err((ClampMissing::Bound, other()));
        }
        if copysigns.is_empty() {
            return Err((ClampMissing::Copysign, None));
        }
        if copysigns
            .iter()
            .any(|c| self.slice_reads(&magnitude_slice(c), bound))
        {
            Ok(())
        } else {
            Err((ClampMissing::CopysignOfBound, other()))
        }
    }
}
