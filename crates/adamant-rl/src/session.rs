//! The seed's training step as a training loop: [`TrainingSession`] owns the eight parameter
//! groups, their step-state records, the device `grad_scale` and the NaN checker, and runs one
//! step eagerly ([`TrainingSession::step`]) or as a replay of a captured graph
//! ([`TrainingSession::replay`]): the same launches, recorded by the same code, so the two are
//! the same computation. Between steps the host writes gradients, reads or restores weights, sets
//! the next learning rate, `Q_ABS_REF` and `grad_scale`, and reads the report after an event.
use adamant_device::diagnostics::{TensorRecord, NO_INDEX};
use adamant_device::guard::StepGuard;
use adamant_device::step::{StepState, FLAG_BAD_Q_ABS_REF};
use adamant_kernels::optimizers::{
    attn_adam_kernel, curiosity_adam_step, dqn_adam_update_kernel, iql_adam_kernel, iqn_adam_kernel,
};
use cust::error::CudaError;
use cust::event::{Event, EventFlags};
use cust::stream::Stream;

use adamant_runtime::nan_check::{
    group_slots, result_from_record, with_guard, GroupShape, GroupSlot, NanChecker, NanReport,
    SlotBindings,
};
use adamant_runtime::{
    Adamant, Branch, ClampPolicy, DeviceScalar, Error, FusedSet, GradientGuard, GroupBuffer,
    GuardSpec, ParamGroup, QAbsRef, ReadBuffer, Result, StepBound, StepGraph, StepStates,
};

use crate::config::SessionConfig;
use crate::groups::{TrainingGroups, DT_CLAMP_DISABLED, GROUP_COUNT};
use crate::optimizer_launch::{self, GroupRule, OptimizerLaunch, Uniforms};
use crate::slot_table::TABLE;

mod checkpoint;

/// What [`TrainingSession::report`] read back: every group's step-state record and the NaN
/// check, both as the device left them at the end of the last step.
#[derive(Clone, Debug)]
pub struct SessionReport {
    /// Steps the host has run (eager steps and replays).
    pub steps: u64,
    /// Each group's record, in [`TrainingGroups::all`]'s order (named by
    /// [`TrainingSession::group_names`]).
    pub states: Vec<StepState>,
    /// Each group's step guard, in the same order: the last step's gradient norm and whether it
    /// was skipped (a non-finite gradient), and how many steps were.
    pub guards: Vec<StepGuard>,
    /// The NaN check of the last step: every group slot ([`group_slots`]),
    /// from the groups' diagnostics records of that step, and, for a session made with
    /// activations, every activation slot, from the checker kernel.
    pub nan: NanReport,
    /// Per group (in [`TrainingSession::group_names`]' order), what the clamp did in the last
    /// step.
    pub pressure: Vec<ClampPressure>,
}

/// What the clamp of one group did in one step, from the group's diagnostics record: how many
/// weights it caught and how far past the bound the update wanted to take them. Rising counts
/// are the early warning of a drift (the seed's IQN weights, which reached NaN at step 3540).
#[derive(Clone, Debug, PartialEq)]
pub struct ClampPressure {
    /// The group.
    pub group: String,
    /// The session's step count when it was read.
    pub step: u64,
    /// Weights the clamp caught.
    pub clamped: u32,
    /// The first of them, if any.
    pub first_clamped: Option<u64>,
    /// The largest `|p|` the update produced before the clamp (NaN if one was NaN).
    pub max_raw: f32,
    /// The bound of the step (0.0: the clamp is disabled for this group).
    pub bound: f32,
    /// Weights whose update was NaN or ±inf before the clamp.
    pub raw_non_finite: u32,
    /// The group's element count.
    pub len: usize,
}

impl ClampPressure {
    /// `max_raw / bound`: above 1, the update wanted to leave the clamp's range (NaN without a
    /// bound).
    pub fn overshoot(&self) -> f32 {
        if self.bound > 0.0 {
            self.max_raw / self.bound
        } else {
            f32::NAN
        }
    }

    /// The fraction of the group's weights the clamp caught.
    pub fn caught_fraction(&self) -> f64 {
        if self.len == 0 {
            0.0
        } else {
            self.clamped as f64 / self.len as f64
        }
    }
}

