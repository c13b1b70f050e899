//! The checker for one range of slots: tables uploaded once, then one launch per check on the
//! stream the caller gives (no memset, no copy, no host synchronisation; one kernel node in a
//! graph). The kernel's last block writes the results into page-locked host memory mapped into
//! the device's address space and resets its accumulators; `report()` waits for the check's
//! event only (no device-wide or stream-wide synchronisation).
use std::ops::RangeInclusive;

use adamant_device::abi::ArgValue;
use adamant_device::nan_check::{
    report_q_word, report_words, Partial, SlotMeta, WorkItem, NO_BAD_INDEX, REPORT_WORDS_PER_SLOT,
    SHARED_BYTES_PER_THREAD,
};
use adamant_kernels::nan_check::nan_check_kernel;
use std::sync::Arc;

use cust::context::CurrentContext;
use cust::event::{Event, EventFlags};
use cust::function::Function;
use cust::memory::DeviceCopy;
use cust::stream::Stream;

use super::bindings::SlotBindings;
use super::layout::{self, Layout};
use super::report::{NanReport, SlotResult};
use super::slots::q_abs_ref_eff;
use super::tables::{SlotId, SlotTable};
use crate::device::Adamant;
use crate::error::{CudaContext, Error, Result};
use crate::host_mapped::HostMapped;
use crate::memory::{DeviceMemory, Keep};
use crate::step::StepStates;

/// The entry a check launches, named in the errors of its launch.
const CHECK_KERNEL: &str = nan_check_kernel::DESCRIPTOR.name;

/// Threads per block of the checker.
pub const CHECK_BLOCK_THREADS: u32 = 256;
/// Resident blocks per multiprocessor the grid is capped at (blocks grid-stride over the work
/// table, so more would only queue).
const CHECK_BLOCKS_PER_SM: u32 = 8;

/// `SlotMeta` and `WorkItem` are plain `#[repr(C)]` data defined in the device crate, which does
/// not depend on cust; these wrappers carry cust's `DeviceCopy` for them.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct DeviceSlotMeta(SlotMeta);
// SAFETY: `SlotMeta` is `#[repr(C)]` of integers and floats only: no pointers into host memory
// (its `ptr` is a device address held as a `u64`), valid for any bit pattern.
unsafe impl DeviceCopy for DeviceSlotMeta {}

#[derive(Clone, Copy)]
#[repr(transparent)]
struct DeviceWorkItem(WorkItem);
// SAFETY: as above; `WorkItem` is `#[repr(C)]` of integers only.
unsafe impl DeviceCopy for DeviceWorkItem {}

/// A fused NaN / max-abs check of one contiguous range of a slot table (that of the bindings
/// it is built from): one kernel launch
/// checks every bound buffer of the range, and [`NanChecker::report`] names the slots that
/// tripped. It borrows the runtime (`'rt`) and launches on the stream it is given. See the
/// [module](super) for an example.
pub struct NanChecker<'rt> {
    runtime: &'rt Adamant,
    /// Resolved once: the per-step path makes no module lookups.
    function: &'rt Function<'rt>,
    table: SlotTable,
    range: RangeInclusive<usize>,
    lens: Vec<usize>,
    slots: Arc<DeviceMemory<DeviceSlotMeta>>,
    work: Arc<DeviceMemory<DeviceWorkItem>>,
    work_items: u32,
    grid: u32,
    flags: Arc<DeviceMemory<u32>>,
    max_abs_bits: Arc<DeviceMemory<u32>>,
    first_bad: Arc<DeviceMemory<u64>>,
    /// The kernel's arrival counter (0 between launches).
    arrivals: Arc<DeviceMemory<u32>>,
    /// The `q_abs_ref_eff` word an eager [`NanChecker::enqueue`] writes and points the kernel at.
    q_word: Arc<DeviceMemory<f32>>,
    /// What the kernel's last block publishes ([`report_words`]): per slot flags, max-abs bits and
    /// the first bad index, then the `q_abs_ref_eff` the thresholds used.
    report: Arc<HostMapped<u32>>,
    /// The bound buffers' allocations: the checker reads them at every check.
    bound: Vec<Keep>,
    /// Recorded after the last check's launch (or by [`NanChecker::record_done`] after a graph
    /// replay); [`NanChecker::report`] waits for it.
    done: Event,
    state: Enqueued,
}

