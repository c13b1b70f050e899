//! Device-resident step state on the host side: [`StepStates`] owns an array of
//! [`StepRecord`]s (one per set of tensors), advances them on the device (and runs the schedule
//! of each record's kernel), and takes the host's between-step writes (a learning-rate schedule,
//! a hyperparameter, the owned `Q_ABS_REF`) as stream-ordered writes of one word, validated first.
//! The stepped launches ([`Launch::stepped`](crate::Launch::stepped),
//! [`Launch::set`](crate::Launch::set)) read their bound and
//! every scalar from a record, so a replayed graph trains, and a value the host changes between
//! replays is the value the next replay uses.
use std::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use adamant_device::abi::{ArgValue, KernelDescriptor, Lifetime};
use adamant_device::step::{
    StepGuard, StepRecord, StepState, BOUND_FIXED, BOUND_FROM_Q_ABS_REF, GUARD_LOSS_SCALE,
    INITIAL_Q_ABS_REF_EFF, RECORD_SCALARS,
};
use adamant_kernels::step::step_advance_kernel;
use cust::memory::DeviceCopy;
use cust::stream::Stream;

use crate::args::arg_pointers;
use crate::buffers::{keep_of, ReadBuffer};
use crate::clamp_policy::BOUND_FACTOR;
use crate::device::Adamant;
use crate::error::{CudaContext, Error, Result};
use crate::host_mapped::HostMapped;
use crate::hyper::{scalar_domain, AdamHyper};
use crate::memory::{DeviceMemory, Keep};

pub(crate) mod restore;
mod scalars;
mod spec;

pub(crate) use restore::RecordsRestore;
pub use spec::{GuardSpec, LossScale, RecordKernel, StepBound, StepSpec};

/// `StepRecord` is plain `#[repr(C)]` data defined in `adamant-abi`, which does not depend on
/// cust; this wrapper carries cust's `DeviceCopy` for it.
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub(crate) struct DeviceStepRecord(pub(crate) StepRecord);
// SAFETY: `StepRecord` is `#[repr(C)]` of integers and floats only (its `q_abs_ref` is a device
// address held as a `u64`), valid for any bit pattern.
unsafe impl DeviceCopy for DeviceStepRecord {}

/// The device `Q_ABS_REF` that [`StepBound::FromQAbsRef`] records read.
#[derive(Clone, Copy)]
pub enum QAbsRef<'q> {
    /// One `f32` owned by the [`StepStates`], starting at `initial`, written by
    /// [`StepStates::set_q_abs_ref`].
    Owned {
        /// Its value before the first write.
        initial: f32,
    },
    /// Element `index` of the caller's buffer (the seed's ISV vector, say), which whatever
    /// computes it writes on the device. The [`StepStates`] keeps a share of the buffer's
    /// allocation, so the records never read freed memory, whatever becomes of the buffer.
    Slot {
        /// The buffer.
        buffer: &'q dyn ReadBuffer,
        /// The element holding `Q_ABS_REF`.
        index: usize,
    },
}

impl std::fmt::Debug for QAbsRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QAbsRef::Owned { initial } => write!(f, "Owned {{ initial: {initial} }}"),
            QAbsRef::Slot { buffer, index } => write!(
                f,
                "Slot {{ buffer: {:#x} ({} elements), index: {index} }}",
                buffer.device_ptr(),
                buffer.len()
            ),
        }
    }
}

/// What the host knows of one record: the values it validated and wrote, and the entries that
/// launched with it (a new lr must lie in each one's domain).
#[derive(Clone, Debug)]
struct Mirror {
    lr: f32,
    beta1: f32,
    beta2: f32,
    /// The kernel the record was made for, if any.
    kernel: Option<RecordKernel>,
    /// The record's own words as the host last wrote them (the `#[derived]` ones as they were
    /// made: the device computes them after).
    words: [u32; RECORD_SCALARS],
    /// The record's guard mode (0: unguarded).
    guard_mode: u32,
    /// Whether a guard run was enqueued for the record since its last advance.
    guard_pending: bool,
    /// The smallest bound the record can hold: the one it starts with. A fixed bound
    /// ([`StepBound::Policy`]) never changes, and one the device computes from `Q_ABS_REF`
    /// starts at [`BOUND_FACTOR`] and never goes below it (`q_abs_ref_eff` is at least 1).
    smallest_bound: f32,
    /// [`BOUND_FIXED`] or [`BOUND_FROM_Q_ABS_REF`], for the run.
    bound_mode: u32,
    users: Vec<&'static KernelDescriptor>,
}