/// A time series of [`ClampPressure`], one row per group and step, for a training loop to log:
/// [`ClampPressureLog::push`] after each [`TrainingSession::report`] (which reads mapped host
/// memory after the step's event: no copy, no device-wide synchronisation), then
/// [`ClampPressureLog::to_csv`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClampPressureLog {
    /// Every row, in the order pushed.
    pub rows: Vec<ClampPressure>,
}

impl ClampPressureLog {
    /// An empty log.
    pub fn new() -> Self {
        ClampPressureLog::default()
    }

    /// Appends the report's rows.
    pub fn push(&mut self, report: &SessionReport) {
        self.rows.extend(report.pressure.iter().cloned());
    }

    /// The rows of one group, in order.
    pub fn group<'a>(&'a self, group: &'a str) -> impl Iterator<Item = &'a ClampPressure> + 'a {
        self.rows.iter().filter(move |r| r.group == group)
    }

    /// `step,group,clamped,first_clamped,max_raw,bound,raw_non_finite,len`, one line per row
    /// (an empty `first_clamped` when none was caught).
    pub fn to_csv(&self) -> String {
        let mut out =
            String::from("step,group,clamped,first_clamped,max_raw,bound,raw_non_finite,len\n");
        for r in &self.rows {
            let first = r.first_clamped.map(|i| i.to_string()).unwrap_or_default();
            out.push_str(&format!(
                "{},{},{},{},{:e},{:e},{},{}\n",
                r.step, r.group, r.clamped, first, r.max_raw, r.bound, r.raw_non_finite, r.len
            ));
        }
        out
    }
}

impl SessionReport {
    /// Whether any advance so far found the device `Q_ABS_REF` NaN, infinite or negative (the
    /// clamp then kept the previous step's bound): `(how many steps, the last bad value, the step
    /// it was read at)`.
    pub fn bad_q_abs_ref(&self) -> Option<(u32, f32, u32)> {
        self.states
            .iter()
            .find(|s| s.flags & FLAG_BAD_Q_ABS_REF != 0)
            .map(|s| {
                (
                    s.bad_q_abs_ref_steps,
                    f32::from_bits(s.last_bad_q_abs_ref_bits),
                    s.last_bad_q_abs_ref_step,
                )
            })
    }
}

/// `result.map_err(..)` for the session's own cust calls: a driver error naming `operation`
/// (no device, an invalid device or an uninitialised driver stay [`Error::NoDevice`], as
/// [`Error`]'s `From<CudaError>` makes them).
trait During<T> {
    fn during(self, operation: &str) -> Result<T>;
}

impl<T> During<T> for std::result::Result<T, CudaError> {
    fn during(self, operation: &str) -> Result<T> {
        self.map_err(|source| match Error::from(source) {
            Error::Cuda { source, .. } => Error::Cuda {
                operation: operation.to_string(),
                source,
            },
            other => other,
        })
    }
}

