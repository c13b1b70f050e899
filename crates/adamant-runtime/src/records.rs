//! The diagnostics records of optimizer launches: what each launch read and wrote, per tensor
//! (`adamant_device::diagnostics`). Every optimizer entry takes a records header; every launch
//! path of the runtime passes one, checked against the entry before anything is enqueued.
use adamant_device::abi::{KernelDescriptor, OptimizerEntry};
use adamant_device::diagnostics::{
    identity, record_words, RecordsHeader, TensorRecord, MAX_BUFFERS, OUT_SEQUENCE, PREFIX_WORDS,
};
use std::sync::Arc;

use cust::memory::DeviceCopy;

use crate::error::{Error, Result};
use crate::host_mapped::HostMapped;
use crate::memory::{DeviceMemory, Keep};

/// `RecordsHeader` is plain `#[repr(C)]` data of the device crate, which does not depend on
/// cust; this wrapper carries cust's `DeviceCopy` for it.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct DeviceHeader(RecordsHeader);
// SAFETY: `RecordsHeader` is `#[repr(C)]` of integers only (its pointers are device addresses
// held as `u64`s), valid for any bit pattern.
unsafe impl DeviceCopy for DeviceHeader {}

/// The device memory and the mapped host memory behind one launch site's records: the header
/// the entry reads, its accumulators (reset by each launch's last block) and the published
/// records, which the host reads after an event recorded after the launch, with no copy and no
/// device-wide synchronisation.
///
/// One `Records` serves one launch at a time: two launches in flight with the same records (on
/// two streams, or two branches of a graph) would share one arrival counter. A [`ParamGroup`]
/// and a [`TensorSet`] own theirs.
///
/// [`ParamGroup`]: crate::ParamGroup
/// [`TensorSet`]: crate::TensorSet
pub struct Records {
    header: Arc<DeviceMemory<DeviceHeader>>,
    /// The header points into it; a graph keeps it with the header.
    accum: Arc<DeviceMemory<u32>>,
    out: Arc<HostMapped<u32>>,
    n_tensors: usize,
    n_buffers: usize,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("n_tensors", &self.n_tensors)
            .field("n_buffers", &self.n_buffers)
            .finish()
    }
}

/// What [`Records::read`] returns: the records of the last launch that published.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchRecords {
    /// How many launches have published through these records (0: none yet). A launch that has
    /// been enqueued but not finished has not published.
    pub sequence: u32,
    /// One record per tensor, in launch order (a single-buffer launch has one).
    pub tensors: Vec<TensorRecord>,
}

impl Records {
    /// Records for launches of `n_tensors` tensors of a kernel with `n_buffers` buffers (its
    /// `#[param]`, `#[input]` and `#[state]` arguments): the accumulators at "nothing seen", the
    /// published block empty, sequence 0.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`] for more than [`MAX_BUFFERS`] buffers or more than `u32::MAX` tensors;
    /// [`Error::OutOfMemory`], [`Error::Cuda`] if an allocation fails.
    pub fn new(n_tensors: usize, n_buffers: usize) -> Result<Records> {
        if n_buffers > MAX_BUFFERS {
            return Err(Error::TooLarge {
                kernel: "records",
                what: "the buffer count".into(),
                value: n_buffers,
                limit: MAX_BUFFERS,
            });
        }
        if n_tensors > u32::MAX as usize {
            return Err(Error::TooLarge {
                kernel: "records",
                what: "the tensor count".into(),
                value: n_tensors,
                limit: u32::MAX as usize,
            });
        }
        let words = record_words(n_buffers);
        let mut initial = vec![0u32; PREFIX_WORDS];
        for _ in 0..n_tensors {
            initial.extend((0..words).map(identity));
        }
        let accum = DeviceMemory::from_host(&initial, "diagnostics records")?;
        let mut out = HostMapped::new(&0u32, initial.len(), "diagnostics records")?;
        // Written once, before any launch can read it: the same identity words.
        out.write(&initial);
        // The device crate's own struct, so the entry reads the layout the host wrote.
        let header = DeviceMemory::from_host(
            &[DeviceHeader(RecordsHeader {
                accum: accum.address(),
                out: out.device_ptr(),
                n_tensors: n_tensors as u32,
                n_buffers: n_buffers as u32,
            })],
            "a records header",
        )?;
        Ok(Records {
            header,
            accum,
            out: Arc::new(out),
            n_tensors,
            n_buffers,
        })
    }

    /// Records sized for `descriptor`'s launches of `n_tensors` tensors.
    ///
    /// # Errors
    ///
    /// As [`Records::new`].
    pub fn for_entry(descriptor: &KernelDescriptor, n_tensors: usize) -> Result<Records> {
        Records::new(n_tensors, descriptor.buffer_count())
    }

    /// Records for single-buffer launches of `E` ([`Adamant::launch`](crate::Adamant::launch),
    /// [`Launch::stepped`](crate::Launch::stepped) and their raw forms): one tensor of `E`'s buffers.
    ///
    /// [`Adamant::launch`]: crate::Adamant::launch
    /// [`Launch::stepped`]: crate::Launch::stepped
    ///
    /// # Errors
    ///
    /// As [`Records::new`].
    pub fn single<E: OptimizerEntry>() -> Result<Records> {
        Records::for_entry(E::DESCRIPTOR, 1)
    }

    /// Tensors per launch.
    pub fn n_tensors(&self) -> usize {
        self.n_tensors
    }

    /// Buffers per tensor.
    pub fn n_buffers(&self) -> usize {
        self.n_buffers
    }

    /// The header's device address, after checking that these records fit a launch of
    /// `descriptor` over `n_tensors` tensors.
    ///
    /// # Errors
    ///
    /// [`Error::RecordsMismatch`], naming the kernel and both shapes.
    pub(crate) fn check(&self, descriptor: &KernelDescriptor, n_tensors: usize) -> Result<u64> {
        self.check_counts(descriptor, n_tensors, descriptor.buffer_count())
    }

    /// [`Records::check`] against a buffer count given apart (a fused entry's records have its
    /// rules' most buffers, not its table count).
    pub(crate) fn check_counts(
        &self,
        descriptor: &KernelDescriptor,
        n_tensors: usize,
        n_buffers: usize,
    ) -> Result<u64> {
        if self.n_buffers != n_buffers || self.n_tensors != n_tensors {
            return Err(Error::RecordsMismatch {
                kernel: descriptor.name,
                expected: format!("{n_tensors} tensors of {n_buffers} buffers"),
                found: format!("{} tensors of {} buffers", self.n_tensors, self.n_buffers),
            });
        }
        Ok(self.header.address())
    }

    /// What a graph that records a launch through these records keeps: the header, the
    /// accumulators and the published block.
    pub(crate) fn keeps(&self) -> [Keep; 3] {
        [self.header.clone(), self.accum.clone(), self.out.clone()]
    }

    /// The records as the last launch that finished left them. Call it after waiting for an
    /// event recorded after the launch (or a synchronisation); [`LaunchRecords::sequence`] says
    /// how many launches have published.
    pub fn read(&self) -> LaunchRecords {
        let words = self.out.read();
        let per = record_words(self.n_buffers);
        let tensors = (0..self.n_tensors)
            .map(|t| {
                let at = PREFIX_WORDS + t * per;
                TensorRecord::from_words(&words[at..at + per], self.n_buffers)
            })
            .collect();
        LaunchRecords {
            sequence: words[OUT_SEQUENCE],
            tensors,
        }
    }
}
