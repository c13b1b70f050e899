//! The host side of the step's own protection (`adamant_device::guard`): a [`GradientGuard`]
//! holds the device tables of one set of gradients (the tensors that step with one guarded
//! record) and enqueues the pass that judges them, before the record's advance (or with it:
//! [`GradientGuard::enqueue_and_advance`] has the pass's last block advance the records, one
//! launch for both). Recorded into
//! a graph, every replay judges its own step's gradients: a non-finite gradient skips the step
//! (nothing written, `t` kept, the skip counted in the record), and with clipping the stepped
//! entries scale their `#[grad]` inputs by the global-norm coefficient. No host synchronisation.
use std::sync::Arc;

use adamant_device::abi::ArgValue;
use adamant_device::abi::Storage;
use adamant_device::guard::{
    GuardChunk, GuardGroup, GUARD_BF16, GUARD_CHUNK_QUANTUM, GUARD_CHUNK_WORDS, GUARD_F16,
    GUARD_F32, GUARD_MAX_BLOCKS, GUARD_SHARED_WORDS, GUARD_THREADS,
};
use adamant_kernels::guard::grad_guard_kernel;
use cust::function::Function;
use cust::stream::Stream;

use crate::args::arg_pointers;
use crate::buffers::{keep_of, ReadBuffer};
use crate::device::Adamant;
use crate::error::{CudaContext, Error, Result};
use crate::interop::DeviceRegion;
use crate::memory::{DeviceMemory, Keep};
use crate::step::StepStates;