/// The seed's training step, owned whole: the eight [`TrainingGroups`], one step-state record
/// per group (the decision transformer's with the clamp disabled, [`DT_CLAMP_DISABLED`]; every
/// other group's bound `100 × max(Q_ABS_REF, 1)` from the device `Q_ABS_REF`), the device
/// `grad_scale` the DQN groups read, and optionally the 49-slot NaN check with thresholds from
/// the same device `Q_ABS_REF`. Everything runs on the runtime's stream.
///
/// One step is: the guard pass over every group's gradients (whose last block advances the
/// records), the groups' update ([`OptimizerLaunch`]: by default one fused launch over every
/// group, each with its own rule and record; or one stepped launch per group, in a graph eight
/// branches that overlap), the NaN check of the activations beside it, then one event. The advance and the check write the records and
/// the check's results straight into page-locked host memory (no copy nodes), which
/// [`TrainingSession::report`] reads after the event. Because the session owns every buffer its graph uses and drops the graph first,
/// the graph cannot outlive them, and the host reaches the buffers only through methods that
/// cannot free or move them.
///
/// ```
/// use adamant_rl::{GroupSizes, SessionConfig, TrainingGroups, TrainingSession};
/// use adamant_runtime::{AdamHyper, Adamant, GroupBuffer, QAbsRef};
///
/// # fn main() -> adamant_runtime::Result<()> {
/// # let rt = match Adamant::new() {
/// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
/// #     other => other?,
/// # };
/// let sizes = GroupSizes { dqn_trunk: 4096, dqn_heads: 1024, iqn_online: 2048, iql: 1024,
///     attention: 1024, tlob: 512, curiosity: 512, decision_transformer: 256 };
/// let groups = TrainingGroups::new(sizes, |_, n| vec![0.01; n])?;
/// let cfg = SessionConfig::uniform(AdamHyper::pytorch_defaults(1)?);
/// let mut session =
///     TrainingSession::new(&rt, groups, cfg, QAbsRef::Owned { initial: 1.0 }, None)?;
/// session.capture()?; // recorded once
/// for step in 1..=100u32 {
///     session.upload("iqn_online", GroupBuffer::Grads, &vec![1e-3; 2048])?; // a new gradient
///     session.set_lr_all(1e-3 / step as f32)?; // a schedule
///     if step == 50 {
///         session.set_q_abs_ref(2.5)?; // bound 250 from the next step on
///     }
///     session.replay()?; // t, bias corrections and bound advance on the device
/// }
/// let report = session.report()?; // waits for the last step's event only
/// assert_eq!(report.states[0].step, 100);
/// assert_eq!(report.states[0].bound, 250.0);
/// # Ok(())
/// # }
/// ```
pub struct TrainingSession<'rt> {
    // The graph keeps a share of everything it uses, so field order does not matter for it.
    graph: Option<StepGraph<'rt>>,
    checker: Option<NanChecker<'rt>>,
    states: StepStates,
    /// Every group's gradients, each judging its own record: each step's guard pass, one
    /// launch.
    guard: GradientGuard,
    groups: TrainingGroups,
    grad_scale: DeviceScalar,
    /// The value last written to `grad_scale` (in stream order: what the next step reads).
    grad_scale_value: f32,
    /// Recorded after each step when there is no checker (the checker's own event marks the
    /// step's end otherwise): one event record per step.
    done: Event,
    uniforms: Uniforms,
    /// How the step updates the groups ([`TrainingSession::set_optimizer_launch`]).
    launch: OptimizerLaunch,
    /// The fused launch's tables and diagnostics records: one tensor per group, in record
    /// order (used by [`OptimizerLaunch::Fused`]).
    fused: FusedSet,
    /// Steps run with each launch: [`OptimizerLaunch::Fused`]'s, then
    /// [`OptimizerLaunch::PerGroup`]'s. Each kind publishes its own records (the fused set's,
    /// the groups'), whose sequence must equal its count for the report to be this step's.
    launched: [u64; 2],
    /// Every slot that watches a group, derived from the groups: their results come from the
    /// groups' diagnostics records.
    group_slots: Vec<GroupSlot>,
    rt: &'rt Adamant,
    steps: u64,
}

/// The record whose `q_abs_ref_eff` the NaN check's thresholds read (the DQN trunk's, which
/// follows the device `Q_ABS_REF`).
const CHECK_RECORD: usize = 0;
/// The decision transformer's record (its clamp is disabled).
const DT_RECORD: usize = 7;

impl<'rt> TrainingSession<'rt> {
    /// A session over `groups`, with `cfg`'s hyperparameters and the device `Q_ABS_REF` from
    /// `q_abs_ref`. With `activations` (bindings of the seed's table,
    /// [`SEED_TABLE`](crate::SEED_TABLE)), every group slot of the 49-slot table is
    /// bound to the groups and the activation slots must be bound in `activations` (the
    /// bindings keep a share of their buffers, so they stay allocated for the session's checks);
    /// the check then runs at the end of every step.
    ///
    /// # Errors
    ///
    /// Before anything is allocated: [`Error::InvalidHyper`] for a hyperparameter out of range
    /// (curiosity's `weight_decay` must be 0; IQL's `grad_clip` `>= 0`), and those of
    /// [`StepStates::new`]; [`Error::WrongSlotTable`] for `activations` of another table; the
    /// checker's ([`NanChecker::new`]), such as [`Error::UnboundSlot`]; [`Error::Cuda`] or [`Error::OutOfMemory`] for the allocations.
    pub fn new(
        rt: &'rt Adamant,
        groups: TrainingGroups,
        cfg: SessionConfig,
        q_abs_ref: QAbsRef<'rt>,
        activations: Option<SlotBindings>,
    ) -> Result<Self> {
        let bounds = Self::default_bounds();
        Self::with_bounds(rt, groups, cfg, q_abs_ref, activations, bounds)
    }