impl Mirror {
    /// What the host knows of a record made from `spec`, with `words` and `bound`.
    fn of(spec: &StepSpec, words: [u32; RECORD_SCALARS], bound: f32) -> Mirror {
        Mirror {
            lr: spec.lr,
            beta1: spec.beta1,
            beta2: spec.beta2,
            kernel: spec.kernel.clone(),
            words,
            guard_mode: spec.step_guard().map_or(0, |g| g.mode),
            guard_pending: false,
            smallest_bound: bound,
            bound_mode: match spec.bound {
                StepBound::FromQAbsRef => BOUND_FROM_Q_ABS_REF,
                StepBound::Policy(_) => BOUND_FIXED,
            },
            users: Vec::new(),
        }
    }
}

/// An array of device-resident [`StepState`] records, one per set of tensors that steps
/// together (each may have its own lr, betas and bound), and the device `Q_ABS_REF` they read.
///
/// One step is: [`StepStates::advance`] (one launch: `t += 1`, the bias corrections, the bound
/// from `Q_ABS_REF`), then the stepped launches that read the records. Recorded into a graph,
/// every replay advances the records itself. Between steps the host sets the next lr
/// ([`StepStates::set_lr`]) or the owned `Q_ABS_REF` ([`StepStates::set_q_abs_ref`]) with one
/// stream-ordered write each, and reads the records back ([`StepStates::read`]).
pub struct StepStates {
    records: Arc<DeviceMemory<DeviceStepRecord>>,
    /// What each advance wrote, in page-locked host memory the advance kernel writes directly:
    /// the records of the last step, readable after that step's event with no copy.
    advanced_host: Arc<HostMapped<DeviceStepRecord>>,
    /// Per kernel schedule among the records' kernels: its entry and the indices of the records
    /// made for it, which every advance hands it.
    schedules: Vec<ScheduleTable>,
    /// The `Q_ABS_REF` word's allocation: owned ([`QAbsRef::Owned`]) or a share of the caller's
    /// buffer ([`QAbsRef::Slot`]).
    q_word: Keep,
    owns_q: bool,
    q_abs_ref_ptr: u64,
    mirror: Mutex<Vec<Mirror>>,
    /// Whether an advance was enqueued or recorded: a stepped launch needs one before it.
    advanced: AtomicBool,
}

