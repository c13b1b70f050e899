//! An optimizer state on the device into a [`Checkpoint`], and back.
//!
//! Saving copies, after the work enqueued on the caller's stream, every buffer a kernel keeps
//! for a tensor (the parameters, their companion, the states; not the gradients) under its
//! [`state_name`], and the [`StepStates`]' records. Restoring is a [`Restore`]: each
//! [`Restore::tensor`] and [`Restore::steps`] checks what the file holds against what it would
//! replace (names, element types, lengths, the kernel, finiteness, each record's kernel, guard,
//! bound and values) and only queues the writes; [`Restore::commit`] writes them all. So a bad
//! file is an error before anything on the device is written, and a restore that is never
//! committed changes nothing.
use adamant_device::abi::{BufferRef, KernelDescriptor, OptimizerEntry, Storage};
use adamant_device::step::StepRecord;
use cust::stream::Stream;

use super::transfer::Staging;
use super::{state_name, Checkpoint, CheckpointError, TensorKind};
use crate::buffers::{LaunchBuffer, LaunchKinds, Owned, Shared};
use crate::error::{Error, Result};
use crate::interop::Raw;
use crate::memory::Keep;
use crate::step::restore::{
    record_bytes, record_from_bytes, Snapshot as RecordsSnapshot, RECORD_WORDS,
};
use crate::step::{RecordsRestore, StepStates};

/// The tensor that holds a [`StepStates`]' records: `u32` words, one row of
/// `size_of::<StepRecord>() / 4` per record.
pub const RECORDS_TENSOR: &str = "adamant.records";
/// The tensor that holds the value of a [`StepStates`]' owned `Q_ABS_REF` (one `f32`), present
/// only for records that own one.
pub const Q_ABS_REF_TENSOR: &str = "adamant.q_abs_ref";

/// The metadata key naming the kernel tensor `tensor` was saved for.
pub fn kernel_key(tensor: &str) -> String {
    format!("{tensor}.kernel")
}

/// The metadata key of tensor `tensor`'s step count (PyTorch's `state[p]["step"]`): the step
/// number of its record when it was saved.
pub fn step_key(tensor: &str) -> String {
    format!("{tensor}.step")
}

/// One buffer a kernel keeps for a tensor, as a save or a restore moves it.
pub(super) struct Kept {
    /// The buffer's name in the kernel's signature.
    pub(super) buffer: &'static str,
    pub(super) address: u64,
    pub(super) len: usize,
    pub(super) storage: Storage,
    pub(super) keep: Option<Keep>,
}

/// The buffers of `buffers` a checkpoint holds (every one but the inputs), each checked to be
/// stored as kernel `E` declares it.
pub(super) fn kept<E: OptimizerEntry, K: LaunchKinds>(
    buffers: &E::Buffers<K>,
) -> Result<Vec<Kept>> {
    let descriptor = E::DESCRIPTOR;
    let mut out = Vec::new();
    E::visit_buffers(buffers, &mut |buffer, b| {
        let b: &dyn LaunchBuffer = match b {
            BufferRef::Param(p) => p,
            BufferRef::State(s) => s,
            BufferRef::Input(_) => return,
        };
        out.push(Kept {
            buffer,
            address: b.address(),
            len: b.len(),
            storage: b.storage(),
            keep: b.keep(),
        });
    });
    for k in &out {
        let declared = descriptor
            .params
            .iter()
            .find(|p| p.name == k.buffer)
            .map_or(Storage::F32, |p| p.storage);
        if declared != k.storage {
            return Err(Error::StorageMismatch {
                kernel: descriptor.name,
                buffer: k.buffer,
                declared,
                given: k.storage,
            });
        }
    }
    Ok(out)
}

/// Every region of `buffers` lies in one device allocation (the driver's word).
pub(super) fn check_regions<E: OptimizerEntry>(buffers: &E::Buffers<Raw>) -> Result<()> {
    let mut checked = Ok(());
    E::visit_buffers(buffers, &mut |name, b| {
        if checked.is_ok() {
            checked = b.get().check_allocation(E::DESCRIPTOR.name, name);
        }
    });
    checked
}