    /// The seed's bounds, in [`TrainingGroups::all`]'s order: every group from the device
    /// `Q_ABS_REF`, the decision transformer's clamp disabled ([`DT_CLAMP_DISABLED`]).
    pub fn default_bounds() -> [StepBound; GROUP_COUNT] {
        let mut bounds = [StepBound::FromQAbsRef; GROUP_COUNT];
        bounds[DT_RECORD] = StepBound::Policy(ClampPolicy::disabled(DT_CLAMP_DISABLED));
        bounds
    }

    /// As [`TrainingSession::new`], with each group's bound given (in [`TrainingGroups::all`]'s
    /// order): to replay a state without a clamp (`examples/nan_sentinel.rs` disables the IQN
    /// group's, with its reason), or to fix a bound for a test.
    ///
    /// # Errors
    ///
    /// As [`TrainingSession::new`], and a policy's errors ([`ClampPolicy::bound`]).
    pub fn with_bounds(
        rt: &'rt Adamant,
        groups: TrainingGroups,
        cfg: SessionConfig,
        q_abs_ref: QAbsRef<'rt>,
        activations: Option<SlotBindings>,
        bounds: [StepBound; GROUP_COUNT],
    ) -> Result<Self> {
        cfg.validate()?;
        let extra_bounds = groups.extra.iter().map(|_| StepBound::FromQAbsRef);
        let amsgrad: Vec<bool> = groups.every().iter().map(|g| g.has_amsgrad()).collect();
        // Each record holds its group's rule's hyperparameters, made for its kernel, and every
        // group's step guards itself: a non-finite gradient skips its step.
        let specs = amsgrad
            .iter()
            .zip(bounds.into_iter().chain(extra_bounds))
            .enumerate()
            .map(|(i, (&amsgrad, bound))| {
                GroupRule::of(i, amsgrad)
                    .spec(&cfg, bound)?
                    .guarded(GuardSpec::SKIP_NON_FINITE)
            })
            .collect::<Result<Vec<_>>>()?;
        let shapes: Vec<GroupShape<'_>> = groups
            .every()
            .into_iter()
            .map(|g| GroupShape {
                name: g.name(),
                amsgrad: g.has_amsgrad(),
            })
            .collect();
        let group_slots = group_slots(TABLE, &shapes)?;
        let states = StepStates::new(&specs, q_abs_ref)?;
        let every = groups.every();
        let grads: Vec<&dyn ReadBuffer> = every
            .iter()
            .map(|g| {
                g.buffer(GroupBuffer::Grads)
                    .expect("every group has gradients")
            })
            .collect();
        let guard = GradientGuard::one_per_record(&grads)?;
        let grad_scale = DeviceScalar::new(1.0)?;
        let grad_ptr = grad_scale.uniform_ptr();
        let uniforms = Uniforms {
            dqn: dqn_adam_update_kernel::StepScalars {
                grad_scale: grad_ptr,
            },
            iqn: iqn_adam_kernel::StepScalars {},
            iql: iql_adam_kernel::StepScalars {},
            attention: attn_adam_kernel::StepScalars {},
            curiosity: curiosity_adam_step::StepScalars {},
        };
        // The checker kernel reads the activations only: every group slot's result comes from
        // its group's records, so its binding is left empty (no work for the kernel).
        let checker = match activations {
            Some(mut bindings) => {
                if bindings.table() != TABLE {
                    return Err(Error::WrongSlotTable {
                        what: "a TrainingSession",
                        expected: TABLE.name(),
                        table: bindings.table().name(),
                    });
                }
                for slot in group_slots.iter().filter(|s| s.in_table) {
                    let id = TABLE.id(slot.index).expect("a slot of the table");
                    bindings.leave_to_records(id)?;
                }
                Some(NanChecker::new(rt, TABLE.all(), &bindings)?)
            }
            None => None,
        };
        Ok(TrainingSession {
            graph: None,
            checker,
            states,
            guard,
            groups,
            grad_scale,
            grad_scale_value: 1.0,
            done: Event::new(EventFlags::DISABLE_TIMING).during("creating the session event")?,
            uniforms,
            launch: OptimizerLaunch::default(),
            fused: FusedSet::new(),
            launched: [0; 2],
            group_slots,
            rt,
            steps: 0,
        })
    }