impl StepStates {
    /// One record per spec, uploaded (synchronously: this is setup). Needs a current context
    /// (an [`Adamant`] alive).
    ///
    /// # Errors
    ///
    /// Before anything is allocated: [`Error::InvalidHyper`] for an lr or beta out of the Adam
    /// kernels' domains, the policy's errors ([`ClampPolicy::bound`](crate::ClampPolicy::bound)), and for a
    /// [`QAbsRef::Slot`] past the end of its buffer [`Error::StepIndex`]. [`Error::OutOfMemory`]
    /// or [`Error::Cuda`] for the upload.
    pub fn new(specs: &[StepSpec], q_abs_ref: QAbsRef<'_>) -> Result<Self> {
        let mut records = Vec::with_capacity(specs.len());
        let mut mirror = Vec::with_capacity(specs.len());
        for spec in specs {
            AdamHyper {
                lr: spec.lr,
                beta1: spec.beta1,
                beta2: spec.beta2,
                eps: 1.0,
                weight_decay: 0.0,
                step: 1,
            }
            .validate_rates()?;
            let (bound_mode, bound) = match spec.bound {
                StepBound::FromQAbsRef => (BOUND_FROM_Q_ABS_REF, BOUND_FACTOR),
                StepBound::Policy(policy) => (BOUND_FIXED, policy.bound()?),
            };
            let t = spec.steps_taken;
            let state = StepState {
                lr: spec.lr,
                bias_correction1: adamant_device::step::bias_correction(spec.beta1, t),
                bias_correction2: adamant_device::step::bias_correction(spec.beta2, t),
                bound,
                beta1: spec.beta1,
                beta2: spec.beta2,
                step: t,
                bound_mode,
                q_abs_ref: 0,
                bound_factor: BOUND_FACTOR,
                q_abs_ref_eff: INITIAL_Q_ABS_REF_EFF,
                flags: 0,
                bad_q_abs_ref_steps: 0,
                last_bad_q_abs_ref_bits: 0,
                last_bad_q_abs_ref_step: 0,
            };
            let words = spec.words();
            records.push(StepRecord {
                state,
                guard: spec.step_guard()?,
                scalars: words,
            });
            mirror.push(Mirror::of(spec, words, bound));
        }
        let (q_word, owns_q, q_abs_ref_ptr): (Keep, bool, u64) = match q_abs_ref {
            QAbsRef::Owned { initial } => {
                let word = DeviceMemory::from_host(&[initial], "the step state's Q_ABS_REF")?;
                let ptr = word.address();
                (word, true, ptr)
            }
            QAbsRef::Slot { buffer, index } => {
                if buffer.storage() != adamant_device::abi::Storage::F32 {
                    return Err(Error::BufferStorage {
                        operation: "a Q_ABS_REF slot",
                        buffer: "the step states' Q_ABS_REF buffer",
                        storage: buffer.storage(),
                        needs: "an f32 buffer (every advance reads Q_ABS_REF as f32)",
                    });
                }
                if index >= buffer.len() {
                    return Err(Error::StepIndex {
                        index,
                        len: buffer.len(),
                    });
                }
                let ptr = buffer.device_ptr() + (index * size_of::<f32>()) as u64;
                (keep_of(buffer), false, ptr)
            }
        };
        for r in &mut records {
            if r.state.bound_mode == BOUND_FROM_Q_ABS_REF {
                r.state.q_abs_ref = q_abs_ref_ptr;
            }
        }
        let schedules = schedule_tables(&mirror)?;
        let device: Vec<DeviceStepRecord> = records.into_iter().map(DeviceStepRecord).collect();
        let records = DeviceMemory::from_host(&device, "the step-state records")?;
        let advanced_host = HostMapped::new(
            &DeviceStepRecord(StepRecord::default()),
            device.len(),
            "step-state records",
        )?;
        // The upload ran on the legacy default stream from pageable memory; make it land before
        // any stream (blocking or not) reads the records. Setup only.
        cust::context::CurrentContext::synchronize()
            .during("synchronizing after the step-state upload")?;
        Ok(StepStates {
            records,
            advanced_host: Arc::new(advanced_host),
            schedules,
            q_word,
            owns_q,
            q_abs_ref_ptr,
            mirror: Mutex::new(mirror),
            advanced: AtomicBool::new(false),
        })
    }

    /// What a graph that records a launch reading (or an advance writing) these records keeps:
    /// the records, their page-locked copy, the schedules' index tables and the `Q_ABS_REF`
    /// word's allocation.
    pub(crate) fn keeps(&self) -> Vec<Keep> {
        let mut keeps: Vec<Keep> = vec![
            self.records.clone(),
            self.advanced_host.clone(),
            self.q_word.clone(),
        ];
        keeps.extend(self.schedules.iter().map(|(_, t)| t.clone() as Keep));
        keeps
    }

