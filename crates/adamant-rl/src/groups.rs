//! The parameter groups of the training step the seed's codebase runs, each stepped by its own
//! optimizer kernel, and one call that steps them all with the right kernel and clamp policy.
use cust::stream::Stream;

use adamant_runtime::nan_check::{GroupShape, SlotBindings};
use adamant_runtime::{Adamant, ClampPolicy, DeviceScalar, Error, LaunchInfo, ParamGroup, Result};

use crate::config::SessionConfig;
use crate::launchers::SeedLaunchers;
use crate::slot_table::TABLE;

/// Why the decision transformer's launch of `attn_adam_kernel` passes bound 0.0 (as in the seed).
pub const DT_CLAMP_DISABLED: &str =
    "decision transformer: offline RL, outside the ISV-driven clamp's scope (seed: DT keeps 0.0)";

/// The number of the seed's groups ([`TrainingGroups::all`]); a session has one record per
/// group, these first, then one per [`TrainingGroups::extra`] group.
pub const GROUP_COUNT: usize = 8;

/// The seed's eight groups as the NaN check's slots see them (name, whether AMSGrad's `v_max` is
/// kept), in [`TrainingGroups::all`]'s order: the names [`TrainingGroups::new`] gives them.
pub const GROUP_SHAPES: [GroupShape<'static>; GROUP_COUNT] = [
    shape("dqn_trunk", false),
    shape("dqn_heads", false),
    shape("iqn_online", false),
    shape("iql", false),
    shape("attention", false),
    shape("tlob", false),
    shape("curiosity", true),
    shape("decision_transformer", false),
];

const fn shape(name: &'static str, amsgrad: bool) -> GroupShape<'static> {
    GroupShape { name, amsgrad }
}

/// The parameter count of each group of [`TrainingGroups`] (elements, not bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupSizes {
    /// The DQN trunk (shared features).
    pub dqn_trunk: usize,
    /// The DQN heads (Q values).
    pub dqn_heads: usize,
    /// The IQN head's own (online) parameters.
    pub iqn_online: usize,
    /// IQL's value and policy networks.
    pub iql: usize,
    /// GpuAttention.
    pub attention: usize,
    /// GpuTlob.
    pub tlob: usize,
    /// The curiosity module's forward model.
    pub curiosity: usize,
    /// The decision transformer.
    pub decision_transformer: usize,
}

impl GroupSizes {
    /// The model sizes of the benchmark's RL set (bench/rl_set.json, summed per model).
    pub const RL_SET: GroupSizes = GroupSizes {
        dqn_trunk: 1_837_568,
        dqn_heads: 393_726,
        iqn_online: 429_577,
        iql: 930_307,
        attention: 789_760,
        tlob: 198_272,
        curiosity: 663_817,
        decision_transformer: 233_481,
    };

    /// The sizes in record order ([`GROUP_SHAPES`]' order, `TrainingGroups::all`'s).
    pub fn in_order(&self) -> [usize; GROUP_COUNT] {
        [
            self.dqn_trunk,
            self.dqn_heads,
            self.iqn_online,
            self.iql,
            self.attention,
            self.tlob,
            self.curiosity,
            self.decision_transformer,
        ]
    }
}

/// Every parameter group of the seed's training step, on one GPU, each named as its field
/// (the names the NaN checker's slot table binds by) and stepped by its own kernel in
/// [`TrainingGroups::step_all`].
pub struct TrainingGroups {
    /// The DQN trunk, stepped by `dqn_adam_update_kernel`.
    pub dqn_trunk: ParamGroup,
    /// The DQN heads, stepped by `dqn_adam_update_kernel`.
    pub dqn_heads: ParamGroup,
    /// The IQN head's own parameter buffer (`online_params` in the seed), stepped by
    /// `iqn_adam_kernel`.
    pub iqn_online: ParamGroup,
    /// IQL's networks, stepped by `iql_adam_kernel`.
    pub iql: ParamGroup,
    /// GpuAttention, stepped by `attn_adam_kernel`.
    pub attention: ParamGroup,
    /// GpuTlob, stepped by `attn_adam_kernel`.
    pub tlob: ParamGroup,
    /// The curiosity module (with AMSGrad's `v_max`), stepped by `curiosity_adam_step`.
    pub curiosity: ParamGroup,
    /// The decision transformer, stepped by `attn_adam_kernel` with the clamp disabled
    /// ([`DT_CLAMP_DISABLED`]).
    pub decision_transformer: ParamGroup,
    /// Further groups of the step (a new model), empty at first: each is stepped by
    /// `attn_adam_kernel` (AdamW with the attention hyperparameters), or by `curiosity_adam_step`
    /// with the curiosity ones if it keeps AMSGrad's `v_max`, with the bound from `Q_ABS_REF`.
    /// No slot of the table names them: a [`TrainingSession`](crate::TrainingSession) derives
    /// theirs ([`group_slots`](adamant_runtime::nan_check::group_slots)).
    pub extra: Vec<ParamGroup>,
}

