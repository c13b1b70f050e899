//! THE slot table: the one place a NaN-check slot is declared.
//!
//! Each line of `slot_table!` gives a slot's index, its name, its check and the buffer it
//! watches in the reference training step. Everything else is derived from the table: the
//! output buffers' sizes ([`SLOT_COUNT`] and the checked range), the kernel's work layout and
//! pointer/length metadata (from the bindings of the slots in range), the thresholds
//! (`factor × q_abs_ref_eff`), the name table of the report, `docs/audit.md` and the audit CLI.
//!
//! Adding a slot is one line here plus binding its buffer: [`super::SlotBindings::bind`] for an
//! activation, or nothing more for a parameter-group buffer (bound by
//! [`super::SlotBindings::bind_group`] from the group's name).
use std::ops::RangeInclusive;

use crate::groups::GroupBuffer;

/// What a slot checks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Check {
    /// NaN, `+inf` and `-inf` only.
    NonFinite,
    /// NaN and `±inf`, plus any finite `|x| > factor × q_abs_ref_eff`, where
    /// `q_abs_ref_eff = max(Q_ABS_REF, 1.0)`.
    MaxAbs {
        /// How many `q_abs_ref_eff`s a value may reach (1e3 for the weight-max slots, ten times
        /// the clamp bound's factor; 1e2 for the Q values); finite and `> 0`, checked when the
        /// crate compiles.
        factor: f32,
    },
}

impl Check {
    /// The `factor` the kernel reads: `+inf` for [`Check::NonFinite`] (no finite value exceeds
    /// it, so only the non-finite test can fire).
    pub const fn device_factor(self) -> f32 {
        match self {
            Check::NonFinite => adamant_kernels::nan_check::NON_FINITE_ONLY,
            Check::MaxAbs { factor } => factor,
        }
    }

    /// The max-abs threshold at this `q_abs_ref_eff`, computed exactly as the kernel does (one
    /// f32 multiply); `None` for non-finite-only slots.
    pub fn threshold(self, q_abs_ref_eff: f32) -> Option<f32> {
        match self {
            Check::NonFinite => None,
            Check::MaxAbs { factor } => Some(factor * q_abs_ref_eff),
        }
    }

    /// Short description for tables and logs.
    pub fn describe(self) -> &'static str {
        match self {
            Check::NonFinite => "non-finite",
            Check::MaxAbs { .. } => "non-finite + max-abs",
        }
    }
}

/// What a slot watches in the reference training step. Documents the slot in `docs/audit.md`
/// and lets [`super::SlotBindings::bind_group`] bind parameter-group buffers by group name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `buffer` of the [`crate::ParamGroup`] whose [`crate::ParamGroup::name`] is `group`.
    Group {
        /// The group's name, as [`crate::TrainingGroups`] names it (`iqn_online`, ...).
        group: &'static str,
        /// Which of its buffers.
        buffer: GroupBuffer,
    },
    /// An activation or other intermediate the training step owns, bound explicitly.
    Activation {
        /// What it is, in words (for `docs/audit.md`).
        what: &'static str,
    },
}

impl Source {
    /// One-line description, e.g. "group `iqn` params".
    pub fn describe(self) -> String {
        match self {
            Source::Group { group, buffer } => format!("group `{group}` {}", buffer.name()),
            Source::Activation { what } => format!("activation: {what}"),
        }
    }
}

/// One declared slot: a line of the table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlotSpec {
    /// Its index: its position in [`SLOTS`] and in a check's per-slot outputs.
    pub index: usize,
    /// Its name, unique in the table (and the name of its constant in [`slot`]).
    pub name: &'static str,
    /// What it checks.
    pub check: Check,
    /// What it watches.
    pub source: Source,
}

/// A slot of the table. The only constructors are the constants in [`slot`] and
/// [`SlotId::new`] / [`SlotId::by_name`], so a `SlotId` always names a declared slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlotId(usize);

impl SlotId {
    /// The slot with this index, if declared.
    pub fn new(index: usize) -> Option<SlotId> {
        (index < SLOT_COUNT).then_some(SlotId(index))
    }