    /// How many records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.records.len() == 0
    }

    /// Device address of record `index` (what a stepped entry's `step_state` receives).
    ///
    /// # Errors
    ///
    /// [`Error::StepIndex`] past the end.
    pub fn record_ptr(&self, index: usize) -> Result<u64> {
        if index >= self.len() {
            return Err(Error::StepIndex {
                index,
                len: self.len(),
            });
        }
        Ok(self.records.address() + (index * size_of::<StepRecord>()) as u64)
    }

    /// Device address of record `index`'s `q_abs_ref_eff`, the `max(Q_ABS_REF, 1)` its last
    /// advance accepted: what the NaN checker's thresholds read in a session.
    ///
    /// # Errors
    ///
    /// [`Error::StepIndex`] past the end.
    pub fn q_abs_ref_eff_ptr(&self, index: usize) -> Result<u64> {
        Ok(self.record_ptr(index)?
            + (offset_of!(StepRecord, state) + offset_of!(StepState, q_abs_ref_eff)) as u64)
    }

    /// Device address of record `index`'s loss scale (one `f32`), for a record guarded with
    /// [`GuardSpec::loss_scale`]: the backward of each step multiplies its loss by the value
    /// there (read on the device, so a replayed graph scales by the current value, which each
    /// guard run updates: halved after an overflow, doubled after `growth_interval` clean
    /// steps).
    ///
    /// # Errors
    ///
    /// [`Error::StepIndex`] past the end; [`Error::NotGuarded`] for a record without loss
    /// scaling (its word would never change: no backward should scale by it).
    pub fn loss_scale_address(&self, index: usize) -> Result<u64> {
        let address = self.record_ptr(index)?;
        let mode = self.mirror.lock().unwrap_or_else(|e| e.into_inner())[index].guard_mode;
        if mode & GUARD_LOSS_SCALE == 0 {
            return Err(Error::NotGuarded { index });
        }
        Ok(address + (offset_of!(StepRecord, guard) + offset_of!(StepGuard, loss_scale)) as u64)
    }

    /// Device address of the `Q_ABS_REF` the [`StepBound::FromQAbsRef`] records read.
    pub fn q_abs_ref_ptr(&self) -> u64 {
        self.q_abs_ref_ptr
    }

    /// Enqueues one advance of every record on `stream` (one launch of `step_advance_kernel`):
    /// `t += 1`, the bias corrections from the new `t`, and each
    /// [`StepBound::FromQAbsRef`] record's bound from the device `Q_ABS_REF` as it is when the
    /// advance runs; then, for the records made for a kernel with a schedule, one launch of that
    /// kernel's schedule entry (`<kernel>_schedule`), which computes their `#[derived]` scalars
    /// for the new `t`. Recorded into a graph, every replay advances.
    ///
    /// # Errors
    ///
    /// [`Error::MissingKernel`] if a loaded module lacks an entry (a kernel crate's module not
    /// added with [`Adamant::add_module`]); [`Error::Cuda`] if the driver refuses a launch.
    pub fn advance(&self, rt: &Adamant, stream: &Stream) -> Result<()> {
        let kernel = step_advance_kernel::DESCRIPTOR.name;
        let n = self.len() as u32;
        if n == 0 {
            self.advanced.store(true, Ordering::Release);
            return Ok(());
        }
        let function = rt.function(&step_advance_kernel::DESCRIPTOR)?;
        let schedules = self.begin_advance(rt, stream, kernel, &[], Vec::new)?;
        let mut values = advance_args(self.records.address(), n, self.advanced_host.device_ptr());
        let params = arg_pointers(&mut values);
        const THREADS: u32 = 32;
        // SAFETY: the entry's three parameters (checked against its descriptor), the
        // records array we own with `n` records and our mapped page-locked copy of
        // the same length.
        unsafe { stream.launch(function, n.div_ceil(THREADS), THREADS, 0, &params) }
            .during_with(|| format!("launching {kernel} ({n} records)"))?;
        self.launch_schedules(stream, schedules)
    }

    /// Everything an advance checks and records before its launch, shared by
    /// [`StepStates::advance`] and the guard's fused advance
    /// ([`GradientGuard::enqueue_and_advance`](crate::GradientGuard::enqueue_and_advance)), whose
    /// launch judges the records `judged` first. Nothing is enqueued and no host state changes
    /// unless every check passes: every schedule entry is loaded (a missing one must not leave
    /// the records advanced without their derived values), every guarded record has its guard
    /// run (enqueued before, or `judged` here), and `stream`'s capture (if any) keeps the
    /// records and `keeps`. Returns the schedules to launch after the advance.
    pub(crate) fn begin_advance<'f>(
        &self,
        rt: &'f Adamant,
        stream: &Stream,
        kernel: &'static str,
        judged: &[usize],
        keeps: impl FnOnce() -> Vec<Keep>,
    ) -> Result<Vec<PendingSchedule<'_, 'f>>> {
        let schedules = self
            .schedules
            .iter()
            .map(|(d, table)| Ok((*d, rt.function(d)?, table)))
            .collect::<Result<Vec<_>>>()?;
        let mut mirror = self.mirror.lock().unwrap_or_else(|e| e.into_inner());
        self.check_judged(&mirror, judged)?;
        // A guarded record's step needs its guard run first (the device would skip it
        // otherwise, flagged); refused here, before anything is enqueued.
        if let Some(index) = mirror
            .iter()
            .enumerate()
            .position(|(i, r)| r.guard_mode != 0 && !r.guard_pending && !judged.contains(&i))
        {
            return Err(Error::Unguarded { index });
        }
        rt.retain(stream, || {
            let mut all = self.keeps();
            all.extend(keeps());
            all
        })
        .map_err(|e| e.in_kernel(kernel))?;
        for record in mirror.iter_mut() {
            record.guard_pending = false;
        }
        self.advanced.store(true, Ordering::Release);
        Ok(schedules)
    }

    /// Enqueues the schedules [`StepStates::begin_advance`] returned, after the advance.
    pub(crate) fn launch_schedules(
        &self,
        stream: &Stream,
        schedules: Vec<PendingSchedule<'_, '_>>,
    ) -> Result<()> {
        const THREADS: u32 = 32;
        for (descriptor, function, table) in schedules {
            let count = table.len() as u32;
            let mut values = schedule_args(
                descriptor,
                self.records.address(),
                table.address(),
                count,
                self.advanced_host.device_ptr(),
            );
            let params = arg_pointers(&mut values);
            // SAFETY: the schedule entry's four parameters (checked against its descriptor):
            // our records array, our table of `count` indices into it (each below the record
            // count, built in `new`), and our mapped copy of the records.
            unsafe { stream.launch(function, count.div_ceil(THREADS), THREADS, 0, &params) }
                .during_with(|| format!("launching {} ({count} records)", descriptor.name))?;
        }
        Ok(())
    }

    /// The records' array and its page-locked copy (device addresses), for a fused advance.
    pub(crate) fn advance_targets(&self) -> (u64, u64) {
        (self.records.address(), self.advanced_host.device_ptr())
    }

    /// The learning rate record `index` was last given (by its spec or [`StepStates::set_lr`]).
    ///
    /// # Errors
    ///
    /// [`Error::StepIndex`] past the end.
    pub fn lr(&self, index: usize) -> Result<f32> {
        self.record_ptr(index)?;
        Ok(self.mirror.lock().unwrap_or_else(|e| e.into_inner())[index].lr)
    }

    /// The smallest bound record `index` can give a launch: its fixed bound, or for a bound the
    /// device computes from `Q_ABS_REF` the rule's floor, [`BOUND_FACTOR`] (what a multi-tensor
    /// launch's per-tensor scales are checked against: no scale may turn a clamping bound into 0).
    ///
    /// # Errors
    ///
    /// [`Error::StepIndex`] past the end.
    pub fn smallest_bound(&self, index: usize) -> Result<f32> {
        self.record_ptr(index)?;
        let mirror = self.mirror.lock().unwrap_or_else(|e| e.into_inner());
        Ok(mirror[index].smallest_bound)
    }

    /// Writes the owned `Q_ABS_REF` ([`QAbsRef::Owned`]) for the advances that follow on
    /// `stream`: one stream-ordered write. Any value is accepted, as the device would accept
    /// whatever the ISV computes: a NaN, infinite or negative one is handled by the advance
    /// (previous bound kept, flag raised, counted) and shows in [`StepStates::read`].
    ///
    /// # Errors
    ///
    /// [`Error::QAbsRefNotOwned`] for records that read a slot of the caller's buffer;
    /// [`Error::Capture`] during a capture; [`Error::Cuda`] if the driver refuses the write.
    pub fn set_q_abs_ref(&self, stream: &Stream, value: f32) -> Result<()> {
        if !self.owns_q {
            return Err(Error::QAbsRefNotOwned);
        }
        refuse_capture(stream, "StepStates::set_q_abs_ref")?;
        write_word(
            self.q_abs_ref_ptr,
            value.to_bits(),
            stream,
            "the step state's Q_ABS_REF",
        )
    }

    /// Every record as the device holds it, read with cust's synchronous copy (which waits for
    /// the work enqueued before it on the runtime's blocking stream). For a read without that
    /// wait, see [`StepStates::last_advanced`].
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] if the copy fails.
    pub fn read(&self) -> Result<Vec<StepState>> {
        Ok(self.read_records()?.into_iter().map(|r| r.state).collect())
    }

    /// Marks records `judged` as guarded for their next advance (a guard run was enqueued for
    /// them), all or none. Returns the address of record `first`, from which the guard counts.
    ///
    /// # Errors
    ///
    /// [`Error::StepIndex`] for a record past the end; [`Error::NotGuarded`] for a record made
    /// without a guard. Nothing is marked then.
    /// That every record a guard judges exists ([`Error::StepIndex`]) and was made guarded
    /// ([`Error::NotGuarded`]): checked by both ways of enqueueing a guard, before anything is.
    fn check_judged(&self, mirror: &[Mirror], judged: &[usize]) -> Result<()> {
        for &index in judged {
            self.record_ptr(index)?;
            if mirror[index].guard_mode == 0 {
                return Err(Error::NotGuarded { index });
            }
        }
        Ok(())
    }

    pub(crate) fn guards_enqueued(&self, first: usize, judged: &[usize]) -> Result<u64> {
        let mut mirror = self.mirror.lock().unwrap_or_else(|e| e.into_inner());
        self.check_judged(&mirror, judged)?;
        let address = self.record_ptr(first)?;
        for &index in judged {
            mirror[index].guard_pending = true;
        }
        Ok(address)
    }

    /// Every record's guard as the last advance left it (its settings, the last step's norm,
    /// clip coefficient and skip, and how many steps were skipped), from the advance's
    /// page-locked copy: meaningful after waiting for an event recorded after that advance.
    pub fn last_guards(&self) -> Vec<adamant_device::guard::StepGuard> {
        self.advanced_host
            .read()
            .into_iter()
            .map(|r| r.0.guard)
            .collect()
    }

    /// Every whole record (the shared state and the kernel's own words) as the device holds it,
    /// as [`StepStates::read`] reads them.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] if the copy fails.
    pub fn read_records(&self) -> Result<Vec<StepRecord>> {
        let host = self.records.read("the step-state records")?;
        Ok(host.into_iter().map(|r| r.0).collect())
    }

    /// The records as the last advance left them, from the page-locked copy that advance wrote
    /// (the stepped launches only read the records, so these are also the records at the end of
    /// that step). Meaningful only after waiting for an event recorded after that advance; the
    /// default record before the first advance.
    pub fn last_advanced(&self) -> Vec<StepState> {
        self.advanced_host
            .read()
            .into_iter()
            .map(|r| r.0.state)
            .collect()
    }

    /// The validation a stepped launch of `plain`'s entry with record `index` runs: the record
    /// exists, an advance precedes the launch, the record holds the words of the entry's own
    /// scalars (it was made for a kernel with the entry's record layout, or the entry reads only
    /// `#[step]` fields), and the record's lr and betas lie in the entry's domains for them.
    /// Registers the entry as a user of the record (so a later lr is checked against its domain
    /// too). Returns the record's address.
    pub(crate) fn check_launch(
        &self,
        stepped: &'static KernelDescriptor,
        plain: &'static KernelDescriptor,
        index: usize,
    ) -> Result<u64> {
        let address = self.record_ptr(index)?;
        if !self.advanced.load(Ordering::Acquire) {
            return Err(Error::NotAdvanced {
                kernel: stepped.name,
            });
        }
        let mut mirror = self.mirror.lock().unwrap_or_else(|e| e.into_inner());
        let record = &mut mirror[index];
        let needs_words = stepped
            .record
            .iter()
            .any(|r| !matches!(r.lifetime, Lifetime::Step));
        let holds_them = record
            .kernel
            .as_ref()
            .is_some_and(|k| k.layout == stepped.record);
        if needs_words && !holds_them {
            return Err(Error::RecordKernel {
                kernel: stepped.name,
                index,
                made_for: scalars::made_for(record),
            });
        }
        for (field, value) in [
            ("lr", record.lr),
            ("beta1", record.beta1),
            ("beta2", record.beta2),
        ] {
            check_field(plain, field, value)?;
        }
        if !record.users.iter().any(|u| std::ptr::eq(*u, plain)) {
            record.users.push(plain);
        }
        Ok(address)
    }
}