    /// The groups' names, in record order ([`TrainingGroups::every`]'s).
    pub fn group_names(&self) -> Vec<&str> {
        self.groups
            .every()
            .into_iter()
            .map(ParamGroup::name)
            .collect()
    }

    /// Every slot that watches a group, in index order: the table's, then those derived for
    /// the groups it does not cover.
    pub fn group_slots(&self) -> &[GroupSlot] {
        &self.group_slots
    }

    /// The groups, read only: their lengths, device addresses and read-only slices (for kernels
    /// of another library that read them on the runtime's stream), and downloads.
    pub fn groups(&self) -> &TrainingGroups {
        &self.groups
    }

    /// The step-state records (their device addresses, the lr last set, a synchronous read).
    pub fn states(&self) -> &StepStates {
        &self.states
    }

    /// Steps run so far (eager steps and replays).
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// How the step updates its groups ([`OptimizerLaunch::Fused`] unless set).
    pub fn optimizer_launch(&self) -> OptimizerLaunch {
        self.launch
    }

    /// Sets how the next steps update the groups. Both launches give the same results bit for
    /// bit; a changed launch drops the captured graph (capture again before replaying).
    pub fn set_optimizer_launch(&mut self, launch: OptimizerLaunch) {
        if launch != self.launch {
            self.graph = None;
            self.launch = launch;
        }
    }

    /// Whether a graph has been captured ([`TrainingSession::capture`]).
    pub fn is_captured(&self) -> bool {
        self.graph.is_some()
    }

    /// One step now, eagerly: the same launches a replay runs, enqueued one by one.
    ///
    /// # Errors
    ///
    /// Those of the launches (validated before each is enqueued) and [`Error::Cuda`].
    pub fn step(&mut self) -> Result<()> {
        let stream = self.rt.stream();
        {
            let (before, branches, after) = self.phases();
            before(stream)?;
            for branch in branches {
                branch(stream)?;
            }
            after(stream)?;
        }
        self.finish_step(stream)
    }

    /// Records one step into a graph (replacing any earlier one), without running it; returns
    /// the graph's node count. Every launch is validated as it is recorded.
    ///
    /// # Errors
    ///
    /// As [`Adamant::capture_step`].
    pub fn capture(&mut self) -> Result<usize> {
        self.graph = None;
        if self.launch == OptimizerLaunch::Fused {
            // The fused launch's tables are built before the capture (a capture cannot upload).
            let TrainingSession {
                groups,
                uniforms,
                fused,
                states,
                ..
            } = self;
            optimizer_launch::sync_fused(groups, uniforms, states, fused)?;
        }
        let rt = self.rt;
        let graph = {
            let (before, branches, after) = self.phases();
            rt.capture_step(before, branches, after)?
        };
        let nodes = graph.nodes();
        // The graph keeps the groups' buffers, the records, grad_scale and the checker's tables
        // and bindings alive itself (each launch handed them to the capture).
        self.graph = Some(graph);
        Ok(nodes)
    }

    /// Enqueues one replay of the captured step, then the event [`TrainingSession::report`]
    /// waits for: one graph launch and one event record on the host.
    ///
    /// # Errors
    ///
    /// [`Error::Capture`] if nothing was captured, or if the driver refuses the launch.
    pub fn replay(&mut self) -> Result<()> {
        let stream = self.rt.stream();
        let graph = self.graph.as_ref().ok_or_else(|| Error::Capture {
            operation: "TrainingSession::replay before TrainingSession::capture".into(),
        })?;
        graph.launch(stream)?;
        self.finish_step(stream)
    }

    fn finish_step(&mut self, stream: &Stream) -> Result<()> {
        self.steps += 1;
        self.launched[launch_index(self.launch)] += 1;
        match self.checker.as_mut() {
            Some(checker) => checker.record_done(stream),
            None => self
                .done
                .record(stream)
                .during("recording the session event"),
        }
    }