/// The per-step inputs of [`TrainingGroups::step_all`].
#[derive(Clone, Copy, Debug)]
pub struct StepConfig<'a> {
    /// The ISV's `Q_ABS_REF`, from which every clamped group's bound is derived.
    pub q_abs_ref: f32,
    /// Each group's hyperparameters (the same set a [`SessionConfig`] gives a session).
    pub hyper: SessionConfig,
    /// The global-norm clip coefficient for the DQN gradients, on the device (None = 1.0).
    pub dqn_grad_scale: Option<&'a DeviceScalar>,
}

impl TrainingGroups {
    /// Allocates every group with `init(group_name, len)` as initial parameters and zeroed
    /// gradients and moments (curiosity also gets AMSGrad's `v_max`).
    ///
    /// # Errors
    ///
    /// As [`ParamGroup::new`], for the first group that fails.
    pub fn new(sizes: GroupSizes, mut init: impl FnMut(&str, usize) -> Vec<f32>) -> Result<Self> {
        let mut group = |i: usize, len: usize| {
            let GroupShape { name, amsgrad } = GROUP_SHAPES[i];
            if amsgrad {
                ParamGroup::new_amsgrad(name, &init(name, len))
            } else {
                ParamGroup::new(name, &init(name, len))
            }
        };
        let dqn_trunk = group(0, sizes.dqn_trunk)?;
        let dqn_heads = group(1, sizes.dqn_heads)?;
        let iqn_online = group(2, sizes.iqn_online)?;
        let iql = group(3, sizes.iql)?;
        let attention = group(4, sizes.attention)?;
        let tlob = group(5, sizes.tlob)?;
        // In the order of the seed's allocations (`init` may draw from one generator).
        let decision_transformer = group(7, sizes.decision_transformer)?;
        let curiosity = group(6, sizes.curiosity)?;
        Ok(TrainingGroups {
            dqn_trunk,
            dqn_heads,
            iqn_online,
            iql,
            attention,
            tlob,
            curiosity,
            decision_transformer,
            extra: Vec::new(),
        })
    }

    /// All groups, in a fixed order (as declared), each carrying its name.
    pub fn all(&self) -> [&ParamGroup; GROUP_COUNT] {
        [
            &self.dqn_trunk,
            &self.dqn_heads,
            &self.iqn_online,
            &self.iql,
            &self.attention,
            &self.tlob,
            &self.curiosity,
            &self.decision_transformer,
        ]
    }

    /// All groups, mutably, in the order of [`TrainingGroups::all`] (to upload gradients, say).
    pub fn all_mut(&mut self) -> [&mut ParamGroup; GROUP_COUNT] {
        self.split_extra().0
    }

    /// Every group: the eight of [`TrainingGroups::all`], then [`TrainingGroups::extra`].
    pub fn every(&self) -> Vec<&ParamGroup> {
        let mut all = self.all().to_vec();
        all.extend(self.extra.iter());
        all
    }

    /// Every group, mutably, in the order of [`TrainingGroups::every`].
    pub fn every_mut(&mut self) -> Vec<&mut ParamGroup> {
        // The eight borrow their fields and `extra` its own: disjoint, so both at once.
        let (seed, extra) = self.split_extra();
        seed.into_iter().chain(extra.iter_mut()).collect()
    }

    /// The eight of [`TrainingGroups::all`] (same order) and `extra`, mutably at once: disjoint
    /// fields. The session's launches take them from here too, so the record of group `i` of
    /// `all` is record `i`.
    pub(crate) fn split_extra(&mut self) -> ([&mut ParamGroup; GROUP_COUNT], &mut Vec<ParamGroup>) {
        (
            [
                &mut self.dqn_trunk,
                &mut self.dqn_heads,
                &mut self.iqn_online,
                &mut self.iql,
                &mut self.attention,
                &mut self.tlob,
                &mut self.curiosity,
                &mut self.decision_transformer,
            ],
            &mut self.extra,
        )
    }

