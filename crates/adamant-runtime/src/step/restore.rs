//! A [`StepStates`]'s records as a checkpoint holds them, and back: the host copy of every
//! record (and of the owned `Q_ABS_REF`), the metadata that says what each record is in words,
//! and the validation of a file's records against the records they replace, which runs whole
//! before anything on the device is written.
//!
//! What a record is for the run (its kernel, its guard, where its bound comes from) must be what
//! the file says: those come from the code that builds the step, and a file of another run is
//! refused. What the run changed (the step number, the lr, the betas and hyperparameters the
//! host set, the guard's counters and loss scale, the device's bound) comes from the file,
//! each value checked against the domains a host write of it is checked against.
use std::mem::size_of;
use std::sync::Arc;

use adamant_device::abi::{ArgValue, Lifetime};
use adamant_device::guard::{GUARD_CLIP, GUARD_LOSS_SCALE};
use adamant_device::step::{StepRecord, BOUND_FIXED, BOUND_FROM_Q_ABS_REF};
use cust::stream::Stream;

use super::scalars::plan;
use super::spec::{check_max_norm, word_value};
use super::{write_word, DeviceStepRecord, Mirror, StepStates};
use crate::clamp_policy::BOUND_FACTOR;
use crate::error::{Error, Result};
use crate::memory::DeviceMemory;

/// 32-bit words in one record (its size in a checkpoint's records tensor).
pub(crate) const RECORD_WORDS: usize = size_of::<StepRecord>() / size_of::<u32>();

const _: () = assert!(size_of::<StepRecord>() == RECORD_WORDS * 4);

/// A state's records as a save takes them: the records, the owned `Q_ABS_REF`'s value (None
/// for a slot of the caller's buffer), and what each record is in words ([`describe`]).
pub(crate) struct Snapshot {
    pub(crate) records: Vec<StepRecord>,
    pub(crate) q_abs_ref: Option<f32>,
    pub(crate) described: Vec<(String, String)>,
}

/// A [`StepStates`]' records copied on the device ([`StepStates::copy_on_device`]): the copies
/// and the host's mirror of the records when they were taken.
pub(crate) struct RecordsCopy {
    records: Arc<DeviceMemory<u8>>,
    q: Option<Arc<DeviceMemory<u8>>>,
    mirror: Vec<Mirror>,
}

impl RecordsCopy {
    /// How many records were copied.
    pub(crate) fn len(&self) -> usize {
        self.mirror.len()
    }

    /// The copies read with `download(address, bytes, what)` (once they have landed), as a
    /// save takes them.
    pub(crate) fn read(&self, download: Download<'_>) -> Result<Snapshot> {
        let bytes = download(
            self.records.address(),
            self.mirror.len() * size_of::<StepRecord>(),
            "the step records' snapshot",
        )?;
        let records: Vec<StepRecord> = bytes
            .chunks_exact(size_of::<StepRecord>())
            .map(record_from_bytes)
            .collect();
        let q_abs_ref = match &self.q {
            Some(word) => {
                let b = download(word.address(), 4, "Q_ABS_REF's snapshot")?;
                Some(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            }
            None => None,
        };
        let described = records
            .iter()
            .enumerate()
            .flat_map(|(i, r)| describe(i, &self.mirror[i], r))
            .collect();
        Ok(Snapshot {
            records,
            q_abs_ref,
            described,
        })
    }
}

/// How [`RecordsCopy::read`] reads `bytes` bytes at a device address (`what` names them).
pub(crate) type Download<'d> = &'d mut dyn FnMut(u64, usize, &str) -> Result<Vec<u8>>;

/// How [`StepStates::apply_restore`] writes bytes to a device address (`what` names them).
pub(crate) type Upload<'u> = &'u mut dyn FnMut(u64, &[u8], &str) -> Result<()>;

/// Validated records, ready to replace a [`StepStates`]'s ([`StepStates::apply_restore`]).
pub(crate) struct RecordsRestore {
    records: Vec<DeviceStepRecord>,
    mirror: Vec<Mirror>,
    q_abs_ref: Option<f32>,
}

/// Record `index`'s words as a checkpoint's bytes (little-endian), and back.
pub(crate) fn record_bytes(record: &StepRecord) -> Vec<u8> {
    // SAFETY: `StepRecord` is `#[repr(C)]` plain data of `RECORD_WORDS` 4-byte words, no
    // padding (the assertion above); reading it as bytes is reading those words.
    let bytes = unsafe {
        std::slice::from_raw_parts(
            record as *const StepRecord as *const u8,
            size_of::<StepRecord>(),
        )
    };
    bytes
        .chunks_exact(4)
        .flat_map(|w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]]).to_le_bytes())
        .collect()
}