    /// The step's launches: `before` (the guard pass and the advance), one branch per group and
    /// one for the activation check, `after` (nothing today).
    /// Built by one function for the eager step and the capture.
    fn phases(&mut self) -> (Branch<'_>, Vec<Branch<'_>>, Branch<'_>) {
        let TrainingSession {
            checker,
            states,
            guard,
            groups,
            uniforms,
            launch,
            fused,
            rt,
            ..
        } = self;
        let (rt, states, u, guard, launch) = (*rt, &*states, *uniforms, &*guard, *launch);
        // Every group's gradients judged in one pass (a non-finite one skips that group's
        // step), whose last block then advances the records.
        let before: Branch<'_> =
            Box::new(move |s: &Stream| guard.enqueue_and_advance(rt, s, states));
        // Every group with its own rule and record (record `i` is group `i` of
        // `TrainingGroups::every`): one fused launch, or one launch per group side by side.
        let mut branches = match launch {
            OptimizerLaunch::Fused => vec![optimizer_launch::fused(rt, states, u, groups, fused)],
            OptimizerLaunch::PerGroup => optimizer_launch::per_group(rt, states, u, groups),
        };
        // The activation check reads the activations and the advanced record's reference, and
        // nothing any group writes: its own branch, beside the groups, so a replay does not
        // wait for it after the last group (issue 25). The records reach the host through the
        // advance's own page-locked copy, and the check's results through its kernel's: no
        // copy nodes.
        if let Some(checker) = checker.as_mut() {
            branches.push(Box::new(move |s: &Stream| {
                checker.enqueue_with_step_state(s, states, CHECK_RECORD)
            }));
        }
        let after: Branch<'_> = Box::new(|_: &Stream| Ok(()));
        (before, branches, after)
    }

    /// Sets the learning rate of group `group`'s record for the next steps (eager or replayed):
    /// one stream-ordered write.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownGroup`] for a name that is not a group; those of
    /// [`StepStates::set_lr`].
    pub fn set_lr(&self, group: &str, lr: f32) -> Result<()> {
        let index = self.record_of(group)?;
        self.states.set_lr(self.rt.stream(), index, lr)
    }

    /// Sets every group's learning rate: validated for all groups before the first is written.
    ///
    /// # Errors
    ///
    /// As [`TrainingSession::set_lr`].
    pub fn set_lr_all(&self, lr: f32) -> Result<()> {
        for i in 0..self.group_names().len() {
            self.states.set_lr(self.rt.stream(), i, lr)?;
        }
        Ok(())
    }

    /// Writes the session's own device `Q_ABS_REF` for the next steps ([`QAbsRef::Owned`]):
    /// any value, as the ISV would produce it; a NaN, infinite or negative one keeps the previous
    /// bound and is reported ([`SessionReport::bad_q_abs_ref`]).
    ///
    /// # Errors
    ///
    /// As [`StepStates::set_q_abs_ref`].
    pub fn set_q_abs_ref(&self, value: f32) -> Result<()> {
        self.states.set_q_abs_ref(self.rt.stream(), value)
    }

    /// Writes the device `grad_scale` (the global-norm clip coefficient the DQN groups multiply
    /// their gradients by) for the next steps: one stream-ordered write. Like any device input it
    /// is not validated: a NaN makes NaN weights, which the check reports.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] if the driver refuses the write.
    pub fn set_grad_scale(&mut self, value: f32) -> Result<()> {
        self.grad_scale.set_async(value, self.rt.stream())?;
        self.grad_scale_value = value;
        Ok(())
    }

    /// Copies `data` into `buffer` of group `group` (new gradients, or a checkpoint's weights and
    /// moments), ordered after the steps enqueued before it (see [`ParamGroup::upload`]).
    ///
    /// # Errors
    ///
    /// [`Error::UnknownGroup`] for a name that is not a group; those of
    /// [`ParamGroup::upload`].
    pub fn upload(&mut self, group: &str, buffer: GroupBuffer, data: &[f32]) -> Result<()> {
        let index = self.record_of(group)?;
        self.groups
            .every_mut()
            .swap_remove(index)
            .upload(buffer, data)
    }

    /// `buffer` of group `group`, after the steps enqueued before it (see
    /// [`ParamGroup::download`]).
    ///
    /// # Errors
    ///
    /// As [`TrainingSession::upload`].
    pub fn download(&self, group: &str, buffer: GroupBuffer) -> Result<Vec<f32>> {
        let index = self.record_of(group)?;
        self.groups.every()[index].download(buffer)
    }