    /// One optimizer step for every group on `stream`, each with its kernel: the clamp bound comes from
    /// `q_abs_ref` for all of them except the decision transformer, which passes 0.0 with
    /// [`DT_CLAMP_DISABLED`] as the reason, then every [`TrainingGroups::extra`] group. Every
    /// policy and hyperparameter is validated before the first launch, so a bad input launches
    /// nothing at all. Returns the launches' [`LaunchInfo`]s, in the order of
    /// [`TrainingGroups::every`].
    ///
    /// # Errors
    ///
    /// Those of the typed launchers ([`SeedLaunchers::dqn_adam_update`] and the others); a
    /// validation error is raised before the first launch.
    pub fn step_all(
        &mut self,
        rt: &Adamant,
        stream: &Stream,
        cfg: &StepConfig,
    ) -> Result<Vec<LaunchInfo>> {
        let isv = ClampPolicy::from_isv(cfg.q_abs_ref);
        let dt = ClampPolicy::disabled(DT_CLAMP_DISABLED);
        isv.bound()?;
        cfg.hyper.validate()?;
        let (h, grad_scale) = (&cfg.hyper, cfg.dqn_grad_scale);
        let mut infos = vec![
            rt.dqn_adam_update(stream, &mut self.dqn_trunk, &h.dqn, grad_scale, isv)?,
            rt.dqn_adam_update(stream, &mut self.dqn_heads, &h.dqn, grad_scale, isv)?,
            rt.iqn_adam(stream, &mut self.iqn_online, &h.iqn, isv)?,
            rt.iql_adam(stream, &mut self.iql, &h.iql, h.iql_grad_clip, isv)?,
            rt.attn_adam(stream, &mut self.attention, &h.attention, isv)?,
            rt.attn_adam(stream, &mut self.tlob, &h.attention, isv)?,
            rt.curiosity_adam(stream, &mut self.curiosity, &h.curiosity, isv)?,
            rt.attn_adam(stream, &mut self.decision_transformer, &h.attention, dt)?,
        ];
        for group in &mut self.extra {
            infos.push(if group.has_amsgrad() {
                rt.curiosity_adam(stream, group, &h.curiosity, isv)?
            } else {
                rt.attn_adam(stream, group, &h.attention, isv)?
            });
        }
        Ok(infos)
    }

    /// Binds the seed's eight groups ([`TrainingGroups::all`], with
    /// [`SlotBindings::bind_groups`]) in `bindings` of the seed's table
    /// ([`SEED_TABLE`](crate::SEED_TABLE)): after this, only the activation slots remain to
    /// bind.
    ///
    /// # Errors
    ///
    /// [`Error::WrongSlotTable`] for bindings of another table (nothing is bound); as
    /// [`SlotBindings::bind_group`], for the first group that fails.
    ///
    /// ```
    /// use adamant_rl::{slot, GroupSizes, TrainingGroups, FUSED_RANGE, SEED_TABLE};
    /// use adamant_runtime::nan_check::{NanChecker, SlotBindings};
    /// use adamant_runtime::DeviceArray;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let adamant = match adamant_runtime::Adamant::new() {
    /// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
    /// #     other => other?,
    /// # };
    /// let groups = TrainingGroups::new(GroupSizes::RL_SET, |_, len| vec![0.0; len])?;
    /// // An activation buffer of the training step (which owns it).
    /// let grad_out = DeviceArray::zeroed(4096)?;
    ///
    /// let mut bindings = SlotBindings::new(SEED_TABLE);
    /// // Every parameter-group slot, by group name (slot 48 `iqn_weight_max` -> iqn_online params).
    /// groups.bind_slots(&mut bindings)?;
    /// // Activations, one line each.
    /// bindings.bind(slot::iqn_trunk_grad_out, &grad_out)?;
    /// // ... the range's other activation slots (here all watch the same stand-in buffer).
    /// for id in FUSED_RANGE.filter_map(|i| SEED_TABLE.id(i)) {
    ///     if !bindings.is_bound(id)? {
    ///         bindings.bind(id, &grad_out)?;
    ///     }
    /// }
    ///
    /// let mut checker = NanChecker::new(&adamant, FUSED_RANGE, &bindings)?;
    /// let q_abs_ref = 1.0; // the ISV's Q_ABS_REF
    /// checker.enqueue(adamant.stream(), q_abs_ref)?; // after the step's kernels, same stream, no host sync
    /// checker.report()?.ensure_quiet()?; // when the loop wants the answer (waits for the check's event)
    /// # Ok(())
    /// # }
    /// ```
    pub fn bind_slots(&self, bindings: &mut SlotBindings) -> Result<()> {
        if bindings.table() != TABLE {
            return Err(Error::WrongSlotTable {
                what: "TrainingGroups::bind_slots",
                expected: TABLE.name(),
                table: bindings.table().name(),
            });
        }
        bindings.bind_groups(self.all())
    }
}
