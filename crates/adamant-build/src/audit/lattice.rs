//! The one register-state lattice of an entry body and its one fixpoint: every pass of the audit
//! reads "where does this register's value come from" here.
//!
//! For every register the audit keeps one [`Value`]: the pointers it may derive from (what a
//! write is attributed to, `provenance.rs`) and the clamp inputs it is computed from (what a
//! stored value is proven clamped with, `clamp/origin.rs`). Both are sets joined by union over
//! every definition of the register (flow-insensitive: loop variables and values merged after
//! branches get what any of their definitions gives), so one iteration to a fixpoint computes
//! both, and an over-approximation never hides a source.
use std::collections::BTreeSet;

use super::opcodes::destinations;
use super::provenance::{Provenance, Roots};

/// A clamp input a value may be computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum ClampInput {
    /// The bound's load (`clamp/origin.rs` says which load that is).
    Bound,
    /// The load at instruction index `i`, which reads through the per-tensor scales pointer. It
    /// is a tensor's scale only if, with the final pointer roots, its address derives from that
    /// pointer alone: roots only grow during the fixpoint, so the load is recorded as a
    /// candidate and judged once they are final ([`Provenance::scale_register`]).
    ScaleLoad(usize),
}

/// What the audit knows of one register's value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Value {
    /// Where a pointer-like value may come from.
    pub(super) roots: Roots,
    /// The clamp inputs it is computed from, through any instruction (a predicate included:
    /// `selp` on a comparison with the bound depends on the bound).
    pub(super) clamp_inputs: BTreeSet<ClampInput>,
}

impl Value {
    /// Joins `other` into `self`; whether `self` grew.
    fn join(&mut self, other: &Value) -> bool {
        let before = (self.roots.len(), self.clamp_inputs.len());
        self.roots.extend(other.roots.iter().cloned());
        self.clamp_inputs.extend(other.clamp_inputs.iter().copied());
        before != (self.roots.len(), self.clamp_inputs.len())
    }
}

impl Provenance<'_> {
    /// Applies every definition until no register's value grows. Sets only grow and are drawn
    /// from finite sets (roots, the bound, the loads), so this terminates; the iteration cap
    /// only guards against a bug.
    pub(super) fn fixpoint(&mut self) {
        let instructions = self.instructions;
        for _ in 0..10_000 {
            let mut changed = false;
            for (i, inst) in instructions.iter().enumerate() {
                let dests = destinations(inst);
                if dests.is_empty() {
                    continue;
                }
                let roots = self.defined_roots(inst);
                let inputs = self.defined_clamp_inputs(i, inst, &dests);
                for (d, clamp_inputs) in dests.into_iter().zip(inputs) {
                    let value = Value {
                        roots: roots.clone(),
                        clamp_inputs,
                    };
                    changed |= self.values.entry(d).or_default().join(&value);
                }
            }
            if !changed {
                return;
            }
        }
        panic!(
            "the register lattice did not converge in {}",
            self.entry.name
        );
    }
}
