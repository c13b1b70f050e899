//! A save that does not stop training: the state is copied on the device, in stream order,
//! into allocations of the snapshot's own (a device-to-device copy runs at the memory's
//! bandwidth: a 3 GiB state in about a millisecond), and read to the host later on another
//! stream, while the training stream goes on with the next steps. [`Snapshot`] takes the
//! copies; [`PendingSnapshot::read`] turns them into a [`Checkpoint`] once they have landed.
//!
//! The price is device memory: a second copy of what is saved, until the read is done.
use adamant_device::abi::{KernelDescriptor, OptimizerEntry};
use cust::event::{Event, EventFlags};
use cust::stream::Stream;

use super::groups::group_kept;
use super::state::{check_regions, kept, refuse_capture, Kept};
use super::transfer::Staging;
use super::RECORDS_TENSOR;
use super::{kernel_key, state_name, step_key, Checkpoint, CheckpointError, TensorKind};
use crate::buffers::Shared;
use crate::error::{Error, Result};
use crate::groups::ParamGroup;
use crate::interop::Raw;
use crate::memory::DeviceMemory;
use crate::step::restore::RecordsCopy;
use crate::step::StepStates;
use std::sync::Arc;

/// One buffer's copy.
struct Part {
    name: String,
    kind: TensorKind,
    len: usize,
    copy: Arc<DeviceMemory<u8>>,
}