/// What `report` may decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Enqueued {
    Nothing,
    /// An eager check, with its event recorded.
    Eager,
    /// A check recorded into a graph: `report` needs a `record_done` after a replay.
    Captured,
    /// A replay's event recorded by `record_done`.
    Replayed,
}

impl<'rt> NanChecker<'rt> {
    /// Prepares a check of `range` of the bindings' table ([`SlotBindings::table`]; indices
    /// into it, for example the whole table, [`SlotTable::all`]). Every slot of the range must be bound; the first unbound one is an
    /// [`Error::UnboundSlot`] naming it. Uploads the metadata and work tables (synchronously:
    /// this is setup, not the per-step path). The checker keeps a share of every bound buffer of
    /// the runtime's, so none is freed while it can still check it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSlotRange`], [`Error::UnboundSlot`], [`Error::NanCheckTooLarge`] for a
    /// range of more work items than one launch takes, [`Error::OutOfMemory`] or
    /// [`Error::Cuda`] for the uploads.
    pub fn new(
        runtime: &'rt Adamant,
        range: RangeInclusive<usize>,
        bindings: &SlotBindings,
    ) -> Result<Self> {
        let regions = bindings.regions_for(&range)?;
        let cap = runtime.multiprocessors().max(1) * CHECK_BLOCKS_PER_SM;
        let total: usize = regions.iter().map(|r| r.len).sum();
        let chunk = layout::chunk_for(total, cap as usize);
        let table = bindings.table();
        let Layout { slots, work } = layout::build_with_chunk(table, &range, &regions, chunk)?;
        let n = slots.len();
        let work_items = work.len() as u32; // bounded by layout::MAX_WORK_ITEMS
                                            // At least one block, even with nothing to scan: the last block writes the report.
        let grid = work_items.min(cap).max(1);

        let slots = upload(
            &slots.into_iter().map(DeviceSlotMeta).collect::<Vec<_>>(),
            "slot metadata",
        )?;
        let work = upload(
            &work.into_iter().map(DeviceWorkItem).collect::<Vec<_>>(),
            "work table",
        )?;
        let checker = NanChecker {
            runtime,
            bound: bindings.keeps_for(&range),
            function: runtime.function(&nan_check_kernel::DESCRIPTOR)?,
            lens: regions.iter().map(|r| r.len).collect(),
            table,
            range,
            slots,
            work,
            work_items,
            grid,
            flags: upload(&vec![0u32; n], "flags")?,
            max_abs_bits: upload(&vec![0u32; n], "max-abs words")?,
            first_bad: upload(&vec![NO_BAD_INDEX; n], "first-bad indices")?,
            arrivals: upload(&[0u32], "arrival counter")?,
            q_word: upload(&[1.0f32], "q_abs_ref_eff word")?,
            report: Arc::new(HostMapped::new(&0u32, report_words(n), "nan-check report")?),
            done: Event::new(EventFlags::DISABLE_TIMING).during("creating the nan-check event")?,
            state: Enqueued::Nothing,
        };
        // The uploads ran on the legacy default stream, and a copy from pageable memory may
        // return before its DMA lands. A full context synchronisation, paid once at setup, makes
        // them complete whatever stream the check is later enqueued on (the runtime's is a
        // blocking stream today, but a caller's stream need not be).
        CurrentContext::synchronize().during("synchronizing after the nan-check uploads")?;
        Ok(checker)
    }

    /// The table checked.
    pub fn table(&self) -> SlotTable {
        self.table
    }