/// The record whose little-endian words are `bytes` (`RECORD_WORDS × 4` of them).
pub(crate) fn record_from_bytes(bytes: &[u8]) -> StepRecord {
    assert_eq!(bytes.len(), size_of::<StepRecord>(), "one record's bytes");
    let mut record = StepRecord::default();
    // SAFETY: as in `record_bytes`; every bit pattern is a valid `StepRecord` (integers and
    // floats only).
    let words = unsafe {
        std::slice::from_raw_parts_mut(&mut record as *mut StepRecord as *mut u32, RECORD_WORDS)
    };
    for (w, b) in words.iter_mut().zip(bytes.chunks_exact(4)) {
        *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    record
}

/// What record `record` (made as `mirror` says) is, in words: `(key, value)` pairs under
/// `adamant.records.<index>.`, for people and tools (PyTorch's `step`, `lr`, betas) and for
/// the check that a file's record is one of the same kernel, guard and bound as the state's.
fn describe(index: usize, mirror: &Mirror, record: &StepRecord) -> Vec<(String, String)> {
    let key = |k: &str| format!("adamant.records.{index}.{k}");
    let s = &record.state;
    let mut out = vec![
        (
            key("kernel"),
            mirror
                .kernel
                .as_ref()
                .map_or("none".to_string(), |k| k.name().to_string()),
        ),
        (
            key("bound_mode"),
            match mirror.bound_mode {
                BOUND_FIXED => "fixed".to_string(),
                _ => "from_q_abs_ref".to_string(),
            },
        ),
        (key("guard_mode"), mirror.guard_mode.to_string()),
        (key("step"), s.step.to_string()),
        (key("lr"), format!("{:?}", s.lr)),
        (key("beta1"), format!("{:?}", s.beta1)),
        (key("beta2"), format!("{:?}", s.beta2)),
    ];
    for (name, value) in hyper_values(mirror, record) {
        let value = match value {
            ArgValue::U32(bits) => bits.to_string(),
            ArgValue::F32(v) => format!("{v:?}"),
            other => format!("{other:?}"),
        };
        out.push((key(&format!("hyper.{name}")), value));
    }
    out
}

/// The `#[hyper]` scalars `record` holds for the kernel `mirror`'s record was made for, by
/// name, each of its declared type.
fn hyper_values(mirror: &Mirror, record: &StepRecord) -> Vec<(&'static str, ArgValue)> {
    let layout = mirror.kernel.as_ref().map_or(&[][..], |k| k.layout);
    layout
        .iter()
        .filter(|scalar| matches!(scalar.lifetime, Lifetime::Hyper { .. }))
        .map(|scalar| (scalar.name, word_value(scalar, &record.scalars)))
        .collect()
}

impl StepStates {
    /// The records (and the owned `Q_ABS_REF`) copied on the device on `stream`, in stream
    /// order, into allocations of the copy's own, with what the host knows of each record now:
    /// what a save that does not wait for the stream reads later ([`RecordsCopy::read`]).
    ///
    /// # Errors
    ///
    /// [`Error::Capture`] during a capture; [`Error::OutOfMemory`], [`Error::Cuda`].
    pub(crate) fn copy_on_device(&self, stream: &Stream) -> Result<RecordsCopy> {
        crate::graph::refuse_capture(stream, "a save of step states", crate::graph::HOST_COPY)?;
        let bytes = self.len() * size_of::<StepRecord>();
        let records = DeviceMemory::for_copy(bytes, "a snapshot of the step records")?;
        // SAFETY: our records (`bytes` long) into the new allocation of the same size.
        unsafe {
            crate::driver::copy_on_device_async(
                records.address(),
                self.records.address(),
                bytes,
                stream,
                "the step records",
            )
        }?;
        let q = if self.owns_q {
            let word = DeviceMemory::for_copy(4, "a snapshot of Q_ABS_REF")?;
            // SAFETY: our owned word into a new 4-byte allocation.
            unsafe {
                crate::driver::copy_on_device_async(
                    word.address(),
                    self.q_abs_ref_ptr,
                    4,
                    stream,
                    "Q_ABS_REF",
                )
            }?;
            Some(word)
        } else {
            None
        };
        let mirror = self
            .mirror
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        Ok(RecordsCopy { records, q, mirror })
    }

    /// What record `index` is, in words, as a file's record must describe it once read
    /// (the state's kernel, guard and bound mode, the file's values).
    pub(crate) fn describe_as_restored(
        &self,
        index: usize,
        record: &StepRecord,
    ) -> Vec<(String, String)> {
        let mirror = self.mirror.lock().unwrap_or_else(|e| e.into_inner());
        describe(index, &mirror[index], record)
    }

    /// `records` (one per record, from a file) and `q_abs_ref` (the owned word's value, if the
    /// file has one) checked to replace these records: the same count, kernel, guard and bound
    /// mode; the lr, betas and hyperparameters within every domain a host write of them must
    /// lie in; a guard's threshold and loss scale usable; a bound the device could have
    /// computed. Nothing is written.
    ///
    /// # Errors
    ///
    /// [`Error::RecordRestore`] naming the record and the field.
    pub(crate) fn plan_restore(
        &self,
        records: Vec<StepRecord>,
        q_abs_ref: Option<f32>,
    ) -> Result<RecordsRestore> {
        let mirror = self
            .mirror
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        plan_records(mirror, self.owns_q, self.q_abs_ref_ptr, records, q_abs_ref)
    }
}

/// [`StepStates::plan_restore`] for records whose host mirror is `mirror`, which own their
/// `Q_ABS_REF` word (at `q_abs_ref_ptr`) if `owns_q`.
fn plan_records(
    mut mirror: Vec<Mirror>,
    owns_q: bool,
    q_abs_ref_ptr: u64,
    records: Vec<StepRecord>,
    q_abs_ref: Option<f32>,
) -> Result<RecordsRestore> {
    let refuse = |index: usize, field: &'static str, found: String, requirement: String| {
        Error::RecordRestore {
            index,
            field,
            found,
            requirement,
        }
    };
    if records.len() != mirror.len() {
        return Err(refuse(
            records.len(),
            "records",
            format!("{} records", records.len()),
            format!("{} (one per record of the state)", mirror.len()),
        ));
    }
    if q_abs_ref.is_some() != owns_q {
        let says = |owned: bool| {
            if owned {
                "an owned Q_ABS_REF".to_string()
            } else {
                "Q_ABS_REF read from a slot of the caller's buffer".to_string()
            }
        };
        return Err(refuse(
            0,
            "q_abs_ref",
            says(q_abs_ref.is_some()),
            says(owns_q),
        ));
    }
    let mut device = Vec::with_capacity(records.len());
    for (index, (mut record, m)) in records.into_iter().zip(mirror.iter_mut()).enumerate() {
        if record.state.bound_mode != m.bound_mode {
            return Err(refuse(
                index,
                "bound_mode",
                record.state.bound_mode.to_string(),
                m.bound_mode.to_string(),
            ));
        }
        if record.guard.mode != m.guard_mode {
            return Err(refuse(
                index,
                "guard_mode",
                record.guard.mode.to_string(),
                format!("{} (the guard the state was made with)", m.guard_mode),
            ));
        }
        check_bound(m, &record).map_err(|(found, need)| refuse(index, "bound", found, need))?;
        check_guard(&record)
            .map_err(|e| refuse(index, "guard", "unusable".into(), e.to_string()))?;
        let mut writes = vec![
            ("lr", ArgValue::F32(record.state.lr)),
            ("beta1", ArgValue::F32(record.state.beta1)),
            ("beta2", ArgValue::F32(record.state.beta2)),
        ];
        writes.extend(hyper_values(m, &record));
        for (name, value) in writes {
            let write = plan(m, index, name, value).map_err(|e| {
                refuse(
                    index,
                    "a scalar",
                    format!("{name} = {value:?}"),
                    e.to_string(),
                )
            })?;
            write.apply(m);
        }
        // The words the device computes (derived ones, bias corrections) are the file's:
        // the next advance computes them again from the step number.
        m.words = record.scalars;
        m.guard_pending = false;
        record.state.q_abs_ref = if m.bound_mode == BOUND_FROM_Q_ABS_REF {
            q_abs_ref_ptr
        } else {
            0
        };
        device.push(DeviceStepRecord(record));
    }
    Ok(RecordsRestore {
        records: device,
        mirror,
        q_abs_ref,
    })
}