    /// Waits for the last step's event (not for the device, nor for work enqueued after that
    /// step), then returns what the step's kernels wrote into page-locked memory: every record
    /// (from the advance) and the NaN check (from its last block).
    ///
    /// # Errors
    ///
    /// [`Error::NanCheckNotEnqueued`] before the first step; [`Error::Cuda`] if that step's work
    /// failed.
    pub fn report(&self) -> Result<SessionReport> {
        if self.steps == 0 {
            return Err(Error::NanCheckNotEnqueued);
        }
        // The checker's report waits for its event, recorded at the end of the step; without a
        // checker the session's own event is.
        let checked = match self.checker.as_ref() {
            Some(checker) => Some(checker.report()?),
            None => {
                self.done
                    .synchronize()
                    .during("waiting for the session event")?;
                None
            }
        };
        let states = self.states.last_advanced();
        let q_abs_ref_eff = checked
            .as_ref()
            .map_or(states[CHECK_RECORD].q_abs_ref_eff, |c| c.q_abs_ref_eff);
        let groups = self.groups.every();
        let records = self.group_records(&groups)?;
        let record_of = |name: &str| {
            let i = groups
                .iter()
                .position(|g| g.name() == name)
                .expect("group slots are derived from these groups");
            (i, &records[i], groups[i].len())
        };
        let mut nan = checked.unwrap_or_else(|| NanReport {
            table: TABLE,
            range: TABLE.all(),
            q_abs_ref_eff,
            slots: Vec::new(),
        });
        let guards = self.states.last_guards();
        for slot in &self.group_slots {
            let (i, record, len) = record_of(&slot.group);
            let result = result_from_record(slot, record, len, q_abs_ref_eff);
            let result = with_guard(result, slot, &guards[i]);
            match nan.slots.iter_mut().find(|s| s.index == slot.index) {
                Some(kernel_result) => *kernel_result = result,
                None => nan.slots.push(result),
            }
        }
        nan.slots.sort_by_key(|s| s.index);
        let pressure = groups
            .iter()
            .zip(&records)
            .zip(&states)
            .map(|((g, t), state)| ClampPressure {
                group: g.name().to_string(),
                step: self.steps,
                clamped: t.clamped,
                first_clamped: (t.first_clamped != NO_INDEX).then_some(t.first_clamped),
                max_raw: t.max_raw(),
                bound: state.bound,
                raw_non_finite: t.raw_non_finite,
                len: g.len(),
            })
            .collect();
        Ok(SessionReport {
            steps: self.steps,
            states,
            guards,
            nan,
            pressure,
        })
    }

    /// Each group's diagnostics record of the last step, from the records its launch published
    /// (the fused set's tensor `i`, or group `i`'s own).
    ///
    /// # Errors
    ///
    /// [`Error::RecordsStale`] when those records are not of the last step: the launch that
    /// published them ran a different number of times than the session's steps with it.
    fn group_records(&self, groups: &[&ParamGroup]) -> Result<Vec<TensorRecord>> {
        let launched = self.launched[launch_index(self.launch)] & u32::MAX as u64;
        let stale = |group: String, sequence: u32| Error::RecordsStale {
            group,
            sequence,
            steps: self.steps,
        };
        match self.launch {
            OptimizerLaunch::Fused => {
                let group = || "every group (the fused launch)".to_string();
                let launch = self.fused.records().ok_or_else(|| stale(group(), 0))?;
                if launch.sequence as u64 != launched || launch.tensors.len() != groups.len() {
                    return Err(stale(group(), launch.sequence));
                }
                Ok(launch.tensors)
            }
            OptimizerLaunch::PerGroup => groups
                .iter()
                .map(|group| {
                    let r = group.records();
                    if r.sequence as u64 != launched {
                        return Err(stale(group.name().to_string(), r.sequence));
                    }
                    Ok(r.tensors.into_iter().next().expect("one tensor per group"))
                })
                .collect(),
        }
    }

    fn record_of(&self, group: &str) -> Result<usize> {
        self.group_names()
            .iter()
            .position(|n| *n == group)
            .ok_or_else(|| Error::UnknownGroup {
                group: group.to_string(),
            })
    }
}

/// The index of `launch`'s count in `TrainingSession::launched`.
fn launch_index(launch: OptimizerLaunch) -> usize {
    match launch {
        OptimizerLaunch::Fused => 0,
        OptimizerLaunch::PerGroup => 1,
    }
}