    /// The checked slots (indices into the table, inclusive).
    pub fn range(&self) -> RangeInclusive<usize> {
        self.range.clone()
    }

    /// Number of work items (chunks of [`CHECK_CHUNK_ELEMENTS`](super::CHECK_CHUNK_ELEMENTS) elements, or a
    /// multiple of it for a large range) one check covers.
    pub fn work_items(&self) -> u32 {
        self.work_items
    }

    /// Enqueues one check on `stream`: one write of the `q_abs_ref_eff` word and one launch for
    /// the whole range, whose last block writes the results into page-locked host memory and
    /// resets the kernel's accumulators for the next check. One checker's checks share those
    /// accumulators, so they must not overlap on the device: enqueue them on one stream (or
    /// order the streams with events). Does not wait for the GPU; [`NanChecker::report`] reads the result. `q_abs_ref` is the ISV's
    /// current `Q_ABS_REF` (thresholds are `factor × max(Q_ABS_REF, 1.0)`), written to a device
    /// word the kernel reads. Inside a graph capture it is recorded like any launch (and the
    /// value is recorded with it): for thresholds that follow the step, use
    /// [`NanChecker::enqueue_with_step_state`].
    ///
    /// # Errors
    ///
    /// Before anything is enqueued: [`Error::InvalidQAbsRef`] for a negative or non-finite
    /// `q_abs_ref`, [`Error::SlotThresholdOverflow`] if a slot's threshold overflows f32.
    /// [`Error::Cuda`] if the driver refuses the write or the launch.
    pub fn enqueue(&mut self, stream: &Stream, q_abs_ref: f32) -> Result<()> {
        let q_eff = self.validate_q_abs_ref(q_abs_ref)?;
        self.runtime
            .retain(stream, || self.keeps())
            .map_err(|e| e.in_kernel(CHECK_KERNEL))?;
        let q_ptr = self.q_word.address();
        // SAFETY: our own one-word buffer, read only by the kernel that follows on `stream`.
        unsafe {
            crate::driver::fill_words_async(
                q_ptr,
                q_eff.to_bits(),
                1,
                stream,
                "the nan-check q_abs_ref_eff",
            )
        }?;
        self.enqueue_from(stream, q_ptr)
    }

    /// As [`NanChecker::enqueue`], with the thresholds' `q_abs_ref_eff` read on the device from
    /// record `index` of `states` (the `max(Q_ABS_REF, 1)` its last advance accepted): recorded
    /// into a graph after the advance, every replay checks against that step's reference (the
    /// graph keeps the records alive, as it keeps everything its launches use).
    ///
    /// # Errors
    ///
    /// [`Error::StepIndex`] before anything is enqueued; [`Error::Cuda`] as for
    /// [`NanChecker::enqueue`].
    pub fn enqueue_with_step_state(
        &mut self,
        stream: &Stream,
        states: &StepStates,
        index: usize,
    ) -> Result<()> {
        let q_ptr = states
            .q_abs_ref_eff_ptr(index)
            .map_err(|e| e.in_kernel(CHECK_KERNEL))?;
        self.runtime
            .retain(stream, || {
                let mut keeps = self.keeps();
                keeps.extend(states.keeps());
                keeps
            })
            .map_err(|e| e.in_kernel(CHECK_KERNEL))?;
        self.enqueue_from(stream, q_ptr)
    }

    /// What a graph that records a check keeps: the checker's tables, accumulators, report and
    /// `q_abs_ref_eff` word, and the bound buffers.
    fn keeps(&self) -> Vec<Keep> {
        let mut keeps: Vec<Keep> = vec![
            self.slots.clone(),
            self.work.clone(),
            self.flags.clone(),
            self.max_abs_bits.clone(),
            self.first_bad.clone(),
            self.arrivals.clone(),
            self.q_word.clone(),
            self.report.clone(),
        ];
        keeps.extend(self.bound.iter().cloned());
        keeps
    }