impl StepStates {
    /// Writes `plan` (from [`StepStates::plan_restore`]) to the device on `stream` through
    /// `upload`, then takes its host values. Waits for the writes.
    ///
    /// # Errors
    ///
    /// [`Error::Capture`] during a capture; [`Error::Cuda`] for the copies.
    pub(crate) fn apply_restore(
        &self,
        plan: RecordsRestore,
        stream: &Stream,
        upload: Upload<'_>,
    ) -> Result<()> {
        crate::graph::refuse_capture(stream, "a restore of step states", crate::graph::HOST_COPY)?;
        let bytes: Vec<u8> = plan
            .records
            .iter()
            .flat_map(|r| record_bytes(&r.0))
            .collect();
        upload(self.records.address(), &bytes, "the step-state records")?;
        if let Some(q) = plan.q_abs_ref {
            write_word(
                self.q_abs_ref_ptr,
                q.to_bits(),
                stream,
                "the step state's Q_ABS_REF",
            )?;
        }
        stream
            .synchronize()
            .map_err(|e| Error::cuda("waiting for the restored step records", e))?;
        *self.mirror.lock().unwrap_or_else(|e| e.into_inner()) = plan.mirror;
        Ok(())
    }
}

/// A file's bound for a record of `mirror`'s mode: the fixed bound the state was made with, or
/// for a bound the device computes one the rule can give (`factor × q_abs_ref_eff`, the factor
/// the runtime's, `q_abs_ref_eff` finite and at least 1). Err: what the file holds, what the
/// state needs.
fn check_bound(mirror: &Mirror, record: &StepRecord) -> std::result::Result<(), (String, String)> {
    let s = &record.state;
    if mirror.bound_mode == BOUND_FIXED {
        if s.bound.to_bits() != mirror.smallest_bound.to_bits() {
            return Err((
                s.bound.to_string(),
                format!("{} (the state's fixed bound)", mirror.smallest_bound),
            ));
        }
        return Ok(());
    }
    if s.bound_factor != BOUND_FACTOR {
        return Err((
            format!("{} × q_abs_ref_eff", s.bound_factor),
            format!("the rule's factor {BOUND_FACTOR}"),
        ));
    }
    if !(s.q_abs_ref_eff.is_finite() && s.q_abs_ref_eff >= 1.0) {
        return Err((
            format!("from q_abs_ref_eff {}", s.q_abs_ref_eff),
            "a q_abs_ref_eff finite and >= 1".into(),
        ));
    }
    if !(s.bound.is_finite() && s.bound >= BOUND_FACTOR) {
        return Err((
            s.bound.to_string(),
            format!("a finite bound of at least the rule's floor {BOUND_FACTOR}"),
        ));
    }
    Ok(())
}