/// The name of `k` in a checkpoint of tensor `tensor` of kernel `descriptor`.
fn name_of(descriptor: &KernelDescriptor, tensor: &str, k: &Kept) -> String {
    state_name(tensor, descriptor, k.buffer)
        .expect("every kept buffer is a parameter, companion or state of the kernel")
}

/// [`crate::graph::refuse_capture`] for a copy to or from the host.
pub(super) fn refuse_capture(stream: &Stream, what: &str) -> Result<()> {
    crate::graph::refuse_capture(stream, what, crate::graph::HOST_COPY)
}

impl Checkpoint {
    /// Adds tensor `tensor`'s state as kernel `E` keeps it (`buffers` as a launch takes them,
    /// each by shared borrow: [`Shared`]), read after the work enqueued on `stream`: its parameters as `<tensor>`, a companion as `<tensor>.<kind>`, each state
    /// under its [`state_name`] (`<tensor>.exp_avg`, ...), and in the metadata the kernel
    /// ([`kernel_key`]) and, with `step = Some((states, index))`, the step number of the
    /// record the tensor steps with ([`step_key`], PyTorch's `step`).
    ///
    /// # Errors
    ///
    /// [`Error::Capture`] during a capture; [`Error::StepIndex`]; [`Error::Cuda`] for the copies;
    /// [`Error::Checkpoint`] for a name already in the checkpoint.
    pub fn save_tensor<E: OptimizerEntry>(
        &mut self,
        tensor: &str,
        buffers: &E::Buffers<Shared<'_>>,
        step: Option<(&StepStates, usize)>,
        stream: &Stream,
    ) -> Result<()> {
        self.save_kept(
            E::DESCRIPTOR,
            tensor,
            kept::<E, Shared<'_>>(buffers)?,
            step,
            stream,
        )
    }

    /// As [`Checkpoint::save_tensor`], for buffers other code owns ([`DeviceRegion`]s, of any
    /// storage type the kernel declares): each region is first checked to lie in one device
    /// allocation.
    ///
    /// [`DeviceRegion`]: crate::DeviceRegion
    ///
    /// # Errors
    ///
    /// As [`Checkpoint::save_tensor`]; [`Error::ForeignBuffer`] for a region outside the driver's
    /// allocations; [`Error::StorageMismatch`] for a region of another storage type than the
    /// kernel declares.
    pub fn save_regions<E: OptimizerEntry>(
        &mut self,
        tensor: &str,
        buffers: &E::Buffers<Raw>,
        step: Option<(&StepStates, usize)>,
        stream: &Stream,
    ) -> Result<()> {
        check_regions::<E>(buffers)?;
        self.save_kept(
            E::DESCRIPTOR,
            tensor,
            kept::<E, Raw>(buffers)?,
            step,
            stream,
        )
    }

    pub(super) fn save_kept(
        &mut self,
        descriptor: &'static KernelDescriptor,
        tensor: &str,
        kept: Vec<Kept>,
        step: Option<(&StepStates, usize)>,
        stream: &Stream,
    ) -> Result<()> {
        refuse_capture(stream, "saving a tensor")?;
        let step_number = match step {
            Some((states, index)) => {
                states.record_ptr(index)?;
                stream
                    .synchronize()
                    .map_err(|e| Error::cuda("waiting for the stream before a save", e))?;
                Some(states.read_records()?[index].state.step)
            }
            None => None,
        };
        let mut staging = Staging::default();
        let mut tensors = Vec::with_capacity(kept.len());
        for k in &kept {
            let name = name_of(descriptor, tensor, k);
            let bytes = k.len * k.storage.bytes();
            // SAFETY: a runtime buffer's allocation (kept alive by `k.keep` meanwhile) or a
            // region checked above to lie in one allocation.
            let (data, digests) =
                unsafe { staging.download_hashed(k.address, bytes, stream, &name) }?;
            tensors.push((
                name,
                TensorKind::of_storage(k.storage),
                k.len,
                data,
                digests,
            ));
        }
        for (name, kind, len, data, digests) in tensors {
            self.insert_hashed(&name, kind, &[len], data, digests)?;
        }
        self.set_metadata(&kernel_key(tensor), descriptor.name)?;
        if let Some(t) = step_number {
            self.set_metadata(&step_key(tensor), &t.to_string())?;
        }
        Ok(())
    }

