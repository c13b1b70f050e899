//! The fused entry's tables (`fused_optimizer!`): one launch updates every tensor of a set, each
//! tensor with its own rule (one of the set's optimizer kernels) and its own step record.
//!
//! A fused entry takes one pointer table per *slot*, not per buffer of one kernel, since its rules
//! have different buffers: the parameter table, [`MAX_FUSED_INPUTS`] input tables,
//! [`MAX_FUSED_STATES`] state tables and [`MAX_FUSED_UNIFORMS`] tables of `#[uniform_ptr]`s.
//! A rule reads its `k`-th `#[input]` from input table `k`, its `k`-th `#[state]` from state table
//! `k` and its `k`-th `#[uniform_ptr]` from uniform table `k`, in declared order
//! ([`fused_slots`]). The macro that generates each rule's fused sweep and the runtime that fills
//! the tables both follow that order; a slot no rule of a set uses is passed as a null table and
//! never read. Keeping one slot per role (never an input in one rule's state slot) is what lets
//! the audit and the runtime judge a table by its role alone.
//!
//! Fixed parameter order (the descriptor `fused_optimizer!` registers): `param`, `input0..`,
//! `state0..`, `uniform0..`, `chunks`, `n_chunks`, `weight_clamp_scales`, `rules`, `records`,
//! `step_states` (last).

/// Input tables of a fused entry: a rule with more `#[input]`s cannot join a fused set.
pub const MAX_FUSED_INPUTS: usize = 2;
/// State tables of a fused entry.
pub const MAX_FUSED_STATES: usize = 4;
/// `#[uniform_ptr]` tables of a fused entry.
pub const MAX_FUSED_UNIFORMS: usize = 2;
/// The most rules one fused set may name (the rule table holds a branch index).
pub const MAX_FUSED_RULES: usize = 32;

/// The names of the fused entry's parameters, in PTX order (the codegen and the runtime's tests
/// check theirs against it).
pub const FUSED_PARAM_NAMES: [&str; 15] = [
    "param",
    "input0",
    "input1",
    "state0",
    "state1",
    "state2",
    "state3",
    "uniform0",
    "uniform1",
    "chunks",
    "n_chunks",
    "weight_clamp_scales",
    "rules",
    "records",
    "step_states",
];
const _: () = assert!(
    FUSED_PARAM_NAMES.len() == 1 + MAX_FUSED_INPUTS + MAX_FUSED_STATES + MAX_FUSED_UNIFORMS + 6
);

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use super::{MAX_FUSED_INPUTS, MAX_FUSED_STATES, MAX_FUSED_UNIFORMS};
    use crate::{GeneratedEntry, KernelDescriptor, ParamRole};

    /// Which table of a fused entry one buffer (or `#[uniform_ptr]`) of a rule is read from.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum FusedSlot {
        Param,
        Input(usize),
        State(usize),
        Uniform(usize),
    }

    impl FusedSlot {
        /// The slot's parameter index in the fused entry.
        pub fn param_index(self) -> usize {
            match self {
                FusedSlot::Param => 0,
                FusedSlot::Input(k) => 1 + k,
                FusedSlot::State(k) => 1 + MAX_FUSED_INPUTS + k,
                FusedSlot::Uniform(k) => 1 + MAX_FUSED_INPUTS + MAX_FUSED_STATES + k,
            }
        }
    }

    /// Why a kernel cannot be a rule of a fused set.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct TooManySlots {
        pub kernel: &'static str,
        pub role: &'static str,
        pub count: usize,
        pub limit: usize,
    }

    /// The slot of every buffer and `#[uniform_ptr]` parameter of `rule` (a stepped
    /// single-tensor descriptor: its buffers, then its uniform pointers), as
    /// `(parameter index in rule, slot)`, in the rule's parameter order: the `k`-th of each role
    /// takes that role's table `k`.
    pub fn fused_slots(rule: &KernelDescriptor) -> Result<Vec<(usize, FusedSlot)>, TooManySlots> {
        let (mut inputs, mut states, mut uniforms) = (0, 0, 0);
        let mut out = Vec::new();
        for (i, p) in rule.params.iter().enumerate() {
            let (slot, count, limit, role) = match p.role {
                ParamRole::ParamBuffer => (FusedSlot::Param, 0, 1, "#[param]"),
                ParamRole::Input => (
                    FusedSlot::Input(inputs),
                    next(&mut inputs),
                    MAX_FUSED_INPUTS,
                    "#[input]",
                ),
                ParamRole::State => (
                    FusedSlot::State(states),
                    next(&mut states),
                    MAX_FUSED_STATES,
                    "#[state]",
                ),
                ParamRole::UniformPtr { .. } => (
                    FusedSlot::Uniform(uniforms),
                    next(&mut uniforms),
                    MAX_FUSED_UNIFORMS,
                    "#[uniform_ptr]",
                ),
                _ => continue,
            };
            if count >= limit {
                return Err(TooManySlots {
                    kernel: rule.name,
                    role,
                    count: count + 1,
                    limit,
                });
            }
            out.push((i, slot));
        }
        Ok(out)
    }

    fn next(counter: &mut usize) -> usize {
        let k = *counter;
        *counter += 1;
        k
    }

    /// Implemented by `fused_optimizer!` for each fused entry (as `<set>::Entry`): the entry's
    /// descriptor and its rules, from which the runtime builds a fused launch.
    pub trait FusedEntry: GeneratedEntry {
        /// The fused entry.
        const DESCRIPTOR: &'static KernelDescriptor;
        /// Each rule's stepped single-tensor entry (`<kernel>_stepped`), in branch order: a
        /// tensor whose rule table word is `r` is updated by `RULES[r]`'s update and clamp.
        const RULES: &'static [&'static KernelDescriptor];
        /// The buffer count of the entry's diagnostics records: the most buffers of any rule (a
        /// rule with fewer leaves the rest of its tensor's record empty).
        const RECORD_BUFFERS: usize;
    }
}
