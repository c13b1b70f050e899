//! The chain a stored value comes from, back to the bound's origin, for the explanation mode:
//! the shortest path of definitions through registers that depend on the bound (the lattice's
//! clamp inputs) from the stored register to the bound's load, then, for a stepped entry, the
//! step record's pointer back to its parameter.
use std::collections::{HashMap, VecDeque};

use crate::audit::located::At;
use crate::audit::opcodes::{address, sources};
use crate::audit::provenance::Provenance;
use crate::ptx::Operand;

/// What one instruction of a chain does for the clamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkRole {
    /// Computes the register from the one before it in the chain (among other operands).
    Computes,
    /// Loads the bound: the last parameter, or the bound's field of the step record.
    BoundLoad,
    /// Computes the step record's pointer from the last parameter (a stepped entry).
    RecordPointer,
    /// Loads the step record's pointer: the last parameter (a stepped entry).
    RecordParameter,
    /// Loads a tensor's scale from `weight_clamp_scales` (a multi-tensor entry).
    ScaleLoad,
    /// Defines the one value `x` that the clamp clamps.
    ClampedValue,
}

/// One instruction of a chain: the register it defines, and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    pub register: String,
    pub at: At,
    pub role: LinkRole,
}

impl<'a> Provenance<'a> {
    /// The definitions from `value` back to the bound's load (empty if `value` is not computed
    /// from the bound), followed by the step record's pointer for a stepped entry.
    pub(in crate::audit) fn bound_chain(&self, value: &'a str) -> Vec<Link> {
        // Breadth first over every definition of every bound-dependent register, so a chain is
        // shown even where the prover refuses a register with several definitions.
        let mut parent: HashMap<&'a str, (usize, Option<&'a str>)> = HashMap::new();
        let mut queue = VecDeque::from([(value, None::<&'a str>)]);
        let mut bound = None;
        while let Some((reg, from)) = queue.pop_front() {
            if parent.contains_key(reg) || !self.depends_on_bound(reg) {
                continue;
            }
            let defs = self.defs.get(reg).map(Vec::as_slice).unwrap_or_default();
            for &i in defs {
                let inst = &self.instructions[i];
                parent.entry(reg).or_insert((i, from));
                if self.bound_register(inst) == Some(reg) {
                    parent.insert(reg, (i, from));
                    bound = Some(reg);
                    break;
                }
                for s in sources(inst) {
                    for r in s.registers() {
                        queue.push_back((r, Some(reg)));
                    }
                }
            }
            if bound.is_some() {
                break;
            }
        }
        let Some(mut reg) = bound else {
            return Vec::new();
        };
        // Walk back from the bound to the stored value, then reverse.
        let mut links = Vec::new();
        loop {
            let (i, from) = parent[reg];
            let role = match links.is_empty() {
                true => LinkRole::BoundLoad,
                false => LinkRole::Computes,
            };
            links.push(self.link(reg, i, role));
            match from {
                Some(next) => reg = next,
                None => break,
            }
        }
        links.reverse();
        let load = &self.instructions[parent[bound.unwrap_or(value)].0];
        links.extend(self.record_pointer(load));
        links
    }

    /// A link for the definition `i` of `reg`.
    pub(in crate::audit) fn link(&self, reg: &str, i: usize, role: LinkRole) -> Link {
        Link {
            register: reg.to_string(),
            at: At::of(&self.instructions[i]),
            role,
        }
    }

    /// A stepped entry's bound load reads through a pointer computed from the last parameter by
    /// `cvta`, `mov` and constant additions: those definitions, down to the `ld.param`.
    fn record_pointer(&self, load: &'a crate::ptx::Instruction) -> Vec<Link> {
        let mut links = Vec::new();
        if Provenance::is_param_load(load) {
            return links;
        }
        let Some(Operand::Address { base, .. }) = address(load) else {
            return links;
        };
        let Operand::Register(first) = base.as_ref() else {
            return links;
        };
        let mut reg: &str = first;
        for _ in 0..16 {
            let Ok(i) = self.single_def(reg) else {
                break;
            };
            let inst = &self.instructions[i];
            if Provenance::is_param_load(inst) {
                links.push(self.link(reg, i, LinkRole::RecordParameter));
                break;
            }
            links.push(self.link(reg, i, LinkRole::RecordPointer));
            let next = sources(inst).iter().find_map(|s| match s {
                Operand::Register(r) => Some(r.as_str()),
                _ => None,
            });
            match next {
                Some(r) => reg = r,
                None => break,
            }
        }
        links
    }
}

impl<'a> super::ClampProver<'a> {
    /// The one value `x` the slice of `value` clamps and the scale loads it uses, as links
    /// (none where the slice cannot be built: the verdict says why).
    pub(in crate::audit) fn slice_inputs(&self, value: &'a str) -> (Option<Link>, Vec<Link>) {
        let Ok(slice) = self.slice(value) else {
            return (None, Vec::new());
        };
        let clamped = slice.x.and_then(|x| {
            let i = self.flow.single_def(x).ok()?;
            Some(self.flow.link(x, i, LinkRole::ClampedValue))
        });
        let mut scales: Vec<Link> = slice
            .scale_regs
            .iter()
            .map(|(reg, &i)| self.flow.link(reg, i, LinkRole::ScaleLoad))
            .collect();
        scales.sort_by_key(|l| l.at.line);
        (clamped, scales)
    }
}
