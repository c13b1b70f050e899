//! Multi-tensor launches: one launch of `<kernel>_multi` updates every tensor of a set, driven
//! by device-resident tables (one pointer table per buffer argument, one chunk table) that are
//! rebuilt only when the set of tensors changes.
use adamant_kernels::abi::OptimizerEntry;
use adamant_kernels::diagnostics::shared_bytes;
use adamant_kernels::multi::CHUNK_WORDS;
use cust::memory::{DeviceBuffer, DeviceSlice};
use cust::stream::Stream;

use crate::clamp_policy::ClampPolicy;
use crate::device::Adamant;
use crate::error::{CudaContext, Error, Result};
use crate::launch::{arg_pointers, LaunchInfo, BLOCK_THREADS};
use crate::launch_check::{assemble, check_tensors, BufferView, Signature, Uniforms};
use crate::records::{LaunchRecords, Records};
use crate::step::StepStates;

/// Elements per chunk: a multiple of 4 (chunks of a 16-byte aligned tensor stay aligned), small
/// enough that a set of skewed tensor sizes gives every multiprocessor several chunks, large
/// enough that the per-chunk overhead (one 16-byte record, one table read per buffer) is noise.
pub const CHUNK_ELEMENTS: usize = 2048;
/// The most blocks a 1-D grid may have (the entry strides over chunks past it).
const MAX_GRID: u32 = i32::MAX as u32;

/// The device tables behind [`Adamant::launch_multi`] for one set of tensors: one table of
/// per-tensor pointers per buffer argument and one of 2048-element chunks. Keep one per set of
/// tensors (per model, per kernel) across steps: while the launches pass the same buffers, the
/// tables are reused and a launch allocates and uploads nothing; a changed set rebuilds them.
/// See [`Adamant::launch_multi`] for an example.
pub struct TensorSet {
    /// One device table of per-tensor pointers per buffer argument, in entry order.
    tables: Vec<DeviceBuffer<u64>>,
    chunks: Option<DeviceBuffer<u32>>,
    n_chunks: u32,
    /// What the tables describe (validated: lengths, no overlaps).
    signature: Signature,
    elements: usize,
    rebuilds: u64,
    /// The launches' diagnostics records, one per tensor: made with the tables.
    records: Option<Records>,
}

impl Default for TensorSet {
    fn default() -> Self {
        TensorSet::new()
    }
}

impl TensorSet {
    /// An empty set, with no device tables yet: the first [`TensorSet::sync`] (or
    /// [`Adamant::launch_multi`]) builds them.
    pub fn new() -> TensorSet {
        TensorSet {
            tables: Vec::new(),
            chunks: None,
            n_chunks: 0,
            signature: Vec::new(),
            elements: 0,
            rebuilds: 0,
            records: None,
        }
    }

    /// Total elements over the tensors the tables describe.
    pub fn elements(&self) -> usize {
        self.elements
    }

    /// Number of chunks (one block each in a launch): `ceil(len / 2048)` per tensor, summed.
    pub fn chunks(&self) -> u32 {
        self.n_chunks
    }