/// A file's guard words that the next steps use: a clipping threshold and a loss scale that a
/// host spec would have been allowed to give.
fn check_guard(record: &StepRecord) -> Result<()> {
    let g = &record.guard;
    if g.mode & GUARD_CLIP != 0 {
        check_max_norm(g.max_norm)?;
    }
    if g.mode & GUARD_LOSS_SCALE != 0 {
        if !(g.loss_scale.is_finite() && g.loss_scale > 0.0) {
            return Err(Error::InvalidGuard {
                field: "loss_scale",
                value: g.loss_scale as f64,
                requirement: "finite and > 0 (a checkpoint's step record)".into(),
            });
        }
        if g.growth_interval == 0 {
            return Err(Error::InvalidGuard {
                field: "loss_scale.growth_interval",
                value: 0.0,
                requirement: ">= 1 (a checkpoint's step record)".into(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use adamant_device::guard::GUARD_SKIP_NON_FINITE;
    use adamant_device::step::bias_correction;
    use adamant_kernels::half_weights::adamw_bf16_sr;

    use super::*;
    use crate::clamp_policy::ClampPolicy;
    use crate::hyper::AdamHyper;
    use crate::step::{GuardSpec, StepBound, StepSpec};

    /// A record made for `adamw_bf16_sr` (fixed bound 0.5, seed 7), guarded or not, and its
    /// mirror; the record as the device would hold it after `t` advances.
    fn made(guarded: bool, t: u32) -> (Mirror, StepRecord) {
        let mut spec = StepSpec::adam(
            &AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.01, 1).unwrap(),
            StepBound::Policy(ClampPolicy::Fixed { bound: 0.5 }),
        )
        .unwrap()
        .with_kernel::<adamw_bf16_sr::Entry>(adamw_bf16_sr::Hyper {
            eps: 1e-8,
            weight_decay: 0.01,
            rounding_seed: 7,
        })
        .unwrap();
        if guarded {
            spec = spec.guarded(GuardSpec::SKIP_NON_FINITE).unwrap();
        }
        let words = spec.words();
        let mirror = Mirror::of(&spec, words, 0.5);
        let mut record = StepRecord {
            scalars: words,
            guard: spec.step_guard().unwrap(),
            ..StepRecord::default()
        };
        let s = &mut record.state;
        (s.lr, s.beta1, s.beta2, s.bound, s.step) = (1e-3, 0.9, 0.999, 0.5, t);
        s.bias_correction1 = bias_correction(0.9, t);
        s.bias_correction2 = bias_correction(0.999, t);
        s.bound_mode = BOUND_FIXED;
        s.bound_factor = BOUND_FACTOR;
        s.q_abs_ref_eff = 1.0;
        (mirror, record)
    }

    fn refused(result: Result<RecordsRestore>) -> (usize, &'static str) {
        match result {
            Err(Error::RecordRestore { index, field, .. }) => (index, field),
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("a bad record was accepted"),
        }
    }

    #[test]
    fn a_record_is_its_words_both_ways() {
        let (_, mut record) = made(true, 700);
        record.guard.first_non_finite = 0x0123_4567_89ab_cdef;
        let bytes = record_bytes(&record);
        assert_eq!(bytes.len(), RECORD_WORDS * 4);
        assert_eq!(record_from_bytes(&bytes), record);
        // Little-endian words: the step number is word 6.
        assert_eq!(&bytes[24..28], &700u32.to_le_bytes());
    }

    /// A file's record of the same kernel, guard and bound replaces the state's whole: the
    /// step, the lr and hyperparameters the host had set, the rounding seed; the host's mirror
    /// takes the file's values, and the record's `Q_ABS_REF` address is this process's.
    #[test]
    fn a_record_of_the_same_run_is_taken_with_its_values() {
        let (mirror, mut record) = made(false, 700);
        record.state.lr = 3e-4;
        record.scalars[2] = 99; // rounding_seed
        let plan = plan_records(vec![mirror], false, 0xdead_0000, vec![record], None).unwrap();
        assert_eq!(plan.records[0].0.state.step, 700);
        assert_eq!(
            plan.records[0].0.state.q_abs_ref, 0,
            "a fixed bound reads no Q_ABS_REF"
        );
        assert_eq!(plan.mirror[0].lr, 3e-4);
        assert_eq!(plan.mirror[0].words[2], 99);
        assert!(plan.q_abs_ref.is_none());
    }

    #[test]
    fn a_record_of_another_run_is_refused_naming_the_field() {
        let (mirror, record) = made(false, 10);
        let one = |r: StepRecord| plan_records(vec![mirror.clone()], false, 0, vec![r], None);
        let mut other = record;
        other.state.bound = 0.25;
        assert_eq!(refused(one(other)), (0, "bound"));
        let mut other = record;
        other.state.bound_mode = BOUND_FROM_Q_ABS_REF;
        assert_eq!(refused(one(other)), (0, "bound_mode"));
        let mut other = record;
        other.guard.mode = GUARD_SKIP_NON_FINITE;
        assert_eq!(refused(one(other)), (0, "guard_mode"));
        let mut other = record;
        other.state.lr = -1.0;
        assert_eq!(refused(one(other)), (0, "a scalar"));
        let mut other = record;
        other.state.beta2 = 1.0;
        assert_eq!(refused(one(other)), (0, "a scalar"));
        let mut other = record;
        other.scalars[0] = 0f32.to_bits(); // eps = 0, outside the kernel's domain
        assert_eq!(refused(one(other)), (0, "a scalar"));
        assert_eq!(
            refused(plan_records(
                vec![mirror.clone()],
                false,
                0,
                vec![record, record],
                None
            )),
            (2, "records")
        );
        assert_eq!(
            refused(plan_records(
                vec![mirror.clone()],
                false,
                0,
                vec![record],
                Some(1.0)
            )),
            (0, "q_abs_ref")
        );
        assert_eq!(
            refused(plan_records(vec![mirror], true, 0, vec![record], None)),
            (0, "q_abs_ref")
        );
    }

    /// A record whose bound the device computes: the file's bound, factor and reference must
    /// be ones an advance gives, and its address is this process's `Q_ABS_REF`.
    #[test]
    fn a_computed_bound_must_be_one_the_rule_gives() {
        let spec = StepSpec::adam(
            &AdamHyper::pytorch_defaults(1).unwrap(),
            StepBound::FromQAbsRef,
        )
        .unwrap();
        let mirror = Mirror::of(&spec, spec.words(), BOUND_FACTOR);
        let mut record = StepRecord::default();
        let s = &mut record.state;
        (s.lr, s.beta1, s.beta2, s.step) = (1e-3, 0.9, 0.999, 5);
        (s.bound_mode, s.bound_factor, s.q_abs_ref_eff, s.bound) =
            (BOUND_FROM_Q_ABS_REF, BOUND_FACTOR, 2.5, 250.0);
        s.q_abs_ref = 0x1234; // the saving process's address
        let plan =
            |r: StepRecord| plan_records(vec![mirror.clone()], true, 0xbeef, vec![r], Some(2.5));
        let ok = plan(record).unwrap();
        assert_eq!(ok.records[0].0.state.q_abs_ref, 0xbeef);
        assert_eq!(ok.q_abs_ref, Some(2.5));
        for bad in [
            |r: &mut StepRecord| r.state.bound_factor = 50.0,
            |r: &mut StepRecord| r.state.q_abs_ref_eff = 0.5,
            |r: &mut StepRecord| r.state.q_abs_ref_eff = f32::NAN,
            |r: &mut StepRecord| r.state.bound = 10.0,
            |r: &mut StepRecord| r.state.bound = f32::INFINITY,
        ] {
            let mut r = record;
            bad(&mut r);
            assert_eq!(refused(plan(r)), (0, "bound"));
        }
    }

    #[test]
    fn a_guards_scale_and_threshold_must_be_usable() {
        let spec = StepSpec::adam(
            &AdamHyper::pytorch_defaults(1).unwrap(),
            StepBound::Policy(ClampPolicy::Fixed { bound: 1.0 }),
        )
        .unwrap()
        .guarded(GuardSpec {
            skip_non_finite: true,
            max_norm: Some(1.0),
            loss_scale: Some(crate::LossScale::PYTORCH),
        })
        .unwrap();
        let mirror = Mirror::of(&spec, spec.words(), 1.0);
        let mut record = StepRecord {
            guard: spec.step_guard().unwrap(),
            ..StepRecord::default()
        };
        let s = &mut record.state;
        (s.lr, s.beta1, s.beta2, s.bound, s.bound_mode) = (1e-3, 0.9, 0.999, 1.0, BOUND_FIXED);
        let plan = |r: StepRecord| plan_records(vec![mirror.clone()], false, 0, vec![r], None);
        assert!(plan(record).is_ok());
        for bad in [
            |r: &mut StepRecord| r.guard.max_norm = 0.0,
            |r: &mut StepRecord| r.guard.loss_scale = f32::INFINITY,
            |r: &mut StepRecord| r.guard.loss_scale = 0.0,
            |r: &mut StepRecord| r.guard.growth_interval = 0,
        ] {
            let mut r = record;
            bad(&mut r);
            assert_eq!(refused(plan(r)), (0, "guard"));
        }
    }

    /// What a record is in words names its kernel, mode, guard and every hyperparameter by
    /// name, so a record saved for another kernel differs from the state's description.
    #[test]
    fn a_record_is_described_by_name() {
        let (mirror, record) = made(true, 42);
        let described: std::collections::BTreeMap<String, String> =
            describe(3, &mirror, &record).into_iter().collect();
        let get = |k: &str| described[&format!("adamant.records.3.{k}")].as_str();
        assert_eq!(get("kernel"), "adamw_bf16_sr");
        assert_eq!(get("bound_mode"), "fixed");
        assert_eq!(get("guard_mode"), "1");
        assert_eq!(get("step"), "42");
        assert_eq!(get("lr"), "0.001");
        assert_eq!(get("hyper.rounding_seed"), "7");
        assert_eq!(get("hyper.weight_decay"), "0.01");
        assert_eq!(get("hyper.eps"), "1e-8");
    }
}
