//! The slice of a stored value: the instructions between the bound, the one value `x` they
//! clamp, and the stored register.
use std::collections::{HashMap, HashSet};

use super::{ClampFailure, ClampProver, Unprovable};
use crate::audit::eval;
use crate::audit::located::At;
use crate::audit::opcodes::sources;
use crate::ptx::Operand;

/// The instructions between `x`, the bound and the stored value, ready to evaluate.
pub(super) struct Slice<'a> {
    /// Register -> its one definition.
    pub(super) defs: HashMap<&'a str, usize>,
    /// The registers holding the bound (`ld.param` of the bound parameter).
    pub(super) bound_regs: HashSet<&'a str>,
    /// The registers holding a tensor's scale, with the instruction that loads each.
    pub(super) scale_regs: HashMap<&'a str, usize>,
    pub(super) x: Option<&'a str>,
    /// A stochastic store's random word: the one input besides `x` and the bound, taken as
    /// free (every value of its width, `word_bits`), whatever computed it.
    pub(super) word: Option<&'a str>,
    /// How many low bits of the word can be set (`word.rs`).
    pub(super) word_bits: u32,
}

impl<'a> ClampProver<'a> {
    /// The registers an evaluable definition reads, or why it is not evaluable.
    fn operands_of(&self, i: usize) -> Result<Vec<&'a str>, Unprovable> {
        let inst = &self.instructions[i];
        if !eval::plain_operands(inst) {
            return Err(Unprovable::PredicateForm { at: At::of(inst) });
        }
        let srcs = sources(inst);
        if let Some(bad) = srcs.iter().find(|o| !eval::is_value(o)) {
            let (at, operand) = (At::of(inst), bad.to_string());
            return Err(Unprovable::NotAValue { at, operand });
        }
        Ok(srcs
            .iter()
            .filter_map(|o| match o {
                Operand::Register(r) => Some(r.as_str()),
                _ => None,
            })
            .collect())
    }

    /// Builds the slice of `value`: the bound-dependent instructions feeding it, their other
    /// inputs reduced to a single `x`.
    pub(super) fn slice(&self, value: &'a str) -> Result<Slice<'a>, ClampFailure> {
        let unprovable = |reason: Unprovable| ClampFailure::Unprovable { reason };
        let undefined = |e| unprovable(Unprovable::Definition(e));
        let mut slice = Slice {
            defs: HashMap::new(),
            bound_regs: HashSet::new(),
            scale_regs: HashMap::new(),
            x: None,
            word: None,
            word_bits: 0,
        };
        let mut frontier: Vec<&'a str> = Vec::new();
        let mut stack = vec![value];
        let mut seen = HashSet::new();
        while let Some(reg) = stack.pop() {
            if !seen.insert(reg) {
                continue;
            }
            let i = self.flow.single_def(reg).map_err(undefined)?;
            let inst = &self.instructions[i];
            if self.flow.bound_register(inst) == Some(reg) {
                if !(inst.has_modifier("f32") || inst.has_modifier("b32")) {
                    let at = At::of(inst);
                    return Err(unprovable(Unprovable::BoundNotF32 { at }));
                }
                slice.bound_regs.insert(reg);
                continue;
            }
            if self.flow.scale_register(inst) == Some(reg) {
                slice.scale_regs.insert(reg, i);
                continue;
            }
            let srcs = self.operands_of(i).map_err(unprovable)?;
            slice.defs.insert(reg, i);
            for s in srcs {
                if self.flow.depends_on_bound(s) {
                    stack.push(s);
                } else if !frontier.contains(&s) {
                    frontier.push(s);
                }
            }
        }
        if slice.bound_regs.is_empty() {
            return Err(unprovable(Unprovable::BoundNotRead));
        }
        if frontier.is_empty() {
            return Err(unprovable(Unprovable::BoundOnly));
        }
        // The clamped value: one frontier register from which every other one is computed; for a
        // stochastic store, every other but those computed from one more, the random word.
        let mut memo = HashMap::new();
        let inputs = self.inputs(&frontier, &mut memo);
        let Some((x, word)) = inputs else {
            let registers = frontier.iter().map(|r| r.to_string()).collect();
            return Err(unprovable(Unprovable::SeveralInputs { registers }));
        };
        slice.x = Some(x);
        slice.word = word;
        slice.word_bits = word.map_or(0, |w| self.word_bits(w));
        let mut stack = frontier;
        while let Some(reg) = stack.pop() {
            if reg == x || Some(reg) == word || slice.defs.contains_key(reg) {
                continue;
            }
            let i = self.flow.single_def(reg).map_err(undefined)?;
            slice.defs.insert(reg, i);
            stack.extend(self.operands_of(i).map_err(unprovable)?);
        }
        Ok(slice)
    }

    /// The clamped value `x` among the frontier registers, and a stochastic store's random word:
    /// every frontier register is computed from `x`, or (stochastic stores only) from the word.
    fn inputs(
        &self,
        frontier: &[&'a str],
        memo: &mut HashMap<(&'a str, &'a str), bool>,
    ) -> Option<(&'a str, Option<&'a str>)> {
        let stochastic = self.rounding == adamant_abi::Rounding::Stochastic;
        for &x in frontier {
            let rest: Vec<&'a str> = frontier
                .iter()
                .copied()
                .filter(|&f| !self.pure_from(f, x, memo, 0))
                .collect();
            if rest.is_empty() {
                return Some((x, None));
            }
            if !stochastic {
                continue;
            }
            let word = rest
                .iter()
                .copied()
                .find(|&w| rest.iter().all(|&f| self.pure_from(f, w, memo, 0)));
            if let Some(word) = word {
                return Some((x, Some(word)));
            }
        }
        None
    }

    /// Whether `reg` is `x` or computed from `x` and immediates alone, by unguarded single
    /// definitions that the interpreter knows (memoized: the walk may cross the update's DAG).
    fn pure_from(
        &self,
        reg: &'a str,
        x: &'a str,
        memo: &mut HashMap<(&'a str, &'a str), bool>,
        depth: usize,
    ) -> bool {
        if reg == x {
            return true;
        }
        if depth > 64 {
            return false;
        }
        if let Some(&known) = memo.get(&(reg, x)) {
            return known;
        }
        let result = match self.flow.single_def(reg) {
            Ok(i) => {
                let inst = &self.instructions[i];
                let computes = matches!(
                    crate::audit::opcodes::class(inst),
                    crate::audit::opcodes::Class::Compute | crate::audit::opcodes::Class::Compare
                );
                computes
                    && self.operands_of(i).is_ok_and(|srcs| {
                        srcs.into_iter()
                            .all(|s| self.pure_from(s, x, memo, depth + 1))
                    })
            }
            Err(_) => false,
        };
        memo.insert((reg, x), result);
        result
    }
}