    /// Adds the records of `states` after the work enqueued on `stream` ([`RECORDS_TENSOR`],
    /// with each record's device addresses cleared: they mean nothing in another process), the
    /// owned `Q_ABS_REF` ([`Q_ABS_REF_TENSOR`]), and what each record is in words under
    /// `adamant.records.<i>.` (its kernel, bound mode, guard, step, lr, betas and
    /// hyperparameters, for tools; a restore checks them against the record).
    ///
    /// # Errors
    ///
    /// [`Error::Capture`] during a capture; [`Error::Cuda`] for the copies;
    /// [`Error::Checkpoint`] for records already in the checkpoint.
    pub fn save_steps(&mut self, states: &StepStates, stream: &Stream) -> Result<()> {
        // The snapshot's copies, read at once on the same stream (after them).
        let copy = states.copy_on_device(stream)?;
        let mut staging = Staging::default();
        let records = copy.read(&mut |address, bytes, what| {
            // SAFETY: the copy's own allocations, of these sizes, written by copies enqueued
            // on `stream` before this read.
            unsafe { staging.download(address, bytes, stream, what) }
        })?;
        self.insert_records(records)
    }

    /// Adds records as a save took them: the rows (device addresses cleared: they mean
    /// nothing in another process), the owned `Q_ABS_REF` and the records' description.
    pub(super) fn insert_records(&mut self, snapshot: RecordsSnapshot) -> Result<()> {
        let data: Vec<u8> = snapshot
            .records
            .iter()
            .flat_map(|r| {
                let mut r = *r;
                r.state.q_abs_ref = 0;
                record_bytes(&r)
            })
            .collect();
        self.insert(
            RECORDS_TENSOR,
            TensorKind::U32,
            &[snapshot.records.len(), RECORD_WORDS],
            data,
        )?;
        if let Some(q) = snapshot.q_abs_ref {
            self.insert_f32(Q_ABS_REF_TENSOR, &[q])?;
        }
        for (key, value) in snapshot.described {
            self.set_metadata(&key, &value)?;
        }
        Ok(())
    }

    /// Tensor `tensor`'s step count ([`step_key`]): what a run resumed from a file without
    /// step records (one converted from PyTorch) gives [`StepSpec::steps_taken`].
    ///
    /// [`StepSpec::steps_taken`]: crate::StepSpec::steps_taken
    ///
    /// # Errors
    ///
    /// [`CheckpointError::Metadata`] for a missing key or one that is no step count.
    pub fn steps_taken(&self, tensor: &str) -> Result<u32, CheckpointError> {
        let key = step_key(tensor);
        let value = self.metadata(&key)?;
        value.parse().map_err(|_| CheckpointError::Metadata {
            path: self.path.clone(),
            key,
            expected: "a step count (an integer from 0 to 2^32 - 1)".into(),
            found: Some(value.to_string()),
        })
    }

    /// A restore of (part of) this checkpoint into device state: see [`Restore`].
    pub fn restore(&self) -> Restore<'_, '_> {
        Restore {
            checkpoint: self,
            allow_non_finite: false,
            writes: Vec::new(),
            steps: None,
        }
    }
}

/// One write a [`Restore`] will make.
struct PendingWrite<'c> {
    name: String,
    address: u64,
    data: &'c [u8],
    /// The buffer's allocation, alive until the write (none for a region other code owns).
    _keep: Option<Keep>,
}