    /// The slot with this name, if declared.
    pub fn by_name(name: &str) -> Option<SlotId> {
        SLOTS.iter().position(|s| s.name == name).map(SlotId)
    }

    /// The slot's index in the table.
    pub fn index(self) -> usize {
        self.0
    }

    /// The slot's line of the table.
    pub fn spec(self) -> &'static SlotSpec {
        &SLOTS[self.0]
    }

    /// The slot's name, e.g. `iqn_weight_max`.
    pub fn name(self) -> &'static str {
        self.spec().name
    }
}

impl std::fmt::Display for SlotId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "slot {} `{}`", self.0, self.name())
    }
}

const NON_FINITE: Check = Check::NonFinite;

const fn max_abs(factor: f32) -> Check {
    Check::MaxAbs { factor }
}

const fn group(group: &'static str, buffer: GroupBuffer) -> Source {
    Source::Group { group, buffer }
}

const fn activation(what: &'static str) -> Source {
    Source::Activation { what }
}

/// `index name: check, source;` per slot. Generates [`SLOTS`] and one [`SlotId`] constant per
/// slot in [`slot`] (a repeated name is a duplicate-definition error there).
macro_rules! slot_table {
    ($($index:literal $name:ident: $check:expr, $source:expr;)*) => {
        /// Every declared slot, in index order (checked at compile time).
        pub const SLOTS: &[SlotSpec] = &[
            $(SlotSpec { index: $index, name: stringify!($name), check: $check, source: $source },)*
        ];

        /// One constant per slot, named as the slot: `slot::iqn_weight_max`.
        #[allow(non_upper_case_globals)]
        pub mod slot {
            use super::SlotId;
            $(
                #[doc = concat!(
                    "Slot ", stringify!($index), ": checks `", stringify!($check),
                    "` of `", stringify!($source), "`."
                )]
                pub const $name: SlotId = SlotId($index);
            )*
        }
    };
}

use GroupBuffer::{Grads, Params, VMax, M, V};