/// `value` against `kernel`'s declared domain for its `#[step]` scalar `field`, if it has one (an
/// entry that does not read `beta2`, say, accepts any).
pub(crate) fn check_field(
    kernel: &'static KernelDescriptor,
    field: &'static str,
    value: f32,
) -> Result<()> {
    match scalar_domain(kernel, field) {
        Some(domain) if !domain.contains(value as f64) => Err(Error::InvalidScalar {
            kernel: kernel.name,
            name: field,
            value: value as f64,
            requirement: domain.describe(),
        }),
        _ => Ok(()),
    }
}

/// [`crate::graph::refuse_capture`] for a host write to the records.
fn refuse_capture(stream: &Stream, what: &str) -> Result<()> {
    crate::graph::refuse_capture(stream, what, crate::graph::HOST_WRITE)
}

/// One 32-bit word at `address`, written on `stream` (a memset node of one element: no host
/// buffer has to outlive the call).
fn write_word(address: u64, bits: u32, stream: &Stream, what: &str) -> Result<()> {
    // SAFETY: `address` is a 4-byte aligned word inside an allocation the caller owns (a record
    // field or the owned Q_ABS_REF), and nothing else writes it concurrently on the device.
    unsafe { crate::driver::fill_words_async(address, bits, 1, stream, what) }
}