/// Copies of device state taken in stream order, to become a [`Checkpoint`]:
///
/// ```no_run
/// # use adamant_runtime::checkpoint::Snapshot;
/// # fn f(states: &adamant_runtime::StepStates,
/// #      bufs: &adamant_kernels::optimizers::attn_adam_kernel::Buffers<adamant_runtime::Shared<'_>>,
/// #      stream: &adamant_runtime::cust::stream::Stream,
/// #      side: &adamant_runtime::cust::stream::Stream) -> adamant_runtime::Result<()> {
/// use adamant_kernels::optimizers::attn_adam_kernel;
/// let mut snapshot = Snapshot::new();
/// snapshot.steps(states, stream)?;
/// snapshot.tensor::<attn_adam_kernel::Entry>("attn.weight", bufs, Some(0), stream)?;
/// let pending = snapshot.finish(stream)?; // copies enqueued; training goes on on `stream`
/// // ... the next steps on `stream` ...
/// let checkpoint = pending.read(side)?; // the state as it was at the snapshot
/// checkpoint.save(std::path::Path::new("run.safetensors"))?;
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct Snapshot {
    parts: Vec<Part>,
    records: Option<RecordsCopy>,
    /// Per tensor: its kernel, and the record (of the snapshot's step states) it steps with.
    tensors: Vec<(String, &'static str, Option<usize>)>,
    /// The caller's metadata entries.
    metadata: Vec<(String, String)>,
}

impl Snapshot {
    /// An empty snapshot.
    pub fn new() -> Snapshot {
        Snapshot::default()
    }

    /// Copies the records of `states` (and its owned `Q_ABS_REF`) on `stream`: what
    /// [`Checkpoint::save_steps`] saves, as they are when the copy runs.
    ///
    /// # Errors
    ///
    /// [`Error::Capture`] during a capture; [`Error::OutOfMemory`] for the copy; [`Error::Cuda`];
    /// [`Error::Checkpoint`] if the snapshot has records already.
    pub fn steps(&mut self, states: &StepStates, stream: &Stream) -> Result<()> {
        if self.records.is_some() {
            return Err(CheckpointError::BadTensor {
                name: RECORDS_TENSOR.into(),
                problem: "a snapshot holds one StepStates' records".into(),
            }
            .into());
        }
        self.records = Some(states.copy_on_device(stream)?);
        Ok(())
    }

    /// Copies tensor `tensor`'s buffers as kernel `E` keeps them (as
    /// [`Checkpoint::save_tensor`] saves them) on `stream`. With `record = Some(i)`, its step
    /// count is record `i` of the records this snapshot copies ([`Snapshot::steps`]).
    ///
    /// # Errors
    ///
    /// [`Error::Capture`] during a capture; [`Error::StepIndex`] for a record the snapshot's
    /// records do not have (take [`Snapshot::steps`] first); [`Error::OutOfMemory`],
    /// [`Error::Cuda`]; [`Error::Checkpoint`] for a tensor already in the snapshot.
    pub fn tensor<E: OptimizerEntry>(
        &mut self,
        tensor: &str,
        buffers: &E::Buffers<Shared<'_>>,
        record: Option<usize>,
        stream: &Stream,
    ) -> Result<()> {
        let kept = kept::<E, Shared<'_>>(buffers)?;
        self.copy(E::DESCRIPTOR, tensor, kept, record, stream)
    }

    /// As [`Snapshot::tensor`], for buffers other code owns ([`DeviceRegion`]s of the storage
    /// types the kernel declares), each checked to lie in one device allocation.
    ///
    /// [`DeviceRegion`]: crate::DeviceRegion
    ///
    /// # Errors
    ///
    /// As [`Snapshot::tensor`]; [`Error::ForeignBuffer`], [`Error::StorageMismatch`].
    ///
    /// # Safety
    ///
    /// The regions stay allocated until the copies have run (the next synchronisation of
    /// `stream`, or [`PendingSnapshot::read`]).
    pub unsafe fn regions<E: OptimizerEntry>(
        &mut self,
        tensor: &str,
        buffers: &E::Buffers<Raw>,
        record: Option<usize>,
        stream: &Stream,
    ) -> Result<()> {
        check_regions::<E>(buffers)?;
        let kept = kept::<E, Raw>(buffers)?;
        self.copy(E::DESCRIPTOR, tensor, kept, record, stream)
    }

    /// As [`Snapshot::tensor`], for `group` stepped by `kernel` (as
    /// [`Checkpoint::save_group`] saves it).
    ///
    /// # Errors
    ///
    /// As [`Snapshot::tensor`]; [`Error::MissingBuffer`] or [`Error::StorageMismatch`] for a
    /// kernel whose buffers the group does not hold.
    pub fn group(
        &mut self,
        group: &ParamGroup,
        kernel: &'static KernelDescriptor,
        record: Option<usize>,
        stream: &Stream,
    ) -> Result<()> {
        let kept = group_kept(group, kernel)?;
        self.copy(kernel, group.name(), kept, record, stream)
    }

    /// Metadata entry `key` of the checkpoint the snapshot becomes (a value the host knows as
    /// of the snapshot).
    ///
    /// # Errors
    ///
    /// [`CheckpointError::Metadata`] for a key of the format's own.
    pub fn set_metadata(&mut self, key: &str, value: &str) -> Result<(), CheckpointError> {
        Checkpoint::new().set_metadata(key, value)?;
        self.metadata.push((key.to_string(), value.to_string()));
        Ok(())
    }

    fn copy(
        &mut self,
        descriptor: &'static KernelDescriptor,
        tensor: &str,
        kept: Vec<Kept>,
        record: Option<usize>,
        stream: &Stream,
    ) -> Result<()> {
        // Recorded, the copies would be taken at every replay into the same allocations, and
        // read once.
        refuse_capture(stream, "a snapshot")?;
        if let Some(index) = record {
            let len = self.records.as_ref().map_or(0, RecordsCopy::len);
            if index >= len {
                return Err(Error::StepIndex { index, len });
            }
        }
        if self.tensors.iter().any(|(t, _, _)| t == tensor) {
            return Err(CheckpointError::BadTensor {
                name: tensor.into(),
                problem: "the name is used twice".into(),
            }
            .into());
        }
        let mut parts = Vec::with_capacity(kept.len());
        for k in &kept {
            let name = state_name(tensor, descriptor, k.buffer)
                .expect("every kept buffer is a parameter, companion or state of the kernel");
            let bytes = k.len * k.storage.bytes();
            let copy = DeviceMemory::for_copy(bytes, &format!("a snapshot of `{name}`"))?;
            if bytes > 0 {
                // SAFETY: the buffer's allocation (kept alive by `k.keep` until the copy is
                // enqueued, and by the stream order after: it is the caller's live buffer) into
                // a new allocation of the same size.
                unsafe {
                    crate::driver::copy_on_device_async(
                        copy.address(),
                        k.address,
                        bytes,
                        stream,
                        &name,
                    )
                }?;
            }
            parts.push(Part {
                name,
                kind: TensorKind::of_storage(k.storage),
                len: k.len,
                copy,
            });
        }
        self.parts.extend(parts);
        self.tensors
            .push((tensor.to_string(), descriptor.name, record));
        Ok(())
    }

    /// Records an event after the copies on `stream`: the training may go on on `stream`
    /// (the copies are in its order, before the next steps).
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] for the event.
    pub fn finish(self, stream: &Stream) -> Result<PendingSnapshot> {
        let event = Event::new(EventFlags::DISABLE_TIMING)
            .map_err(|e| Error::cuda("creating a snapshot's event", e))?;
        event
            .record(stream)
            .map_err(|e| Error::cuda("recording a snapshot's event", e))?;
        Ok(PendingSnapshot {
            snapshot: self,
            event,
        })
    }
}