    /// Records the event [`NanChecker::report`] waits for, on `stream`, after a replay of a graph
    /// that holds this checker's check: the report then decodes that replay's results.
    ///
    /// # Errors
    ///
    /// [`Error::Capture`] while `stream` is being captured; [`Error::Cuda`] if the driver
    /// refuses the event.
    pub fn record_done(&mut self, stream: &Stream) -> Result<()> {
        if crate::graph::is_capturing(stream)? {
            return Err(Error::Capture {
                operation: "NanChecker::record_done marks a replay's end; call it after the \
                            graph launch, not inside the capture"
                    .into(),
            });
        }
        self.done
            .record(stream)
            .during("recording the nan-check event")?;
        if self.state != Enqueued::Nothing {
            self.state = Enqueued::Replayed;
        }
        Ok(())
    }

    fn enqueue_from(&mut self, stream: &Stream, q_ptr: u64) -> Result<()> {
        let capturing =
            crate::graph::is_capturing(stream).map_err(|e| e.in_kernel(CHECK_KERNEL))?;
        // Until this check is fully enqueued, `report` must not decode a stale report.
        self.state = Enqueued::Nothing;
        let mut args = self.kernel_args(q_ptr);
        let params = crate::args::arg_pointers(&mut args);
        let shared = CHECK_BLOCK_THREADS * SHARED_BYTES_PER_THREAD;
        // SAFETY: the argument list matches the entry's descriptor (checked in `kernel_args`);
        // the tables were uploaded for exactly these counts; every bound region holds its `len`
        // f32s (the bindings' contract); `q_ptr` is one f32 that outlives the check (ours, or a
        // step-state record); the accumulators and the counter are ours and at rest between
        // launches (the last block resets them), and a checker's launches are ordered on the
        // caller's stream (`&mut self`); the report is our mapped page-locked memory of
        // `report_words(n)` words; the dynamic shared memory is what the kernel indexes for
        // this block size.
        unsafe {
            stream.launch(
                self.function,
                self.grid,
                CHECK_BLOCK_THREADS,
                shared,
                &params,
            )
        }
        .map_err(|source| {
            Error::cuda(
                format!(
                    "launching nan_check_kernel (table `{}`, slots {}..={}, {} work items)",
                    self.table.name(),
                    self.range.start(),
                    self.range.end(),
                    self.work_items
                ),
                source,
            )
        })?;
        if capturing {
            self.state = Enqueued::Captured;
        } else {
            self.done
                .record(stream)
                .during("recording the nan-check event")?;
            self.state = Enqueued::Eager;
        }
        Ok(())
    }

    /// Waits for the last check's event (not for the device or the whole stream), then decodes
    /// the report the kernel's last block wrote into page-locked memory. Call it when the loop needs the answer
    /// (every N steps, or before halting). A tripped slot is not an error here: see
    /// [`NanReport::ensure_quiet`]. After a graph replay, call [`NanChecker::record_done`] first.
    ///
    /// # Errors
    ///
    /// [`Error::NanCheckNotEnqueued`] before the first [`NanChecker::enqueue`], or for a check
    /// recorded into a graph with no [`NanChecker::record_done`] since; [`Error::Cuda`] if the
    /// stream's work failed.
    pub fn report(&self) -> Result<NanReport> {
        if matches!(self.state, Enqueued::Nothing | Enqueued::Captured) {
            return Err(Error::NanCheckNotEnqueued);
        }
        self.done
            .synchronize()
            .during("waiting for the nan-check event")?;
        let words = self.report.read();
        let n = self.lens.len();
        let q_abs_ref_eff = f32::from_bits(words[report_q_word(n)]);
        let slots = self
            .range
            .clone()
            .enumerate()
            .map(|(i, index)| {
                let mut w = [0u32; REPORT_WORDS_PER_SLOT];
                w.copy_from_slice(
                    &words[REPORT_WORDS_PER_SLOT * i..REPORT_WORDS_PER_SLOT * (i + 1)],
                );
                let seen = Partial::from_words(w);
                SlotResult::decode(
                    // In the table: the range was validated against it in `new`.
                    SlotId::declared(self.table, index),
                    self.lens[i],
                    seen.flags,
                    seen.max_abs_bits,
                    seen.first_bad,
                    q_abs_ref_eff,
                )
            })
            .collect();
        Ok(NanReport {
            table: self.table,
            range: self.range.clone(),
            q_abs_ref_eff,
            slots,
        })
    }