/// A restore of device state from a [`Checkpoint`], checked whole before anything is written:
///
/// ```no_run
/// # use adamant_runtime::checkpoint::Checkpoint;
/// # fn f(ck: &Checkpoint, states: &adamant_runtime::StepStates,
/// #      mut bufs: adamant_kernels::optimizers::attn_adam_kernel::Buffers<adamant_runtime::Owned<'_>>,
/// #      stream: &adamant_runtime::cust::stream::Stream) -> adamant_runtime::Result<()> {
/// use adamant_kernels::optimizers::attn_adam_kernel;
/// let mut restore = ck.restore();
/// restore.tensor::<attn_adam_kernel::Entry>("attn.weight", &mut bufs)?; // checked, queued
/// restore.steps(states)?;                                             // checked, queued
/// restore.commit(stream)?;                                            // written
/// # Ok(()) }
/// ```
///
/// Each call checks one part against what it replaces and queues its writes; an error leaves
/// the device as it was (drop the restore). [`Restore::commit`] writes everything, on the
/// stream, and waits for it.
pub struct Restore<'c, 's> {
    checkpoint: &'c Checkpoint,
    allow_non_finite: bool,
    writes: Vec<PendingWrite<'c>>,
    steps: Option<(&'s StepStates, RecordsRestore)>,
}

impl<'c, 's> Restore<'c, 's> {
    /// The checkpoint being restored.
    pub(super) fn checkpoint(&self) -> &'c Checkpoint {
        self.checkpoint
    }

    /// Accepts NaN and infinite values in the tensors restored after this call (a moment or
    /// a weight of a run that had already diverged, loaded to look at it). By default each is
    /// [`CheckpointError::NonFinite`], naming the tensor and the element.
    pub fn allow_non_finite(mut self) -> Self {
        self.allow_non_finite = true;
        self
    }

    /// Checks and queues the restore of tensor `tensor` into `buffers` (kernel `E`'s, the
    /// runtime's own): the file's tensor was saved for kernel `E`, and holds each buffer the
    /// kernel keeps (its [`state_name`]), of the buffer's element type and length, finite.
    ///
    /// # Errors
    ///
    /// [`Error::Checkpoint`] naming the tensor or key: [`CheckpointError::Metadata`] (another
    /// kernel), [`CheckpointError::MissingTensor`], [`CheckpointError::Dtype`],
    /// [`CheckpointError::Shape`], [`CheckpointError::NonFinite`], and
    /// [`CheckpointError::BadTensor`] for a buffer this restore already writes.
    pub fn tensor<E: OptimizerEntry>(
        &mut self,
        tensor: &str,
        buffers: &mut E::Buffers<Owned<'_>>,
    ) -> Result<()> {
        let kept = kept::<E, Owned<'_>>(buffers)?;
        self.queue(E::DESCRIPTOR, tensor, kept)
    }

    /// As [`Restore::tensor`], into buffers other code owns ([`DeviceRegion`]s of the storage
    /// types the kernel declares), each checked to lie in one device allocation.
    ///
    /// [`DeviceRegion`]: crate::DeviceRegion
    ///
    /// # Errors
    ///
    /// As [`Restore::tensor`]; [`Error::ForeignBuffer`], [`Error::StorageMismatch`].
    ///
    /// # Safety
    ///
    /// The regions stay allocated until [`Restore::commit`] returns, and nothing else uses them
    /// meanwhile.
    pub unsafe fn regions<E: OptimizerEntry>(
        &mut self,
        tensor: &str,
        buffers: &E::Buffers<Raw>,
    ) -> Result<()> {
        check_regions::<E>(buffers)?;
        let kept = kept::<E, Raw>(buffers)?;
        self.queue(E::DESCRIPTOR, tensor, kept)
    }

