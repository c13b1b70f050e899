//! What the audit reports: each entry's parameters and clamp findings, and the whole module's
//! table of entries with its violations.
use std::fmt;

use adamant_abi::{KernelParam, ParamRole, ParamType};

use super::Violation;

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

/// What the clamp proof found in an optimizer entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClampAudit {
    /// Stores attributed to a parameter buffer (or a pointer from the parameter table).
    pub param_stores: usize,
    /// Values those stores write (4 for a `.v4` store).
    pub stored_values: usize,
    /// Of those, values proven to be the clamp of one value with the bound, on every case.
    pub clamped_values: usize,
    /// `(x, bound)` cases evaluated over all proven values.
    pub cases_evaluated: usize,
}

/// Where an entry's writes go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteAudit {
    /// Writes to global or generic memory attributed to one writable pointer parameter.
    pub attributed_writes: usize,
    /// Writes to `.shared` or `.local` memory.
    pub private_writes: usize,
    /// Per written pointer parameter (name), how many write instructions go through it.
    pub per_param: Vec<(String, usize)>,
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
    /// Every entry: where its writes go (None for an undeclared entry).
    pub writes: Option<WriteAudit>,
    /// Optimizer entries only.
    pub clamp: Option<ClampAudit>,
    /// Optimizer entries only: every parameter-buffer store is clamped and the entry has no
    /// violation at all.
    pub clamp_verified: Option<bool>,
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
        let rows: Vec<[String; 6]> = self
            .entries
            .iter()
            .map(|e| {
                let stores = match e.clamp {
                    Some(c) => format!("{} ({} values)", c.param_stores, c.stored_values),
                    None => "-".to_string(),
                };
                let writes = match &e.writes {
                    Some(w) if w.per_param.is_empty() => format!("{} private", w.private_writes),
                    Some(w) => w
                        .per_param
                        .iter()
                        .map(|(p, n)| format!("{p}:{n}"))
                        .collect::<Vec<_>>()
                        .join(" "),
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
                    writes,
                    stores,
                    clamp.to_string(),
                ]
            })
            .collect();
        let header = ["entry", "kind", "params", "writes", "param stores", "clamp"];
        let mut widths = header.map(str::len);
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.len());
            }
        }
        let line = |f: &mut fmt::Formatter<'_>, cells: [&str; 6]| -> fmt::Result {
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
