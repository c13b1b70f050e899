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

    /// The clamped value `x` and a stochastic store's random word: every frontier register is
    /// computed from `x`, or (stochastic stores only) from the word. `x` is a frontier register
    /// where the bound meets the value itself (an f32 clamp); where the value is taken apart
    /// first (a 16-bit store rounds `|x|` and limits the rounded magnitude, with `x`'s sign and
    /// NaN test beside it), it is the nearest register of the frontier's ancestry from which,
    /// with the word, every frontier register is computed. Taking `x` further up only moves
    /// more of the computation into the program the proof runs.
    fn inputs(
        &self,
        frontier: &[&'a str],
        memo: &mut Memo<'a>,
    ) -> Option<(&'a str, Option<&'a str>)> {
        let stochastic = self.rounding == adamant_abi::Rounding::Stochastic;
        for &x in frontier {
            let rest: Vec<&'a str> = frontier
                .iter()
                .copied()
                .filter(|&f| !self.pure_from(f, (x, None), memo, 0))
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
                .find(|&w| rest.iter().all(|&f| self.pure_from(f, (w, None), memo, 0)));
            if let Some(word) = word {
                return Some((x, Some(word)));
            }
        }
        let ancestry = self.ancestry(frontier);
        // The clamp's contract is over an f32 value: `x` is one (a 16-bit piece of a rounded
        // sum is no candidate).
        let values = ancestry.iter().copied().filter(|&r| {
            self.flow
                .single_def(r)
                .is_ok_and(|i| self.instructions[i].has_modifier("f32"))
        });
        for x in values {
            if frontier
                .iter()
                .all(|&f| self.pure_from(f, (x, None), memo, 0))
            {
                return Some((x, None));
            }
            if !stochastic {
                continue;
            }
            // The word is an input of its own: not computed from `x` in any part, nor `x`
            // from it (a register that carries `x` taken as free would run the program on
            // pairs no input gives).
            let word = ancestry.iter().copied().find(|&w| {
                w != x
                    && !self.reads(w, x, &mut HashSet::new(), 0)
                    && !self.reads(x, w, &mut HashSet::new(), 0)
                    && frontier
                        .iter()
                        .all(|&f| self.pure_from(f, (x, Some(w)), memo, 0))
            });
            if let Some(word) = word {
                return Some((x, Some(word)));
            }
        }
        None
    }

    /// The registers the frontier is computed from, nearest first (breadth first through
    /// unguarded single definitions that the interpreter knows), at most [`ANCESTRY`].
    fn ancestry(&self, frontier: &[&'a str]) -> Vec<&'a str> {
        let mut out: Vec<&'a str> = Vec::new();
        let mut queue: std::collections::VecDeque<&'a str> = frontier.iter().copied().collect();
        while let Some(reg) = queue.pop_front() {
            if out.len() >= ANCESTRY {
                break;
            }
            let Ok(i) = self.flow.single_def(reg) else {
                continue;
            };
            if !self.computes(i) {
                continue;
            }
            for s in self.operands_of(i).unwrap_or_default() {
                if !out.contains(&s) {
                    out.push(s);
                    queue.push_back(s);
                }
            }
        }
        out.truncate(ANCESTRY);
        out
    }

    /// Whether `reg` is computed, in any part, from `other` (any definition on the way;
    /// memoized in `seen`, the registers already known not to read it).
    fn reads(
        &self,
        reg: &'a str,
        other: &'a str,
        seen: &mut HashSet<&'a str>,
        depth: usize,
    ) -> bool {
        if reg == other {
            return true;
        }
        if depth > 64 {
            // Too deep to tell: taken as reading it, which only refuses a candidate.
            return true;
        }
        if seen.contains(reg) {
            return false;
        }
        let Ok(i) = self.flow.single_def(reg) else {
            return false;
        };
        let found = sources(&self.instructions[i]).iter().any(|o| match o {
            Operand::Register(r) => self.reads(r, other, seen, depth + 1),
            _ => false,
        });
        if !found {
            seen.insert(reg);
        }
        found
    }

    /// Whether instruction `i` computes or compares (what the interpreter runs).
    fn computes(&self, i: usize) -> bool {
        matches!(
            crate::audit::opcodes::class(&self.instructions[i]),
            crate::audit::opcodes::Class::Compute | crate::audit::opcodes::Class::Compare
        )
    }

    /// Whether `reg` is one of `roots` or computed from them and immediates alone, by unguarded
    /// single definitions that the interpreter knows (memoized: the walk may cross the
    /// update's DAG).
    fn pure_from(
        &self,
        reg: &'a str,
        roots: (&'a str, Option<&'a str>),
        memo: &mut Memo<'a>,
        depth: usize,
    ) -> bool {
        if reg == roots.0 || Some(reg) == roots.1 {
            return true;
        }
        if depth > 64 {
            return false;
        }
        if let Some(&known) = memo.get(&(reg, roots)) {
            return known;
        }
        let result = match self.flow.single_def(reg) {
            Ok(i) => {
                self.computes(i)
                    && self.operands_of(i).is_ok_and(|srcs| {
                        srcs.into_iter()
                            .all(|s| self.pure_from(s, roots, memo, depth + 1))
                    })
            }
            Err(_) => false,
        };
        memo.insert((reg, roots), result);
        result
    }
}

/// [`ClampProver::pure_from`]'s answers, by register and roots.
type Memo<'a> = HashMap<(&'a str, (&'a str, Option<&'a str>)), bool>;

/// How many of the frontier's ancestors [`ClampProver::inputs`] tries as `x` and as the word:
/// a store's rounding and limit sit a few instructions below the value they take apart.
const ANCESTRY: usize = 48;