    pub(super) fn queue(
        &mut self,
        descriptor: &'static KernelDescriptor,
        tensor: &str,
        kept: Vec<Kept>,
    ) -> Result<()> {
        let ck = self.checkpoint;
        ck.expect_metadata(&kernel_key(tensor), descriptor.name)?;
        let mut queued = Vec::with_capacity(kept.len());
        for k in kept {
            let name = name_of(descriptor, tensor, &k);
            let kind = TensorKind::of_storage(k.storage);
            let data = ck.tensor(&name, kind, &[k.len])?;
            // A remainder holds no value by itself (`non_finite` skips words); its weight is
            // checked as bf16.
            if !self.allow_non_finite {
                ck.check_finite(&name)?;
            }
            let end = k.address + data.len() as u64;
            let clash = self
                .writes
                .iter()
                .chain(queued.iter())
                .find(|w: &&PendingWrite<'_>| {
                    !data.is_empty()
                        && !w.data.is_empty()
                        && k.address < w.address + w.data.len() as u64
                        && w.address < end
                });
            if let Some(w) = clash {
                return Err(CheckpointError::BadTensor {
                    name,
                    problem: format!(
                        "its buffer shares device memory with `{}`, which this restore also \
                         writes",
                        w.name
                    ),
                }
                .into());
            }
            queued.push(PendingWrite {
                name,
                address: k.address,
                data,
                _keep: k.keep,
            });
        }
        self.writes.extend(queued);
        Ok(())
    }

    /// Checks and queues the restore of `states`' records from [`RECORDS_TENSOR`] (and its
    /// owned `Q_ABS_REF` from [`Q_ABS_REF_TENSOR`]): one record per record of `states`, each
    /// described in the metadata as a record of the same kernel, bound mode and guard, with
    /// values a host write or an advance could have given it. The device addresses in the
    /// records are this process's.
    ///
    /// # Errors
    ///
    /// [`Error::Checkpoint`] ([`CheckpointError::MissingTensor`], [`CheckpointError::Shape`]
    /// for another number of records, [`CheckpointError::Metadata`] for a record of another
    /// kernel, bound mode or guard, or metadata that does not describe the record);
    /// [`Error::RecordRestore`] naming the record and the field.
    pub fn steps(&mut self, states: &'s StepStates) -> Result<()> {
        let ck = self.checkpoint;
        let data = ck.tensor(
            RECORDS_TENSOR,
            TensorKind::U32,
            &[states.len(), RECORD_WORDS],
        )?;
        let records: Vec<StepRecord> = data
            .chunks_exact(RECORD_WORDS * 4)
            .map(record_from_bytes)
            .collect();
        for (i, record) in records.iter().enumerate() {
            for (key, value) in states.describe_as_restored(i, record) {
                ck.expect_metadata(&key, &value)?;
            }
        }
        let q = if ck.tensors.contains_key(Q_ABS_REF_TENSOR) {
            Some(ck.f32s(Q_ABS_REF_TENSOR, 1, false)?[0])
        } else {
            None
        };
        let plan = states.plan_restore(records, q)?;
        self.steps = Some((states, plan));
        Ok(())
    }

    /// Writes everything queued, on `stream` after the work enqueued before, and waits for it.
    ///
    /// # Errors
    ///
    /// [`Error::Capture`] during a capture (nothing is written); [`Error::Cuda`] if a copy
    /// fails, after which the state is partly restored (the error names the tensor).
    pub fn commit(self, stream: &Stream) -> Result<()> {
        refuse_capture(stream, "restoring a checkpoint")?;
        let mut staging = Staging::default();
        for w in &self.writes {
            // SAFETY: a runtime buffer's allocation, kept alive by the write's `_keep`, or a
            // region the caller of `Restore::regions` keeps allocated and unused until now;
            // checked in `queue` to hold the tensor's bytes.
            unsafe { staging.upload(w.address, w.data, stream, &w.name) }?;
        }
        if let Some((states, plan)) = self.steps {
            states.apply_restore(plan, stream, &mut |address, data, what| {
                // SAFETY: the records' own allocation, of exactly these bytes.
                unsafe { staging.upload(address, data, stream, what) }
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use adamant_kernels::half_weights::adamw_bf16_remainder;
    use adamant_kernels::optimizers::attn_adam_kernel;

    use super::*;

    type Attn = attn_adam_kernel::Entry;

    /// `attn_adam_kernel`'s kept buffers for a tensor of `n` elements at `base` (fake
    /// addresses: queueing reads none).
    fn attn_buffers(base: u64, n: usize) -> Vec<Kept> {
        ["p", "m", "v"]
            .iter()
            .enumerate()
            .map(|(i, &buffer)| Kept {
                buffer,
                address: base + (i * n * 4) as u64,
                len: n,
                storage: Storage::F32,
                keep: None,
            })
            .collect()
    }

    /// A checkpoint of `attn_adam_kernel` tensor `w` of 3 elements: p = 1, 2, 3; m = 0.5 …;
    /// v = 0.25 ….
    fn attn_checkpoint() -> Checkpoint {
        let mut c = Checkpoint::new();
        c.insert_f32("w", &[1.0, 2.0, 3.0]).unwrap();
        c.insert_f32("w.exp_avg", &[0.5, 0.5, 0.5]).unwrap();
        c.insert_f32("w.exp_avg_sq", &[0.25, 0.25, 0.25]).unwrap();
        c.set_metadata("w.kernel", "attn_adam_kernel").unwrap();
        c
    }

    fn queued(c: &Checkpoint, kept: Vec<Kept>) -> Result<Vec<(String, u64, Vec<u8>)>> {
        let mut restore = c.restore();
        restore.queue(Attn::DESCRIPTOR, "w", kept)?;
        Ok(restore
            .writes
            .iter()
            .map(|w| (w.name.clone(), w.address, w.data.to_vec()))
            .collect())
    }

    fn checkpoint_error(result: Result<impl std::fmt::Debug>) -> CheckpointError {
        match result {
            Err(Error::Checkpoint(e)) => e,
            other => panic!("expected a checkpoint error, got {other:?}"),
        }
    }

    #[test]
    fn each_kept_buffer_is_queued_from_its_named_tensor() {
        let c = attn_checkpoint();
        let writes = queued(&c, attn_buffers(0x1000, 3)).unwrap();
        let names: Vec<&str> = writes.iter().map(|w| w.0.as_str()).collect();
        assert_eq!(names, ["w", "w.exp_avg", "w.exp_avg_sq"]);
        assert_eq!(writes[0].1, 0x1000);
        assert_eq!(writes[1].1, 0x1000 + 12);
        assert_eq!(
            writes[2].2,
            c.tensor("w.exp_avg_sq", TensorKind::F32, &[3]).unwrap()
        );
    }

    #[test]
    fn a_bad_part_is_refused_naming_it_and_nothing_is_queued() {
        // Another kernel.
        let mut c = attn_checkpoint();
        c.set_metadata("w.kernel", "iqn_adam_kernel").unwrap();
        match checkpoint_error(queued(&c, attn_buffers(0x1000, 3))) {
            CheckpointError::Metadata {
                key,
                expected,
                found,
                ..
            } => {
                assert_eq!(key, "w.kernel");
                assert_eq!(expected, "attn_adam_kernel");
                assert_eq!(found.as_deref(), Some("iqn_adam_kernel"));
            }
            other => panic!("{other}"),
        }
        // Another length than the buffer's.
        let c = attn_checkpoint();
        match checkpoint_error(queued(&c, attn_buffers(0x1000, 4))) {
            CheckpointError::Shape {
                name,
                expected,
                found,
                ..
            } => {
                assert_eq!((name.as_str(), expected, found), ("w", vec![4], vec![3]));
            }
            other => panic!("{other}"),
        }
        // A missing moment.
        let mut c = Checkpoint::new();
        c.insert_f32("w", &[1.0, 2.0, 3.0]).unwrap();
        c.insert_f32("w.exp_avg", &[0.5; 3]).unwrap();
        c.set_metadata("w.kernel", "attn_adam_kernel").unwrap();
        match checkpoint_error(queued(&c, attn_buffers(0x1000, 3))) {
            CheckpointError::MissingTensor { name, .. } => assert_eq!(name, "w.exp_avg_sq"),
            other => panic!("{other}"),
        }
        // Another element type.
        let mut c = Checkpoint::new();
        c.insert_u16("w", TensorKind::Bf16, &[0x3f80; 3]).unwrap();
        c.set_metadata("w.kernel", "attn_adam_kernel").unwrap();
        match checkpoint_error(queued(&c, attn_buffers(0x1000, 3))) {
            CheckpointError::Dtype {
                name,
                expected,
                found,
                ..
            } => {
                assert_eq!(
                    (name.as_str(), expected, found.as_str()),
                    ("w", "F32", "BF16")
                );
            }
            other => panic!("{other}"),
        }
    }

    /// A NaN in a moment is reported naming the tensor and element, unless the restore
    /// allows it.
    #[test]
    fn a_non_finite_moment_is_refused_unless_allowed() {
        let mut c = attn_checkpoint();
        c.tensors.remove("w.exp_avg_sq");
        c.insert_f32("w.exp_avg_sq", &[0.25, f32::NAN, 0.25])
            .unwrap();
        match checkpoint_error(queued(&c, attn_buffers(0x1000, 3))) {
            CheckpointError::NonFinite { name, index, .. } => {
                assert_eq!((name.as_str(), index), ("w.exp_avg_sq", 1));
            }
            other => panic!("{other}"),
        }
        let mut restore = c.restore().allow_non_finite();
        restore
            .queue(Attn::DESCRIPTOR, "w", attn_buffers(0x1000, 3))
            .unwrap();
        assert_eq!(restore.writes.len(), 3);
    }

    /// Two tensors restored into one buffer (the same memory named twice) is refused: one
    /// would silently overwrite the other.
    #[test]
    fn two_tensors_into_one_buffer_are_refused() {
        let mut c = attn_checkpoint();
        c.insert_f32("u", &[1.0, 2.0, 3.0]).unwrap();
        c.insert_f32("u.exp_avg", &[0.5; 3]).unwrap();
        c.insert_f32("u.exp_avg_sq", &[0.25; 3]).unwrap();
        c.set_metadata("u.kernel", "attn_adam_kernel").unwrap();
        let mut restore = c.restore();
        restore
            .queue(Attn::DESCRIPTOR, "w", attn_buffers(0x1000, 3))
            .unwrap();
        // `u`'s parameters start inside `w`'s second moment.
        match checkpoint_error(restore.queue(Attn::DESCRIPTOR, "u", attn_buffers(0x1000 + 28, 3))) {
            CheckpointError::BadTensor { name, problem } => {
                assert_eq!(name, "u");
                assert!(problem.contains("w.exp_avg_sq"), "{problem}");
            }
            other => panic!("{other}"),
        }
        assert_eq!(restore.writes.len(), 3, "nothing of `u` was queued");
        restore
            .queue(Attn::DESCRIPTOR, "u", attn_buffers(0x2000, 3))
            .unwrap();
        assert_eq!(restore.writes.len(), 6);
    }

    /// A 16-bit kernel's tensor: the weights as bf16, the remainder as `u16` under
    /// `<tensor>.remainder`, the moments as f32; a buffer of another storage type than the
    /// kernel declares is refused before anything is read.
    #[test]
    fn a_remainder_kernel_restores_its_companion() {
        type Rem = adamw_bf16_remainder::Entry;
        let mut c = Checkpoint::new();
        c.insert_u16("w", TensorKind::Bf16, &[0x3f80, 0x4000])
            .unwrap();
        c.insert_u16("w.remainder", TensorKind::U16, &[0x8000, 0xffff])
            .unwrap();
        c.insert_f32("w.exp_avg", &[0.5; 2]).unwrap();
        c.insert_f32("w.exp_avg_sq", &[0.25; 2]).unwrap();
        c.set_metadata("w.kernel", "adamw_bf16_remainder").unwrap();
        let kept: Vec<Kept> = [
            ("p", Storage::Bf16),
            ("p_remainder", Storage::Bf16Remainder),
            ("m", Storage::F32),
            ("v", Storage::F32),
        ]
        .iter()
        .enumerate()
        .map(|(i, &(buffer, storage))| Kept {
            buffer,
            address: 0x1000 * (i as u64 + 1),
            len: 2,
            storage,
            keep: None,
        })
        .collect();
        let mut restore = c.restore();
        restore.queue(Rem::DESCRIPTOR, "w", kept).unwrap();
        let names: Vec<&str> = restore.writes.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["w", "w.remainder", "w.exp_avg", "w.exp_avg_sq"]);
        assert_eq!(restore.writes[1].data, [0x00, 0x80, 0xff, 0xff]);
    }

    #[test]
    fn a_step_count_is_read_from_the_metadata() {
        let mut c = attn_checkpoint();
        c.set_metadata("w.step", "700").unwrap();
        assert_eq!(c.steps_taken("w").unwrap(), 700);
        c.set_metadata("w.step", "seven hundred").unwrap();
        assert!(matches!(
            c.steps_taken("w"),
            Err(CheckpointError::Metadata { .. })
        ));
        assert!(matches!(
            c.steps_taken("v"),
            Err(CheckpointError::Metadata { .. })
        ));
    }
}
