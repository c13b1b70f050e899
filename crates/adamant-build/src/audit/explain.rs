//! The explanation mode (`adamant audit --explain ENTRY`): for every value an entry stores to
//! its parameter buffer, the reasoning the audit did, step by step: the store, the chain of
//! definitions the value comes from back to the bound's origin, the one value `x` it clamps,
//! the tensor's scale in a multi-tensor entry, and the verdict. The verdicts are the write
//! audit's own (`writes.rs` records them while it audits), so an explanation cannot disagree
//! with the audit.
use std::collections::HashMap;
use std::fmt;

use adamant_abi::KernelDescriptor;

use super::clamp::{Link, LinkRole};
use super::located::At;
use super::writes::{audit_writes, WriteContext};
use super::{private_symbols, ClampFailure, Violation};
use crate::ptx;

/// Why a value stored to the parameter buffer is (or is not) proven clamped.
#[derive(Clone, Debug, PartialEq)]
pub struct StoreExplanation {
    /// The store.
    pub store: At,
    /// The element of a vector store, if it is one.
    pub lane: Option<usize>,
    /// The stored operand.
    pub value: String,
    /// The parameter the store writes through (a buffer, or a fused entry's table of one
    /// storage), and the storage and rounding its value is proven in.
    pub buffer: String,
    pub storage: adamant_abi::Storage,
    pub rounding: adamant_abi::Rounding,
    /// The definitions from the stored register back to the bound's load (and, in a stepped
    /// entry, to the step record's parameter); empty if the value does not depend on the bound.
    pub chain: Vec<Link>,
    /// The one value `x` the clamp clamps, where the prover found one.
    pub clamped: Option<Link>,
    /// The scale loads the value is clamped with (a multi-tensor entry).
    pub scales: Vec<Link>,
    /// The number of cases evaluated, or why the value is not proven clamped.
    pub verdict: Result<usize, ClampFailure>,
}

/// The explanation of one entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Explanation {
    pub entry: String,
    /// The line of its `.entry`.
    pub line: usize,
    /// Whether a descriptor declares it (an undeclared entry is not audited further).
    pub declared: bool,
    /// Every value stored to a parameter buffer, in PTX order.
    pub stores: Vec<StoreExplanation>,
    /// Everything the audit finds wrong with this entry (stores included).
    pub violations: Vec<Violation>,
}

/// `--explain` named an entry the PTX does not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownEntry {
    pub entry: String,
    /// The entries the PTX has.
    pub entries: Vec<String>,
}

impl fmt::Display for UnknownEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the PTX has no entry `{}`; its entries are: {}",
            self.entry,
            self.entries.join(", ")
        )
    }
}

impl std::error::Error for UnknownEntry {}

/// Explains the audit of entry `name` of `ptx` against `kernels`.
pub fn explain(
    ptx: &str,
    kernels: &[&KernelDescriptor],
    name: &str,
) -> Result<Explanation, UnknownEntry> {
    let entries = ptx::entries(ptx);
    let Some(entry) = entries.iter().find(|e| e.name == name) else {
        return Err(UnknownEntry {
            entry: name.to_string(),
            entries: entries.iter().map(|e| e.name.clone()).collect(),
        });
    };
    let violations = super::audit(ptx, kernels)
        .violations_of(name)
        .cloned()
        .collect();
    let descriptors: HashMap<&str, &KernelDescriptor> =
        kernels.iter().map(|k| (k.name, *k)).collect();
    let mut explanation = Explanation {
        entry: entry.name.clone(),
        line: entry.line,
        declared: descriptors.contains_key(name),
        stores: Vec::new(),
        violations,
    };
    if let Some(descriptor) = descriptors.get(name) {
        let private = private_symbols(&ptx::variables(ptx), entry);
        let cx = WriteContext {
            entry,
            descriptor,
            private_symbols: &private,
        };
        audit_writes(&cx, &mut Vec::new(), Some(&mut explanation.stores));
    }
    Ok(explanation)
}

fn role(role: LinkRole) -> &'static str {
    match role {
        LinkRole::Computes => "",
        LinkRole::BoundLoad => "  <- the bound",
        LinkRole::RecordPointer => "  <- the step record's pointer",
        LinkRole::RecordParameter => "  <- the step record's pointer, the last parameter",
        LinkRole::ScaleLoad => "  <- the tensor's scale",
        LinkRole::ClampedValue => "  <- x, the value clamped",
    }
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} (line {})", self.entry, self.line)?;
        if !self.declared {
            writeln!(f, "  not declared by any descriptor: not audited further")?;
        }
        for (k, s) in self.stores.iter().enumerate() {
            write!(
                f,
                "store {}: line {} `{}`",
                k + 1,
                s.store.line,
                s.store.instruction
            )?;
            if let Some(lane) = s.lane {
                write!(f, " element {lane}")?;
            }
            let rounding = match s.storage {
                adamant_abi::Storage::F32 => String::new(),
                _ => format!(", {}", s.rounding.name()),
            };
            writeln!(
                f,
                " stores {} to `{}` ({}{rounding})",
                s.value,
                s.buffer,
                s.storage.name()
            )?;
            if s.chain.is_empty() {
                writeln!(f, "  {} is not computed from the bound", s.value)?;
            }
            for link in s.chain.iter().chain(&s.scales).chain(&s.clamped) {
                writeln!(
                    f,
                    "  {} <- line {} `{}`{}",
                    link.register,
                    link.at.line,
                    link.at.instruction,
                    role(link.role)
                )?;
            }
            match &s.verdict {
                Ok(cases) => writeln!(f, "  verdict: proven clamped ({cases} cases evaluated)")?,
                Err(failure) => writeln!(f, "  verdict: NOT proven: {failure}")?,
            }
        }
        if self.declared && self.stores.is_empty() {
            writeln!(f, "  no store to a parameter buffer")?;
        }
        match self.violations.as_slice() {
            [] => writeln!(f, "entry: no violation"),
            all => {
                writeln!(f, "entry: {} violation(s):", all.len())?;
                for v in all {
                    writeln!(f, "  - {v}")?;
                }
                Ok(())
            }
        }
    }
}