    /// `max(Q_ABS_REF, 1.0)`, after checking it and every threshold of the range are finite.
    fn validate_q_abs_ref(&self, q_abs_ref: f32) -> Result<f32> {
        if !q_abs_ref.is_finite() || q_abs_ref < 0.0 {
            return Err(Error::InvalidQAbsRef { value: q_abs_ref });
        }
        let q_eff = q_abs_ref_eff(q_abs_ref);
        for spec in &self.table.slots()[self.range.clone()] {
            if let Some(threshold) = spec.check.threshold(q_eff) {
                if !threshold.is_finite() {
                    return Err(Error::SlotThresholdOverflow {
                        index: spec.index,
                        name: spec.name,
                        factor: spec.check.device_factor(),
                        q_abs_ref_eff: q_eff,
                    });
                }
            }
        }
        Ok(q_eff)
    }

    fn kernel_args(&self, q_abs_ref_eff: u64) -> Vec<ArgValue> {
        kernel_args(
            KernelPointers {
                slots: self.slots.address(),
                work: self.work.address(),
                flags: self.flags.address(),
                max_abs_bits: self.max_abs_bits.address(),
                first_bad: self.first_bad.address(),
                arrivals: self.arrivals.address(),
                report: self.report.device_ptr(),
            },
            self.lens.len() as u32,
            self.work_items,
            q_abs_ref_eff,
        )
    }
}

/// The device addresses one launch passes.
pub(crate) struct KernelPointers {
    pub slots: u64,
    pub work: u64,
    pub flags: u64,
    pub max_abs_bits: u64,
    pub first_bad: u64,
    pub arrivals: u64,
    pub report: u64,
}

/// The entry's arguments in PTX order, checked against the descriptor `#[kernel_entry]`
/// generated from the kernel's signature.
pub(crate) fn kernel_args(
    ptrs: KernelPointers,
    n_slots: u32,
    work_items: u32,
    q_abs_ref_eff: u64,
) -> Vec<ArgValue> {
    let args = vec![
        ArgValue::Ptr(ptrs.slots),
        ArgValue::U32(n_slots),
        ArgValue::Ptr(ptrs.work),
        ArgValue::U32(work_items),
        ArgValue::Ptr(q_abs_ref_eff),
        ArgValue::Ptr(ptrs.flags),
        ArgValue::Ptr(ptrs.max_abs_bits),
        ArgValue::Ptr(ptrs.first_bad),
        ArgValue::Ptr(ptrs.arrivals),
        ArgValue::Ptr(ptrs.report),
    ];
    crate::args::assert_args_match(&nan_check_kernel::DESCRIPTOR, &args);
    args
}

fn upload<T: DeviceCopy>(data: &[T], what: &str) -> Result<Arc<DeviceMemory<T>>> {
    DeviceMemory::from_host(data, &format!("the nan-check {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The launch's argument list has the kernel signature's count and types (the descriptor
    /// is generated from the signature, so this catches a kernel change not followed here).
    #[test]
    fn kernel_args_match_the_entry_signature() {
        let ptrs = KernelPointers {
            slots: 1,
            work: 2,
            flags: 3,
            max_abs_bits: 4,
            first_bad: 5,
            arrivals: 7,
            report: 8,
        };
        let args = kernel_args(ptrs, 25, 100, 6);
        assert_eq!(args.len(), nan_check_kernel::DESCRIPTOR.params.len());
    }
}