/// A schedule entry and the indices of the records it advances (on the device).
type ScheduleTable = (&'static KernelDescriptor, Arc<DeviceMemory<u32>>);

/// A schedule entry loaded for an advance in progress: its descriptor, function and table.
pub(crate) type PendingSchedule<'s, 'f> = (
    &'static KernelDescriptor,
    &'f cust::function::Function<'f>,
    &'s Arc<DeviceMemory<u32>>,
);

/// The schedule tables of `records`: per schedule entry among their kernels, the indices of the
/// records made for it, uploaded. Setup only.
fn schedule_tables(records: &[Mirror]) -> Result<Vec<ScheduleTable>> {
    let mut groups: Vec<(&'static KernelDescriptor, Vec<u32>)> = Vec::new();
    for (i, record) in records.iter().enumerate() {
        let Some(schedule) = record.kernel.as_ref().and_then(|k| k.schedule) else {
            continue;
        };
        let i = i as u32;
        match groups.iter_mut().find(|(d, _)| std::ptr::eq(*d, schedule)) {
            Some((_, indices)) => indices.push(i),
            None => groups.push((schedule, vec![i])),
        }
    }
    groups
        .into_iter()
        .map(|(d, indices)| {
            let table = DeviceMemory::from_host(&indices, "a schedule's record indices")?;
            Ok((d, table))
        })
        .collect()
}

/// A schedule entry's arguments in PTX order (`states`, `indices`, `n_indices`, `mirror`, as
/// `#[optimizer_kernel]` generates it), checked against its descriptor.
fn schedule_args(
    schedule: &KernelDescriptor,
    records: u64,
    indices: u64,
    n: u32,
    mirror: u64,
) -> [ArgValue; 4] {
    let values = [
        ArgValue::Ptr(records),
        ArgValue::Ptr(indices),
        ArgValue::U32(n),
        ArgValue::Ptr(mirror),
    ];
    crate::args::assert_args_match(schedule, &values);
    values
}

/// `step_advance_kernel`'s arguments in PTX order, checked against the descriptor generated from
/// its signature.
fn advance_args(records: u64, n: u32, mirror: u64) -> [ArgValue; 3] {
    let values = [
        ArgValue::Ptr(records),
        ArgValue::U32(n),
        ArgValue::Ptr(mirror),
    ];
    crate::args::assert_args_match(&step_advance_kernel::DESCRIPTOR, &values);
    values
}

#[cfg(test)]
mod tests {
    /// A change to the advance entry's signature not followed by the launch fails here, on the
    /// CPU.
    #[test]
    fn advance_args_match_the_entry_signature() {
        assert_eq!(super::advance_args(1, 2, 3).len(), 3);
    }
}
