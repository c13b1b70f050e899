//! The def-use analysis of one entry body: where each register's value may come from as a
//! pointer, and the backward slices that show a stored value is clamped.
use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use super::opcodes::{destinations, sources, FROM_MEMORY};
use super::ClampMissing;
use crate::ptx::{Instruction, Operand, PtxEntry};

/// Where a pointer-like value may come from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Root {
    /// `ld.param` of entry parameter `i`.
    Param(usize),
    /// The address of a named variable (`__local_depot0`, a global).
    Symbol(String),
    /// Read from memory: could be anything.
    Loaded,
}

/// Def-use facts of one entry body.
pub(super) struct Dataflow<'a> {
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
    pub(super) fn new(
        entry: &'a PtxEntry,
        instructions: &'a [Instruction],
        tables: BTreeSet<usize>,
    ) -> Self {
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

    pub(super) fn roots(&self, reg: &str) -> BTreeSet<Root> {
        self.provenance.get(reg).cloned().unwrap_or_default()
    }

    pub(super) fn address_roots(&self, address: &Operand) -> BTreeSet<Root> {
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
    pub(super) fn clamp_verdict(
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
