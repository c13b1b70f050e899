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
//! The parameter list is fixed, whatever the rules: [`FUSED_PARAMS`] (`param`, `input0..`,
//! `state0..`, `uniform0..`, `chunks`, `n_chunks`, `weight_clamp_scales`, `rules`, `records`,
//! `step_states` last), which `fused_optimizer!` registers as every fused entry's descriptor.

/// Input tables of a fused entry: a rule with more `#[input]`s cannot join a fused set.
pub const MAX_FUSED_INPUTS: usize = 2;
/// State tables of a fused entry.
pub const MAX_FUSED_STATES: usize = 4;
/// `#[uniform_ptr]` tables of a fused entry.
pub const MAX_FUSED_UNIFORMS: usize = 2;
/// The slot tables of a fused entry, its first parameters: the parameter table, then the input,
/// state and uniform tables.
pub const FUSED_SLOTS: usize = 1 + MAX_FUSED_INPUTS + MAX_FUSED_STATES + MAX_FUSED_UNIFORMS;

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use super::{FUSED_SLOTS, MAX_FUSED_INPUTS, MAX_FUSED_STATES, MAX_FUSED_UNIFORMS};
    use crate::{
        GeneratedEntry, KernelDescriptor, KernelParam, ParamRole, ParamType, Rounding, Storage,
    };

    /// A fused entry's tables point at f32 buffers only: a kernel with a 16-bit buffer has no
    /// fused rule (`fused_optimizer!` refuses it).
    const fn param(name: &'static str, ty: ParamType, role: ParamRole) -> KernelParam {
        KernelParam {
            name,
            ty,
            role,
            storage: Storage::F32,
            rounding: Rounding::Nearest,
        }
    }

    const fn table(name: &'static str, role: ParamRole) -> KernelParam {
        param(name, ParamType::Ptr, role)
    }

    /// Every fused entry's parameters, in PTX order: the one list that `fused_optimizer!`
    /// registers as the descriptor's and the runtime assembles a launch from. The first
    /// [`FUSED_SLOTS`] are the slot tables, each at its [`FusedSlot::param_index`].
    pub const FUSED_PARAMS: [KernelParam; FUSED_SLOTS + 6] = [
        table("param", ParamRole::ParamTable),
        table("input0", ParamRole::InputTable),
        table("input1", ParamRole::InputTable),
        table("state0", ParamRole::StateTable),
        table("state1", ParamRole::StateTable),
        table("state2", ParamRole::StateTable),
        table("state3", ParamRole::StateTable),
        table("uniform0", ParamRole::UniformTable),
        table("uniform1", ParamRole::UniformTable),
        table("chunks", ParamRole::ChunkTable),
        param("n_chunks", ParamType::U32, ParamRole::ChunkCount),
        table("weight_clamp_scales", ParamRole::ClampScales),
        table("rules", ParamRole::RuleTable),
        table("records", ParamRole::Records),
        table("step_states", ParamRole::StepStateTable),
    ];

    /// Which table of a fused entry one buffer (or `#[uniform_ptr]`) of a rule is read from.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum FusedSlot {
        Param,
        Input(usize),
        State(usize),
        Uniform(usize),
    }

    impl FusedSlot {
        /// The slot's parameter index in the fused entry ([`FUSED_PARAMS`]).
        pub const fn param_index(self) -> usize {
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
        // Inputs, states, uniform pointers seen so far.
        let mut counts = [0usize; 3];
        let mut out = Vec::new();
        for (i, p) in rule.params.iter().enumerate() {
            let slot = match p.role {
                ParamRole::ParamBuffer => FusedSlot::Param,
                ParamRole::Input => FusedSlot::Input(next(&mut counts[0])),
                ParamRole::State => FusedSlot::State(next(&mut counts[1])),
                ParamRole::UniformPtr { .. } => FusedSlot::Uniform(next(&mut counts[2])),
                _ => continue,
            };
            out.push((i, slot));
        }
        let limits = [MAX_FUSED_INPUTS, MAX_FUSED_STATES, MAX_FUSED_UNIFORMS];
        let roles = ["#[input]", "#[state]", "#[uniform_ptr]"];
        for ((count, limit), role) in counts.into_iter().zip(limits).zip(roles) {
            if count > limit {
                return Err(TooManySlots {
                    kernel: rule.name,
                    role,
                    count,
                    limit,
                });
            }
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

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;
    use crate::{KernelDescriptor, KernelParam, ParamRole, ParamType, Rounding, Storage};

    /// Every slot of every role lands on a parameter of that role, each on its own, and the
    /// slots are exactly the first `FUSED_SLOTS` parameters.
    #[test]
    fn every_slot_is_a_parameter_of_its_role() {
        let mut slots = vec![FusedSlot::Param];
        slots.extend((0..MAX_FUSED_INPUTS).map(FusedSlot::Input));
        slots.extend((0..MAX_FUSED_STATES).map(FusedSlot::State));
        slots.extend((0..MAX_FUSED_UNIFORMS).map(FusedSlot::Uniform));
        let indices: Vec<usize> = slots.iter().map(|s| s.param_index()).collect();
        assert_eq!(indices, (0..FUSED_SLOTS).collect::<Vec<_>>());
        for slot in slots {
            let want = match slot {
                FusedSlot::Param => ParamRole::ParamTable,
                FusedSlot::Input(_) => ParamRole::InputTable,
                FusedSlot::State(_) => ParamRole::StateTable,
                FusedSlot::Uniform(_) => ParamRole::UniformTable,
            };
            assert_eq!(FUSED_PARAMS[slot.param_index()].role, want, "{slot:?}");
        }
        assert!(FUSED_PARAMS[FUSED_SLOTS..].iter().all(|p| !matches!(
            p.role,
            ParamRole::ParamTable
                | ParamRole::InputTable
                | ParamRole::StateTable
                | ParamRole::UniformTable
        )));
        assert_eq!(
            FUSED_PARAMS.last().map(|p| p.role),
            Some(ParamRole::StepStateTable)
        );
    }

    const fn buffer(name: &'static str, role: ParamRole) -> KernelParam {
        KernelParam {
            name,
            ty: ParamType::Ptr,
            role,
            storage: Storage::F32,
            rounding: Rounding::Nearest,
        }
    }

    const THREE_INPUTS: [KernelParam; 5] = [
        buffer("p", ParamRole::ParamBuffer),
        buffer("a", ParamRole::Input),
        buffer("m", ParamRole::State),
        buffer("b", ParamRole::Input),
        buffer("c", ParamRole::Input),
    ];

    fn kernel(params: &'static [KernelParam]) -> KernelDescriptor {
        KernelDescriptor {
            set: "test",
            defined_at: "here",
            name: "three_inputs",
            kind: crate::KernelKind::Optimizer,
            params,
            record: &[],
        }
    }

    /// A kernel with more buffers of a role than there are tables is refused with its full
    /// count; one at the limit is mapped in declared order.
    #[test]
    fn a_kernel_past_a_table_limit_is_refused_with_its_count() {
        let e = fused_slots(&kernel(&THREE_INPUTS)).unwrap_err();
        assert_eq!(
            e,
            TooManySlots {
                kernel: "three_inputs",
                role: "#[input]",
                count: 3,
                limit: MAX_FUSED_INPUTS,
            }
        );
        let slots = fused_slots(&kernel(&THREE_INPUTS[..4])).unwrap();
        assert_eq!(
            slots,
            [
                (0, FusedSlot::Param),
                (1, FusedSlot::Input(0)),
                (2, FusedSlot::State(0)),
                (3, FusedSlot::Input(1)),
            ]
        );
    }
}