    /// How many times the device tables were (re)built: stays at 1 while every launch passes the
    /// same tensors (a test of that, or a log line).
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds
    }

    /// The diagnostics records of the set's last finished launch, one per tensor (read after an
    /// event recorded after the launch); `None` before the tables are first built.
    pub fn records(&self) -> Option<LaunchRecords> {
        self.records.as_ref().map(Records::read)
    }

    /// Whether the device tables describe exactly `tensors` (same buffers at the same addresses,
    /// same lengths, same order). Allocates nothing: this is the per-launch check of an eager
    /// training loop.
    pub fn describes<E: OptimizerEntry>(
        &self,
        tensors: &[E::Buffers<&mut DeviceSlice<f32>>],
    ) -> bool {
        self.describes_views::<E, _>(tensors)
    }

    /// [`TensorSet::describes`] over any buffer view (owned slices or foreign regions).
    fn describes_views<E: OptimizerEntry, B: BufferView>(&self, tensors: &[E::Buffers<B>]) -> bool {
        if tensors.len() != self.signature.len() || (self.chunks.is_none() && !tensors.is_empty()) {
            return false;
        }
        tensors.iter().zip(&self.signature).all(|(tensor, known)| {
            let mut same = true;
            let mut k = 0;
            E::map_buffers(tensor, |_, b| {
                same &= known
                    .get(k)
                    .is_some_and(|r| (r.address, r.len) == (b.address(), b.len()));
                k += 1;
            });
            same && k == known.len()
        })
    }

    /// Makes the device tables describe exactly `tensors`, uploading them (synchronously) only
    /// if the set changed. Validates every tensor first: every buffer has its tensor's parameter
    /// buffer's length, and no written buffer overlaps any other buffer of the set. Returns
    /// whether it rebuilt. Call it before [`Adamant::capture`] for a set that a captured
    /// [`Adamant::launch_multi`] uses.
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`] (inside an [`Error::InTensor`] naming the tensor, in a set of
    /// more than one) or [`Error::Overlap`], before anything is uploaded; [`Error::TooLarge`] for a tensor or a set the tables cannot index;
    /// [`Error::Cuda`] if an upload fails (the old tables are kept).
    pub fn sync<E: OptimizerEntry>(
        &mut self,
        tensors: &[E::Buffers<&mut DeviceSlice<f32>>],
    ) -> Result<bool> {
        self.sync_views::<E, _>(tensors)
    }

    /// [`TensorSet::sync`] over any buffer view: the raw multi-tensor launches
    /// ([`Adamant::launch_multi_raw`]) build their tables from foreign regions with it.
    fn sync_views<E: OptimizerEntry, B: BufferView>(
        &mut self,
        tensors: &[E::Buffers<B>],
    ) -> Result<bool> {
        let signature = check_tensors::<E, _>(tensors)?;
        if signature == self.signature && (self.chunks.is_some() || tensors.is_empty()) {
            return Ok(false);
        }
        let kernel = E::MULTI_DESCRIPTOR.name;
        let buffers = signature.first().map_or(0, Vec::len);
        let mut tables = vec![Vec::with_capacity(tensors.len()); buffers];
        let mut chunks: Vec<u32> = Vec::new();
        let mut elements = 0usize;
        for (t, tensor) in signature.iter().enumerate() {
            for (b, range) in tensor.iter().enumerate() {
                tables[b].push(range.address);
            }
            let len = tensor[0].len;
            if len > u32::MAX as usize {
                return Err(Error::TooLarge {
                    kernel,
                    what: format!("tensor {t}"),
                    value: len,
                    limit: u32::MAX as usize,
                });
            }
            elements += len;
            for start in (0..len).step_by(CHUNK_ELEMENTS) {
                let chunk_len = CHUNK_ELEMENTS.min(len - start);
                chunks.extend_from_slice(&[t as u32, start as u32, chunk_len as u32, 0]);
            }
        }
        let n_chunks = chunks.len() / CHUNK_WORDS;
        if n_chunks > u32::MAX as usize {
            return Err(Error::TooLarge {
                kernel,
                what: "chunk count".into(),
                value: n_chunks,
                limit: u32::MAX as usize,
            });
        }
        let tables = tables
            .iter()
            .map(|t| DeviceBuffer::from_slice(t).during("uploading a multi-tensor pointer table"))
            .collect::<Result<Vec<_>>>()?;
        let chunk_table = if chunks.is_empty() {
            None
        } else {
            Some(DeviceBuffer::from_slice(&chunks).during("uploading a multi-tensor chunk table")?)
        };
        // New records for the new set (their sequence starts again at 0).
        let records = Records::for_entry(E::MULTI_DESCRIPTOR, signature.len())?;
        *self = TensorSet {
            tables,
            chunks: chunk_table,
            n_chunks: n_chunks as u32,
            signature,
            elements,
            rebuilds: self.rebuilds + 1,
            records: Some(records),
        };
        Ok(true)
    }
}

impl Adamant {
    /// One launch of `E`'s multi-tensor entry (`<kernel>_multi`) that updates every tensor in
    /// `tensors`, on `stream`: the same per-element code as [`Adamant::launch_optimizer`] and
    /// the same clamp, for a whole model's separately allocated tensors at the cost of one
    /// launch. `set` keeps the device tables; they are rebuilt (synchronously) only when
    /// `tensors` differs from the last call, which is refused while `stream` is being captured
    /// into a graph: sync the set before capturing. Runs the same checks as every launch path
    /// before anything is enqueued; an empty set enqueues nothing.
    ///
    /// ```
    /// use adamant_kernels::optimizers::attn_adam_kernel;
    /// use adamant_runtime::cust::memory::DeviceBuffer;
    /// use adamant_runtime::{adam_scalars, AdamHyper, ClampPolicy, TensorSet};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let rt = match adamant_runtime::Adamant::new() {
    /// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
    /// #     other => other?,
    /// # };
    /// // An attention block's tensors, each allocated on its own: [p, g, m, v] per tensor.
    /// let mut tensors = Vec::new();
    /// for len in [256 * 256, 256, 1024 * 256, 1024] {
    ///     let filled = |x: f32| DeviceBuffer::from_slice(&vec![x; len]);
    ///     tensors.push([filled(0.02)?, filled(1e-3)?, filled(0.0)?, filled(0.0)?]);
    /// }
    /// let policy = ClampPolicy::from_isv(1.0);
    /// let mut set = TensorSet::new(); // kept across steps
    /// for step in 1..=3 {
    ///     let hyper = AdamHyper::new(3e-4, 0.9, 0.999, 1e-8, 0.01, step)?;
    ///     let scalars = adam_scalars!(attn_adam_kernel, hyper, weight_decay: hyper.weight_decay)?;
    ///     let buffers: Vec<_> = tensors
    ///         .iter_mut()
    ///         .map(|[p, g, m, v]| attn_adam_kernel::Buffers {
    ///             p: &mut **p,
    ///             g: &mut **g,
    ///             m: &mut **m,
    ///             v: &mut **v,
    ///         })
    ///         .collect();
    ///     let info = rt.launch_multi::<attn_adam_kernel::Entry>(
    ///         rt.stream(), &mut set, &buffers, &scalars, policy,
    ///     )?;
    ///     assert_eq!(info.kernel, "attn_adam_kernel_multi");
    /// }
    /// assert_eq!(set.elements(), 256 * 256 + 256 + 1024 * 256 + 1024);
    /// assert_eq!(set.rebuilds(), 1); // the same tensors every step: tables built once
    /// rt.synchronize()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Adamant::launch_optimizer`] (a tensor's length error inside an [`Error::InTensor`]
    /// naming it) and as [`TensorSet::sync`]; [`Error::Capture`] if the set changed while
    /// `stream` is being captured.
    pub fn launch_multi<E: OptimizerEntry>(
        &self,
        stream: &Stream,
        set: &mut TensorSet,
        tensors: &[E::Buffers<&mut DeviceSlice<f32>>],
        scalars: &E::Scalars,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo> {
        self.launch_set::<E, _>(stream, set, tensors, Uniforms::Plain { scalars, policy })
    }

    /// One launch of `E`'s stepped multi-tensor entry (`<kernel>_multi_stepped`): as
    /// [`Adamant::launch_multi`], with the bound and the `#[step]` scalars read on the device
    /// from record `index` of `states`, as [`Adamant::launch_stepped`] does.
    ///
    /// # Errors
    ///
    /// As [`Adamant::launch_multi`] (the policy's errors aside) and [`Adamant::launch_stepped`].
    pub fn launch_multi_stepped<E: OptimizerEntry>(
        &self,
        stream: &Stream,
        set: &mut TensorSet,
        tensors: &[E::Buffers<&mut DeviceSlice<f32>>],
        scalars: &E::StepScalars,
        states: &StepStates<'_>,
        index: usize,
    ) -> Result<LaunchInfo> {
        let uniforms = Uniforms::Stepped {
            scalars,
            states,
            index,
        };
        self.launch_set::<E, _>(stream, set, tensors, uniforms)
    }

    /// The one multi-tensor launch path, plain or stepped, over owned slices or foreign
    /// regions ([`Adamant::launch_multi_raw`]).
    pub(crate) fn launch_set<E: OptimizerEntry, B: BufferView>(
        &self,
        stream: &Stream,
        set: &mut TensorSet,
        tensors: &[E::Buffers<B>],
        uniforms: Uniforms<'_, E>,
    ) -> Result<LaunchInfo> {
        let (descriptor, checked) = uniforms.check(true)?;
        let kernel = descriptor.name;
        // The tables were validated when built: an unchanged set needs no further check.
        if !set.describes_views::<E, _>(tensors) {
            if crate::graph::is_capturing(stream)? {
                check_tensors::<E, _>(tensors)?; // a length or overlap error is reported as such
                return Err(Error::Capture {
                    operation: format!(
                        "{kernel}: the tensor set changed during graph capture; sync it before \
                         capturing"
                    ),
                });
            }
            set.sync_views::<E, _>(tensors)?;
        }
        // One block per chunk: each chunk's chain of dependent reads (record, table, data) runs
        // beside every other's instead of one after another in a striding block.
        let grid = set.n_chunks.clamp(1, MAX_GRID);
        let info = LaunchInfo {
            kernel,
            elements: set.elements,
            bound: checked.bound_value(),
            grid,
            block: BLOCK_THREADS,
        };
        let Some(chunks) = set.chunks.as_ref() else {
            return Ok(info);
        };
        let names = E::named_buffers(&tensors[0]);
        let pointer = |name: &str| {
            names
                .iter()
                .position(|(n, _)| *n == name)
                .and_then(|i| set.tables.get(i))
                .map(|t| t.as_device_ptr().as_raw())
        };
        let chunk_table = (chunks.as_device_ptr().as_raw(), set.n_chunks);
        let records = set
            .records
            .as_ref()
            .expect("built with the tables")
            .check(descriptor, tensors.len())?;
        let mut values = assemble(descriptor, pointer, 0, Some(chunk_table), records, &checked)?;
        let params = arg_pointers(&mut values);
        let shared = shared_bytes(descriptor.buffer_count());
        let function = self.function(descriptor)?;
        // SAFETY: one pointer per entry parameter, in PTX order (generated from the kernel's
        // definition), pointing into `values`. The tables describe exactly `tensors` (checked
        // above), whose `&mut` borrows keep every buffer alive and unaliased for the call; each
        // chunk lies inside its tensor (built from the checked lengths).
        unsafe { stream.launch(function, grid, BLOCK_THREADS, shared, &params) }
            .during_with(|| format!("launching {kernel} ({} tensors)", tensors.len()))?;
        Ok(info)
    }
}