/// A [`Snapshot`] whose copies are enqueued ([`Snapshot::finish`]). It is `Send`: read it on
/// another thread (after `CurrentContext::set_current` with a clone of
/// [`Adamant::context`](crate::Adamant::context) there) and the host goes on enqueueing steps
/// while the state is read; freeing the copies after the read waits for the device's work.
pub struct PendingSnapshot {
    snapshot: Snapshot,
    event: Event,
}

impl PendingSnapshot {
    /// The snapshot as a [`Checkpoint`]: `side` waits for the copies (on the device: the host
    /// does not wait for the training stream), then reads them to the host through page-locked
    /// staging. The checkpoint holds the state as it was when the copies ran.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] for the copies; [`Error::Checkpoint`] for a name used twice.
    pub fn read(self, side: &Stream) -> Result<Checkpoint> {
        side.wait_event(self.event, cust::stream::StreamWaitEventFlags::DEFAULT)
            .map_err(|e| Error::cuda("waiting for a snapshot's copies", e))?;
        let mut staging = Staging::default();
        let mut download = |address: u64, bytes: usize, what: &str| {
            // SAFETY: the snapshot's own allocations, of these sizes, written by the copies
            // `side` now waits for.
            unsafe { staging.download(address, bytes, side, what) }
        };
        let mut ck = Checkpoint::new();
        let s = self.snapshot;
        let mut steps: Vec<u32> = Vec::new();
        if let Some(records) = &s.records {
            let snapshot = records.read(&mut download)?;
            steps = snapshot.records.iter().map(|r| r.state.step).collect();
            ck.insert_records(snapshot)?;
        }
        for part in &s.parts {
            let bytes = part.len * part.kind.bytes();
            // SAFETY: as `download`'s.
            let (data, digests) =
                unsafe { staging.download_hashed(part.copy.address(), bytes, side, &part.name) }?;
            ck.insert_hashed(&part.name, part.kind, &[part.len], data, digests)?;
        }
        for (key, value) in &s.metadata {
            ck.set_metadata(key, value)?;
        }
        for (tensor, kernel, record) in &s.tensors {
            ck.set_metadata(&kernel_key(tensor), kernel)?;
            if let Some(index) = record {
                ck.set_metadata(&step_key(tensor), &steps[*index].to_string())?;
            }
        }
        Ok(ck)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pending snapshot is read on another thread while the host enqueues steps.
    #[test]
    fn a_pending_snapshot_can_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<PendingSnapshot>();
    }
}