/// The gradients of the tensors that step with one guarded record, and the device tables its
/// guard pass reads: build it once (setup: it allocates and uploads), then enqueue it before
/// every advance of the record, eagerly or in a capture.
///
/// One guard runs at a time: its partial sums and arrival counter are its own, so two
/// enqueues of one guard on streams that can overlap race (use one guard per stream, or order
/// the streams), as for [`Records`](crate::Records).
///
/// ```
/// use adamant_kernels::optimizers::iqn_adam_kernel;
/// use adamant_runtime::{
///     AdamHyper, DeviceArray, GradientGuard, GuardSpec, ParamBuffer, QAbsRef, Records, StepBound,
///     StepSpec, StepStates,
/// };
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let rt = match adamant_runtime::Adamant::new() {
/// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
/// #     other => other?,
/// # };
/// let n = 1024;
/// let mut p = ParamBuffer::filled(n, 0.5)?;
/// let mut g = DeviceArray::filled(n, 1e-3)?;
/// let (mut m, mut v) = (DeviceArray::zeroed(n)?, DeviceArray::zeroed(n)?);
/// let records = Records::single::<iqn_adam_kernel::Entry>()?;
/// let spec = StepSpec::adam(&AdamHyper::pytorch_defaults(1)?, StepBound::FromQAbsRef)?
///     .with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper { eps: 1e-8, weight_decay: 0.0 })?
///     .guarded(GuardSpec { skip_non_finite: true, max_norm: Some(1.0), loss_scale: None })?;
/// let states = StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 })?;
/// let guard = GradientGuard::new(&[&g])?;
/// let mut step = |g: &DeviceArray| -> adamant_runtime::Result<()> {
///     // Judge this step's gradients, then t += 1 unless skipped: one launch.
///     guard.enqueue_and_advance(&rt, rt.stream(), &states)?;
///     let b = iqn_adam_kernel::Buffers { p: &mut p, g: g.input(), m: &mut m, v: &mut v };
///     let k = iqn_adam_kernel::StepScalars {};
///     rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
///         .stepped(&k, &states, 0)
///         .buffers(&b, &records)?;
///     Ok(())
/// };
/// step(&g)?;
/// let mut bad = vec![1e-3f32; n];
/// bad[7] = f32::NAN;
/// g.upload(&bad)?;
/// step(&g)?; // skipped: nothing written, t stays 1
/// rt.synchronize()?;
/// assert_eq!(states.read()?[0].step, 1);
/// assert_eq!(states.last_guards()[0].skipped_steps, 1);
/// # Ok(())
/// # }
/// ```
pub struct GradientGuard {
    /// The chunk table ([`GUARD_CHUNK_WORDS`] words per chunk: its gradient address, the index
    /// of its first value among its record's, its length), at least one word.
    chunks: Arc<DeviceMemory<u64>>,
    n_chunks: u32,
    /// The groups table ([`GUARD_GROUP_WORDS`](adamant_device::guard::GUARD_GROUP_WORDS) words
    /// per record judged).
    groups: Arc<DeviceMemory<u32>>,
    /// Per group, the record it judges, counted from the one [`GradientGuard::enqueue`] is
    /// given.
    records: Vec<usize>,
    /// Two words per chunk: its f64 partial sum (bits) and its first non-finite index.
    partials: Arc<DeviceMemory<u64>>,
    /// The blocks' arrival counter, reset by the last one.
    arrivals: Arc<DeviceMemory<u32>>,
    /// The gradients' allocations, which a graph recording the guard keeps.
    gradients: Vec<Keep>,
}

/// One gradient a guard reads: its address, length and storage code, and the allocation a
/// graph recording the guard keeps (none for memory other code owns).
struct Source {
    ptr: u64,
    len: usize,
    storage: u32,
    keep: Option<Keep>,
}

impl GradientGuard {
    /// The guard of one record's `gradients` (every gradient buffer of the tensors that step
    /// with it; empty ones count as no elements), the record named when it is enqueued.
    /// Allocates and uploads its tables: setup.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`] for a gradient past `u32::MAX` elements; [`Error::OutOfMemory`] or
    /// [`Error::Cuda`] for the tables.
    pub fn new(gradients: &[&dyn ReadBuffer]) -> Result<GradientGuard> {
        GradientGuard::per_record(&[(0, gradients)])
    }

    /// One guard pass for several records of one tensor each: record `i` (counted from the one
    /// [`GradientGuard::enqueue`] is given) is judged by `gradients[i]`, as
    /// [`GradientGuard::per_record`] with one gradient per record.
    ///
    /// # Errors
    ///
    /// As [`GradientGuard::per_record`].
    pub fn one_per_record(gradients: &[&dyn ReadBuffer]) -> Result<GradientGuard> {
        let groups: Vec<(usize, &[&dyn ReadBuffer])> = gradients
            .iter()
            .enumerate()
            .map(|(record, g)| (record, std::slice::from_ref(g)))
            .collect();
        GradientGuard::per_record(&groups)
    }

    /// One guard pass for several records: `groups` pairs each record (counted from the one
    /// [`GradientGuard::enqueue`] is given) with the gradients of the tensors that step with
    /// it. One launch judges every record, each by its own gradients only: a group of eight
    /// records costs one pass over their gradients, not eight launches. A gradient in a 16-bit
    /// buffer (`DeviceArray::zeroed_as(n, Storage::F16)`) is widened exactly before it is
    /// squared. Setup, as [`GradientGuard::new`].
    ///
    /// # Errors
    ///
    /// [`Error::GuardGroups`] for no group, a record named twice (two verdicts for one
    /// record) or a buffer that holds no gradient type (a bf16 remainder); as
    /// [`GradientGuard::new`].
    pub fn per_record(groups: &[(usize, &[&dyn ReadBuffer])]) -> Result<GradientGuard> {
        let mut sources = Vec::with_capacity(groups.len());
        for (record, gs) in groups {
            let mut group = Vec::with_capacity(gs.len());
            for (t, g) in gs.iter().enumerate() {
                group.push(Source {
                    ptr: g.device_ptr(),
                    len: g.len(),
                    storage: guard_storage(*record, t, g.storage())?,
                    keep: Some(keep_of(*g)),
                });
            }
            sources.push((*record, group));
        }
        GradientGuard::from_sources(&sources)
    }

    /// [`GradientGuard::per_record`] over gradients in memory other code owns, in `f32`,
    /// `bf16` or `f16` ([`DeviceRegion::of`]): a 16-bit gradient (fp16 training with loss
    /// scaling, `GuardSpec::loss_scale`) is widened exactly before it is squared, so its norm
    /// and its first non-finite value are found as for `f32`.
    ///
    /// # Safety
    ///
    /// Every region must be live device memory of its storage type, holding the gradient,
    /// whenever the guard is enqueued and whenever a graph that recorded it is launched: the
    /// guard keeps no allocation of other code alive.
    ///
    /// # Errors
    ///
    /// [`Error::GuardGroups`] for a region that holds no gradient type (a bf16 remainder); as
    /// [`GradientGuard::per_record`].
    pub unsafe fn per_record_raw(groups: &[(usize, &[DeviceRegion])]) -> Result<GradientGuard> {
        let mut sources = Vec::with_capacity(groups.len());
        for (record, regions) in groups {
            let mut group = Vec::with_capacity(regions.len());
            for (t, r) in regions.iter().enumerate() {
                group.push(Source {
                    ptr: r.ptr(),
                    len: r.len(),
                    storage: guard_storage(*record, t, r.storage())?,
                    keep: None,
                });
            }
            sources.push((*record, group));
        }
        GradientGuard::from_sources(&sources)
    }

    fn from_sources(groups: &[(usize, Vec<Source>)]) -> Result<GradientGuard> {
        let kernel = grad_guard_kernel::DESCRIPTOR.name;
        let records: Vec<usize> = groups.iter().map(|(r, _)| *r).collect();
        if records.is_empty() {
            return Err(Error::GuardGroups {
                kernel,
                problem: "no record to judge".into(),
            });
        }
        if let Some(twice) = records
            .iter()
            .enumerate()
            .find_map(|(i, r)| records[..i].contains(r).then_some(*r))
        {
            return Err(Error::GuardGroups {
                kernel,
                problem: format!("record {twice} is named twice (one verdict per record)"),
            });
        }
        let total: usize = groups
            .iter()
            .flat_map(|(_, gs)| gs.iter().map(|g| g.len))
            .sum();
        let chunk_elements = guard_chunk_elements(total);
        let (mut chunks, mut table) = (Vec::new(), Vec::new());
        for (record, gradients) in groups {
            let first_chunk = chunks.len() / GUARD_CHUNK_WORDS;
            let mut origin = 0u64;
            for (t, g) in gradients.iter().enumerate() {
                if g.len > u32::MAX as usize {
                    return Err(Error::TooLarge {
                        kernel,
                        what: format!("record {record}'s gradient {t}"),
                        value: g.len,
                        limit: u32::MAX as usize,
                    });
                }
                let bytes = if g.storage == GUARD_F32 { 4 } else { 2 };
                for start in (0..g.len).step_by(chunk_elements) {
                    let chunk = GuardChunk {
                        data: g.ptr + bytes * start as u64,
                        origin: origin + start as u64,
                        // At most the gradient's length, checked above.
                        len: chunk_elements.min(g.len - start) as u32,
                        storage: g.storage,
                    };
                    chunks.extend_from_slice(&chunk.words());
                }
                origin += g.len as u64;
            }
            let end_chunk = chunks.len() / GUARD_CHUNK_WORDS;
            let group = GuardGroup {
                first_chunk: first_chunk as u32,
                end_chunk: end_chunk as u32,
                record: u32::try_from(*record).map_err(|_| Error::GuardGroups {
                    kernel,
                    problem: format!("record {record} is past u32::MAX"),
                })?,
                reserved: 0,
            };
            table.extend_from_slice(&group.words());
        }
        let n_chunks = (chunks.len() / GUARD_CHUNK_WORDS) as u32;
        // A table of no chunk still needs an allocation to point at (never read).
        if chunks.is_empty() {
            chunks.push(0);
        }
        Ok(GradientGuard {
            chunks: DeviceMemory::from_host(&chunks, "a gradient guard's chunk table")?,
            n_chunks,
            groups: DeviceMemory::from_host(&table, "a gradient guard's record table")?,
            records,
            partials: DeviceMemory::from_host(
                &vec![0u64; 2 * (n_chunks as usize).max(1)],
                "a gradient guard's partial sums",
            )?,
            arrivals: DeviceMemory::from_host(&[0u32], "a gradient guard's arrival counter")?,
            gradients: groups
                .iter()
                .flat_map(|(_, gs)| gs.iter().filter_map(|g| g.keep.clone()))
                .collect(),
        })
    }

    /// Enqueues the guard pass over the gradients on `stream`: each group's gradients judge
    /// record `first` + its record number of `states` (record `first` for a guard made by
    /// [`GradientGuard::new`]), as the gradients are when the pass runs. Enqueue it after the
    /// gradients are written and before the records' advance (which refuses a guarded record
    /// without one).
    ///
    /// # Errors
    ///
    /// Before anything is enqueued: [`Error::StepIndex`] for a record past the end,
    /// [`Error::NotGuarded`] for a record made without a guard, [`Error::MissingKernel`],
    /// [`Error::Capture`] for a capture adamant did not begin. [`Error::Cuda`] if the driver
    /// refuses the launch.
    pub fn enqueue(
        &self,
        rt: &Adamant,
        stream: &Stream,
        states: &StepStates,
        first: usize,
    ) -> Result<()> {
        let kernel = grad_guard_kernel::DESCRIPTOR.name;
        let function = rt.function(&grad_guard_kernel::DESCRIPTOR)?;
        let judged: Vec<usize> = self
            .records
            .iter()
            .map(|r| first.saturating_add(*r))
            .collect();
        let records = states.guards_enqueued(first, &judged)?;
        rt.retain(stream, || {
            let mut keeps = self.keeps();
            keeps.extend(states.keeps());
            keeps
        })
        .map_err(|e| e.in_kernel(kernel))?;
        self.launch(function, stream, records, None)
    }

    /// The guard pass and the advance of every record of `states`, in one launch: what
    /// [`GradientGuard::enqueue`] with `first = 0` followed by [`StepStates::advance`] do, with
    /// the advance done by the pass's last block once it has judged the records. A captured
    /// step has one node fewer, and the advance no dependent launch of its own (about 2 µs of
    /// a graph's critical path on an H100). The kernels' schedules, if any, follow as
    /// [`StepStates::advance`] enqueues them.
    ///
    /// # Errors
    ///
    /// Before anything is enqueued: those of [`GradientGuard::enqueue`] and
    /// [`StepStates::advance`] ([`Error::Unguarded`] for a guarded record this guard does not
    /// judge and no guard was enqueued for). [`Error::Cuda`] if the driver refuses a launch.
    pub fn enqueue_and_advance(
        &self,
        rt: &Adamant,
        stream: &Stream,
        states: &StepStates,
    ) -> Result<()> {
        let kernel = grad_guard_kernel::DESCRIPTOR.name;
        let function = rt.function(&grad_guard_kernel::DESCRIPTOR)?;
        let schedules = states.begin_advance(rt, stream, kernel, &self.records, || self.keeps())?;
        let (records, mirror) = states.advance_targets();
        self.launch(
            function,
            stream,
            records,
            Some((states.len() as u32, mirror)),
        )?;
        states.launch_schedules(stream, schedules)
    }

    /// What a capture of the pass keeps alive: the tables, partials and counter, and a share
    /// of every gradient.
    fn keeps(&self) -> Vec<Keep> {
        let mut keeps: Vec<Keep> = vec![
            self.chunks.clone(),
            self.groups.clone(),
            self.partials.clone(),
            self.arrivals.clone(),
        ];
        keeps.extend(self.gradients.iter().cloned());
        keeps
    }

    /// Launches the pass judging the records from `records`, and with `advance` (a record
    /// count and the page-locked copy's address) advancing that many records from `records`.
    fn launch(
        &self,
        function: &Function<'_>,
        stream: &Stream,
        records: u64,
        advance: Option<(u32, u64)>,
    ) -> Result<()> {
        let kernel = grad_guard_kernel::DESCRIPTOR.name;
        let blocks = self.n_chunks.clamp(1, GUARD_MAX_BLOCKS);
        let (n_advance, mirror) = advance.unwrap_or((0, 0));
        let mut values = guard_args(
            self.chunks.address(),
            self.n_chunks,
            self.groups.address(),
            self.records.len() as u32,
            [self.partials.address(), self.arrivals.address(), records],
            n_advance,
            mirror,
        );
        let params = arg_pointers(&mut values);
        let shared = GUARD_SHARED_WORDS * size_of::<u64>() as u32;
        // SAFETY: the entry's nine parameters (checked against its descriptor): our chunk
        // table of `n_chunks` chunks (each address in a live gradient buffer we keep, with as
        // many values after it as the chunk's length), our table of groups (each
        // chunk range within it, each record number checked by the caller to name a record of
        // the states counted from `records`), our partials (two words per chunk), our counter;
        // with an advance, the states' `n_advance` records from `records` and their mapped
        // copy of the same length (`StepStates::advance_targets`); the entry's shared memory.
        unsafe { stream.launch(function, blocks, GUARD_THREADS, shared, &params) }
            .during_with(|| format!("launching {kernel} ({} chunks)", self.n_chunks))
    }
}

/// The guard's chunk size for `total` gradient elements: [`GUARD_CHUNK_QUANTUM`], or the
/// multiple of it that cuts `total` into about [`GUARD_MAX_BLOCKS`] chunks, so that a large set
/// gives each block one long chunk (no table read between its loads) and a small one still
/// spreads over many blocks. Fixed for a guard, so its sums' order is too.
fn guard_chunk_elements(total: usize) -> usize {
    total
        .div_ceil(GUARD_MAX_BLOCKS as usize)
        .next_multiple_of(GUARD_CHUNK_QUANTUM)
        .max(GUARD_CHUNK_QUANTUM)
}

/// `grad_guard_kernel`'s arguments in PTX order, checked against its descriptor: the chunk
/// table and its length, the groups table and its length, then the partials, the counter and
/// the first record, then how many records to advance (0: none) and their page-locked copy.
fn guard_args(
    chunks: u64,
    n_chunks: u32,
    groups: u64,
    n_groups: u32,
    outputs: [u64; 3],
    n_advance: u32,
    mirror: u64,
) -> [ArgValue; 9] {
    let values = [
        ArgValue::Ptr(chunks),
        ArgValue::U32(n_chunks),
        ArgValue::Ptr(groups),
        ArgValue::U32(n_groups),
        ArgValue::Ptr(outputs[0]),
        ArgValue::Ptr(outputs[1]),
        ArgValue::Ptr(outputs[2]),
        ArgValue::U32(n_advance),
        ArgValue::Ptr(mirror),
    ];
    crate::args::assert_args_match(&grad_guard_kernel::DESCRIPTOR, &values);
    values
}

/// The guard's code for gradient `t` of record `record` stored as `storage`: f32, bf16 or f16
/// (a 16-bit gradient is widened exactly before it is squared).
///
/// # Errors
///
/// [`Error::GuardGroups`] for a storage that holds no gradient (a bf16 remainder).
fn guard_storage(record: usize, t: usize, storage: Storage) -> Result<u32> {
    match storage {
        Storage::F32 => Ok(GUARD_F32),
        Storage::Bf16 => Ok(GUARD_BF16),
        Storage::F16 => Ok(GUARD_F16),
        other => Err(Error::GuardGroups {
            kernel: grad_guard_kernel::DESCRIPTOR.name,
            problem: format!(
                "record {record}'s gradient {t} is stored as `{}`, which holds no gradient \
                 (f32, bf16 or f16)",
                other.name()
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    /// A remainder region holds no gradient: refused before anything is allocated, naming the
    /// record, the gradient and the storage.
    #[test]
    fn a_remainder_is_no_gradient() {
        use crate::{DeviceRegion, Error, Storage};
        let f16 = DeviceRegion::of(0x10_0000, 64, Storage::F16).unwrap();
        let remainder = DeviceRegion::of(0x20_0000, 64, Storage::Bf16Remainder).unwrap();
        // SAFETY: refused before any device access (the regions are never read).
        let refused =
            unsafe { super::GradientGuard::per_record_raw(&[(3, &[f16, remainder][..])]) };
        match refused {
            Err(Error::GuardGroups { problem, .. }) => {
                assert!(problem.contains("record 3's gradient 1"), "{problem}");
                assert!(problem.contains("bf16 remainder"), "{problem}");
            }
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("a remainder was taken as a gradient"),
        }
    }

    /// A change to the guard entry's signature not followed here fails on the CPU.
    #[test]
    fn guard_args_match_the_entry_signature() {
        assert_eq!(super::guard_args(1, 2, 3, 4, [5, 6, 7], 8, 9).len(), 9);
    }

    /// Chunks are whole quanta (16-byte aligned starts, four loads in flight per thread), and a
    /// single gradient never needs more chunks than the grid has blocks.
    #[test]
    fn chunks_are_quanta_and_fill_at_most_one_grid() {
        use adamant_device::guard::{GUARD_CHUNK_QUANTUM, GUARD_MAX_BLOCKS};
        for total in [
            0,
            1,
            4095,
            4096,
            4097,
            1 << 20,
            (1 << 22) + 3,
            1 << 28,
            5_476_508,
        ] {
            let chunk = super::guard_chunk_elements(total);
            assert_eq!(chunk % GUARD_CHUNK_QUANTUM, 0, "{total}");
            assert!(chunk >= GUARD_CHUNK_QUANTUM);
            assert!(
                total.div_ceil(chunk) <= GUARD_MAX_BLOCKS as usize,
                "{total}"
            );
            // Not needlessly large: one quantum less would need more chunks than blocks.
            if chunk > GUARD_CHUNK_QUANTUM {
                let smaller = chunk - GUARD_CHUNK_QUANTUM;
                assert!(
                    total.div_ceil(smaller) > GUARD_MAX_BLOCKS as usize,
                    "{total}"
                );
            }
        }
    }
}