slot_table! {
    // Gradients, as left by the backward pass. Group names are those of `TrainingGroups`.
     0 dqn_trunk_grads:    NON_FINITE,    group("dqn_trunk", Grads);
     1 dqn_heads_grads:    NON_FINITE,    group("dqn_heads", Grads);
     2 iqn_grads:          NON_FINITE,    group("iqn_online", Grads);
     3 iql_grads:          NON_FINITE,    group("iql", Grads);
     4 attn_grads:         NON_FINITE,    group("attention", Grads);
     5 tlob_grads:         NON_FINITE,    group("tlob", Grads);
     6 curiosity_grads:    NON_FINITE,    group("curiosity", Grads);
     7 dt_grads:           NON_FINITE,    group("decision_transformer", Grads);
    // Adam moments.
     8 dqn_trunk_m:        NON_FINITE,    group("dqn_trunk", M);
     9 dqn_trunk_v:        NON_FINITE,    group("dqn_trunk", V);
    10 dqn_heads_m:        NON_FINITE,    group("dqn_heads", M);
    11 dqn_heads_v:        NON_FINITE,    group("dqn_heads", V);
    12 iqn_m:              NON_FINITE,    group("iqn_online", M);
    13 iqn_v:              NON_FINITE,    group("iqn_online", V);
    14 iql_m:              NON_FINITE,    group("iql", M);
    15 iql_v:              NON_FINITE,    group("iql", V);
    16 attn_m:             NON_FINITE,    group("attention", M);
    17 attn_v:             NON_FINITE,    group("attention", V);
    18 tlob_m:             NON_FINITE,    group("tlob", M);
    19 tlob_v:             NON_FINITE,    group("tlob", V);
    20 curiosity_m:        NON_FINITE,    group("curiosity", M);
    21 curiosity_v:        NON_FINITE,    group("curiosity", V);
    22 dt_m:               NON_FINITE,    group("decision_transformer", M);
    23 dt_v:               NON_FINITE,    group("decision_transformer", V);
    // Activations of the training step (the seed's fused check starts here).
    24 dqn_trunk_out:      NON_FINITE,    activation("DQN trunk forward output (shared features)");
    25 dqn_q_values:       NON_FINITE,    activation("DQN heads output Q(s, a)");
    26 iqn_trunk_grad_out: NON_FINITE,    activation("apply_iqn_trunk_gradient output, grad_iqn @ W_iqn^T");
    27 iqn_quantiles:      NON_FINITE,    activation("IQN quantile values Z(s, a, tau)");
    28 iqn_quantile_loss:  NON_FINITE,    activation("IQN quantile Huber loss per sample");
    29 iql_value_out:      NON_FINITE,    activation("IQL value network output V(s)");
    30 iql_policy_logits:  NON_FINITE,    activation("IQL policy logits");
    31 attn_out:           NON_FINITE,    activation("GpuAttention output");
    32 tlob_out:           NON_FINITE,    activation("GpuTlob output");
    33 curiosity_pred:     NON_FINITE,    activation("curiosity forward-model prediction");
    34 curiosity_reward:   NON_FINITE,    activation("curiosity intrinsic reward");
    35 td_errors:          NON_FINITE,    activation("DQN TD errors");
    // Weights after the optimizer step.
    36 dqn_trunk_weights:  NON_FINITE,    group("dqn_trunk", Params);
    37 dqn_heads_weights:  NON_FINITE,    group("dqn_heads", Params);
    38 iqn_weights:        NON_FINITE,    group("iqn_online", Params);
    39 iql_weights:        NON_FINITE,    group("iql", Params);
    40 attn_weights:       NON_FINITE,    group("attention", Params);
    41 tlob_weights:       NON_FINITE,    group("tlob", Params);
    42 curiosity_weights:  NON_FINITE,    group("curiosity", Params);
    43 dt_weights:         NON_FINITE,    group("decision_transformer", Params);
    // Early warnings: finite but far beyond the clamp bound (100 × q_abs_ref_eff).
    44 trunk_weight_max:   max_abs(1e3),  group("dqn_trunk", Params);
    45 heads_weight_max:   max_abs(1e3),  group("dqn_heads", Params);
    46 q_value_max:        max_abs(1e2),  activation("DQN heads output Q(s, a)");
    47 curiosity_v_max:    NON_FINITE,    group("curiosity", VMax);
    48 iqn_weight_max:     max_abs(1e3),  group("iqn_online", Params);
}

/// Number of declared slots: the size of every per-slot output of a full-range check.
pub const SLOT_COUNT: usize = SLOTS.len();

/// Every slot, in one launch.
pub const ALL_SLOTS: RangeInclusive<usize> = 0..=SLOT_COUNT - 1;

/// The seed's fused check: activations, weights and the weight-max early warnings.
pub const FUSED_RANGE: RangeInclusive<usize> = 24..=48;

/// `max(Q_ABS_REF, 1.0)`: thresholds never shrink below `factor × 1.0` while the ISV's
/// reference is still tiny (early training).
pub fn q_abs_ref_eff(q_abs_ref: f32) -> f32 {
    q_abs_ref.max(1.0)
}

// The table's invariants, checked when the crate compiles.
const _: () = check_table(SLOTS);
const _: () = assert!(
    *FUSED_RANGE.end() < SLOT_COUNT,
    "FUSED_RANGE ends past the table"
);

const fn check_table(slots: &[SlotSpec]) {
    assert!(!slots.is_empty(), "the slot table is empty");
    assert!(
        slots.len() <= u32::MAX as usize,
        "slot indices must fit the kernel's u32"
    );
    let mut i = 0;
    while i < slots.len() {
        assert!(
            slots[i].index == i,
            "slot indices must be 0, 1, 2, ... in declaration order, with no gap or repeat"
        );
        if let Check::MaxAbs { factor } = slots[i].check {
            assert!(
                factor > 0.0 && factor < f32::INFINITY,
                "a max-abs factor must be finite and > 0"
            );
        }
        let mut j = 0;
        while j < i {
            assert!(
                !str_eq(slots[i].name, slots[j].name),
                "two slots have the same name"
            );
            j += 1;
        }
        i += 1;
    }
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}
