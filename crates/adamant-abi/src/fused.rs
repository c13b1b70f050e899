//! The fused entry's tables (`fused_optimizer!`): one launch updates every tensor of a set, each
//! tensor with its own rule (one of the set's optimizer kernels) and its own step record.
//!
//! A fused entry takes one pointer table per *slot*, not per buffer of one kernel, since its rules
//! have different buffers: [`FUSED_PARAM_TABLES`] parameter tables, one per way a parameter is
//! stored (f32; bf16 to nearest; bf16 stochastically; f16), [`MAX_FUSED_INPUTS`] input tables,
//! [`MAX_FUSED_STATES`] state tables and [`MAX_FUSED_UNIFORMS`] tables of `#[uniform_ptr]`s. A
//! rule reads its parameter from the table of its parameter's storage and rounding, its `k`-th
//! `#[input]` from input table `k`, its `k`-th `#[state]` from state table `k` and its `k`-th
//! `#[uniform_ptr]` from uniform table `k`, in declared order ([`fused_slots`]). The macro that
//! generates each rule's fused sweep and the runtime that fills the tables both follow that
//! order; every slot is passed as a table, 0 for a tensor whose rule reads nothing from it (the
//! entry reads a tensor's row of each table its rules use before it branches). Keeping one slot
//! per role (never an input in one rule's state slot) is what lets the audit and the runtime
//! judge a table by its role alone, and one parameter table per storage is what lets the audit
//! judge every store to a parameter by the storage its table declares, as it does in a kernel's
//! own entries, whichever rule's branch the store is in.
//!
//! The parameter list is fixed, whatever the rules: [`FUSED_PARAMS`] (`param`, `param_bf16`,
//! `param_bf16_sr`, `param_f16`, `input0..`, `state0..`, `uniform0..`, `chunks`, `n_chunks`,
//! `weight_clamp_scales`, `rules`, `records`, `step_states` last), which `fused_optimizer!`
//! registers as every fused entry's descriptor.

/// Input tables of a fused entry: a rule with more `#[input]`s cannot join a fused set.
pub const MAX_FUSED_INPUTS: usize = 2;
/// State tables of a fused entry.
pub const MAX_FUSED_STATES: usize = 4;
/// `#[uniform_ptr]` tables of a fused entry.
pub const MAX_FUSED_UNIFORMS: usize = 2;
/// Parameter tables of a fused entry, one per way a parameter is stored ([`param_table_index`]).
pub const FUSED_PARAM_TABLES: usize = 4;
/// The slot tables of a fused entry, its first parameters: the parameter tables, then the input,
/// state and uniform tables.
pub const FUSED_SLOTS: usize =
    FUSED_PARAM_TABLES + MAX_FUSED_INPUTS + MAX_FUSED_STATES + MAX_FUSED_UNIFORMS;

/// Low bits of a rule-table word that hold the tensor's branch (its rule's index in the set);
/// the bits above hold its rounding index ([`rule_word`]).
pub const RULE_BRANCH_BITS: u32 = 8;
/// The most rules a fused set may name: every branch fits [`RULE_BRANCH_BITS`].
pub const MAX_FUSED_RULES: usize = 32;
/// The largest rounding index a rule-table word holds.
pub const MAX_ROUNDING_INDEX: u32 = u32::MAX >> RULE_BRANCH_BITS;
const _: () = assert!(MAX_FUSED_RULES <= 1 << RULE_BRANCH_BITS);

/// A tensor's rule-table word: its `branch` (the index of its rule among the set's) and its
/// `rounding` index, the tensor index its rule's stochastic rounding keys its random words with
/// (`adamant_device::storage::rounding_key`). The rounding index is the tensor's position among
/// the set's tensors of the same rule and step record, in the set's order: the index it has in
/// that group's own multi-tensor launch, so a fused launch rounds every element as the per-rule
/// launches it replaces do, and a run can move between the two bit for bit. `rounding` must be
/// at most [`MAX_ROUNDING_INDEX`] (the runtime refuses a larger group) and `branch` below
/// 2^[`RULE_BRANCH_BITS`].
#[inline(always)]
pub const fn rule_word(branch: u32, rounding: u32) -> u32 {
    (rounding << RULE_BRANCH_BITS) | branch
}

/// The branch of a rule-table word ([`rule_word`]).
#[inline(always)]
pub const fn rule_branch(word: u32) -> u32 {
    word & ((1 << RULE_BRANCH_BITS) - 1)
}

/// The rounding index of a rule-table word ([`rule_word`]).
#[inline(always)]
pub const fn rule_rounding_index(word: u32) -> u32 {
    word >> RULE_BRANCH_BITS
}

#[cfg(not(target_arch = "nvptx64"))]
pub use host::*;

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use super::{
        FUSED_PARAM_TABLES, FUSED_SLOTS, MAX_FUSED_INPUTS, MAX_FUSED_STATES, MAX_FUSED_UNIFORMS,
    };
    use crate::{
        GeneratedEntry, KernelDescriptor, KernelParam, ParamRole, ParamType, Rounding, Storage,
    };

    /// A parameter that holds no buffer's elements (a count, or a table of inputs, states,
    /// uniforms or bookkeeping, whose elements' storage the rule's own descriptor gives).
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

    /// The parameter table of the buffers stored as `storage` and rounded as `rounding`.
    const fn param_table(name: &'static str, storage: Storage, rounding: Rounding) -> KernelParam {
        KernelParam {
            name,
            ty: ParamType::Ptr,
            role: ParamRole::ParamTable,
            storage,
            rounding,
        }
    }

    /// The parameter tables, in order: the storage and rounding of each is what the audit proves
    /// every store through it against, and what [`param_table_index`] picks a rule's table by.
    const PARAM_TABLES: [KernelParam; FUSED_PARAM_TABLES] = [
        param_table("param", Storage::F32, Rounding::Nearest),
        param_table("param_bf16", Storage::Bf16, Rounding::Nearest),
        param_table("param_bf16_sr", Storage::Bf16, Rounding::Stochastic),
        param_table("param_f16", Storage::F16, Rounding::Nearest),
    ];

    /// The parameter table a rule whose parameter is stored as `storage` and rounded as
    /// `rounding` reads it from; `None` for a storage no table holds (a parameter with a
    /// companion buffer: its high half rounds ties away, and its companion has no table). The
    /// one mapping: `#[optimizer_kernel]`'s fused chunk asserts at compile time that it reads
    /// this table, and the runtime fills it.
    pub const fn param_table_index(storage: Storage, rounding: Rounding) -> Option<usize> {
        let mut k = 0;
        while k < FUSED_PARAM_TABLES {
            let t = &PARAM_TABLES[k];
            if t.storage as u8 == storage as u8 && t.rounding as u8 == rounding as u8 {
                return Some(k);
            }
            k += 1;
        }
        None
    }

    /// Every fused entry's parameters, in PTX order: the one list that `fused_optimizer!`
    /// registers as the descriptor's and the runtime assembles a launch from. The first
    /// [`FUSED_SLOTS`] are the slot tables, each at its [`FusedSlot::param_index`].
    pub const FUSED_PARAMS: [KernelParam; FUSED_SLOTS + 6] = [
        PARAM_TABLES[0],
        PARAM_TABLES[1],
        PARAM_TABLES[2],
        PARAM_TABLES[3],
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
        /// Parameter table `k` ([`param_table_index`]).
        Param(usize),
        Input(usize),
        State(usize),
        Uniform(usize),
    }

    impl FusedSlot {
        /// The slot's parameter index in the fused entry ([`FUSED_PARAMS`]).
        pub const fn param_index(self) -> usize {
            match self {
                FusedSlot::Param(k) => k,
                FusedSlot::Input(k) => FUSED_PARAM_TABLES + k,
                FusedSlot::State(k) => FUSED_PARAM_TABLES + MAX_FUSED_INPUTS + k,
                FusedSlot::Uniform(k) => {
                    FUSED_PARAM_TABLES + MAX_FUSED_INPUTS + MAX_FUSED_STATES + k
                }
            }
        }
    }

    /// Why a kernel cannot be a rule of a fused set: more buffers of a role than there are
    /// tables (`count` of `role` past `limit`), or a parameter whose storage no parameter table
    /// holds (`role` names the storage, `limit` is 0).
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
                ParamRole::ParamBuffer => match param_table_index(p.storage, p.rounding) {
                    Some(k) => FusedSlot::Param(k),
                    None => {
                        return Err(TooManySlots {
                            kernel: rule.name,
                            role: "parameter stored with a companion (no fused table)",
                            count: 1,
                            limit: 0,
                        })
                    }
                },
                ParamRole::Input => FusedSlot::Input(next(&mut counts[0])),
                ParamRole::State => FusedSlot::State(next(&mut counts[1])),
                ParamRole::UniformPtr { .. } => FusedSlot::Uniform(next(&mut counts[2])),
                _ => continue,
            };
            out.push((i, slot));
        }
        // A parameter and its companion (an f32 master beside the bf16 copy): one parameter
        // table per tensor, and no table for the companion.
        let params = out
            .iter()
            .filter(|(_, s)| matches!(s, FusedSlot::Param(_)))
            .count();
        if params > 1 {
            return Err(TooManySlots {
                kernel: rule.name,
                role: "parameter buffer (a companion has no fused table)",
                count: params,
                limit: 1,
            });
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
        /// tensor whose rule-table word's branch is `r` ([`rule_branch`](super::rule_branch)) is updated by
        /// `RULES[r]`'s update and clamp.
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
        let mut slots: Vec<FusedSlot> = (0..FUSED_PARAM_TABLES).map(FusedSlot::Param).collect();
        slots.extend((0..MAX_FUSED_INPUTS).map(FusedSlot::Input));
        slots.extend((0..MAX_FUSED_STATES).map(FusedSlot::State));
        slots.extend((0..MAX_FUSED_UNIFORMS).map(FusedSlot::Uniform));
        let indices: Vec<usize> = slots.iter().map(|s| s.param_index()).collect();
        assert_eq!(indices, (0..FUSED_SLOTS).collect::<Vec<_>>());
        for slot in slots {
            let want = match slot {
                FusedSlot::Param(_) => ParamRole::ParamTable,
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
                (0, FusedSlot::Param(0)),
                (1, FusedSlot::Input(0)),
                (2, FusedSlot::State(0)),
                (3, FusedSlot::Input(1)),
            ]
        );
    }

    /// Each way a parameter can be stored without a companion has its own table, whose declared
    /// storage and rounding are that way's (what the audit proves stores through it against);
    /// the companion kernels' storages have none, and such a rule is refused naming it.
    #[test]
    fn each_parameter_storage_has_its_own_table() {
        let ways = [
            (Storage::F32, Rounding::Nearest),
            (Storage::Bf16, Rounding::Nearest),
            (Storage::Bf16, Rounding::Stochastic),
            (Storage::F16, Rounding::Nearest),
        ];
        let tables: Vec<usize> = ways
            .iter()
            .map(|&(s, r)| param_table_index(s, r).unwrap())
            .collect();
        assert_eq!(tables, (0..FUSED_PARAM_TABLES).collect::<Vec<_>>());
        for (k, (storage, rounding)) in ways.into_iter().enumerate() {
            let p = FUSED_PARAMS[FusedSlot::Param(k).param_index()];
            assert_eq!(
                (p.role, p.storage, p.rounding),
                (ParamRole::ParamTable, storage, rounding)
            );
        }
        assert_eq!(param_table_index(Storage::Bf16, Rounding::TiesAway), None);
        assert_eq!(
            param_table_index(Storage::Bf16Remainder, Rounding::Nearest),
            None
        );
        assert_eq!(param_table_index(Storage::F16, Rounding::Stochastic), None);
        const SPLIT: [KernelParam; 2] = [
            KernelParam {
                storage: Storage::Bf16,
                rounding: Rounding::TiesAway,
                ..buffer("p", ParamRole::ParamBuffer)
            },
            buffer("g", ParamRole::Input),
        ];
        let e = fused_slots(&kernel(&SPLIT)).unwrap_err();
        assert_eq!((e.kernel, e.limit), ("three_inputs", 0));
        assert!(e.role.contains("companion"), "{e:?}");
        // The 28 B path: a bf16 copy (to nearest) and its f32 master, both parameter buffers.
        const MASTER: [KernelParam; 3] = [
            KernelParam {
                storage: Storage::Bf16,
                ..buffer("p", ParamRole::ParamBuffer)
            },
            buffer("g", ParamRole::Input),
            buffer("p_master", ParamRole::ParamBuffer),
        ];
        let e = fused_slots(&kernel(&MASTER)).unwrap_err();
        assert_eq!((e.count, e.limit), (2, 1));
        assert!(e.role.contains("companion"), "{e:?}");
    }
}
