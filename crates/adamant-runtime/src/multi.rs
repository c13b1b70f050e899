//! Multi-tensor launches: one launch of `<kernel>_multi` updates every tensor of a set, driven
//! by device-resident tables (one pointer table per buffer argument, one chunk table, one of
//! per-tensor clamp scales) that are rebuilt only when the set of tensors changes.
use std::sync::Arc;

use adamant_device::abi::{KernelDescriptor, OptimizerEntry};
use adamant_device::multi::CHUNK_WORDS;
use cust::stream::Stream;

use crate::buffers::{LaunchKinds, Owned};
use crate::clamp_scales::{check_products, check_scales};
use crate::device::Adamant;
use crate::error::{Error, Result};
use crate::launch::{LaunchInfo, BLOCK_THREADS};
use crate::launch_check::{assemble, buffer_keeps, check_tensors, SetTables, Signature, Uniforms};
use crate::memory::{DeviceMemory, Keep};
use crate::records::{LaunchRecords, Records};

/// Elements per chunk: a multiple of 4 (chunks of a 16-byte aligned tensor stay aligned), small
/// enough that a set of skewed tensor sizes gives every multiprocessor several chunks, large
/// enough that the per-chunk overhead (one 16-byte record, one table read per buffer) is noise.
pub const MULTI_CHUNK_ELEMENTS: usize = 2048;
/// Appends tensor `t`'s chunks (`len` elements) to a chunk table (`CHUNK_WORDS` words each),
/// for `kernel`'s launch.
///
/// # Errors
///
/// [`Error::TooLarge`] for a tensor past `u32::MAX` elements (a chunk's start is a `u32`).
pub(crate) fn push_chunks(
    chunks: &mut Vec<u32>,
    kernel: &'static str,
    t: usize,
    len: usize,
) -> Result<()> {
    push_chunks_of(chunks, kernel, t, len, MULTI_CHUNK_ELEMENTS)
}

/// [`push_chunks`] with chunks of `size` elements (a multiple of 4).
pub(crate) fn push_chunks_of(
    chunks: &mut Vec<u32>,
    kernel: &'static str,
    t: usize,
    len: usize,
    size: usize,
) -> Result<()> {
    debug_assert!(size.is_multiple_of(4) && size > 0);
    if len > u32::MAX as usize {
        return Err(Error::TooLarge {
            kernel,
            what: format!("tensor {t}"),
            value: len,
            limit: u32::MAX as usize,
        });
    }
    for start in (0..len).step_by(size) {
        let chunk_len = size.min(len - start);
        chunks.extend_from_slice(&[t as u32, start as u32, chunk_len as u32, 0]);
    }
    Ok(())
}

/// The number of chunk records in a chunk table (`CHUNK_WORDS` words each), which a launch
/// passes as a `u32`.
///
/// # Errors
///
/// [`Error::TooLarge`] past `u32::MAX` chunks.
pub(crate) fn chunk_count(kernel: &'static str, chunks: &[u32]) -> Result<u32> {
    let n_chunks = chunks.len() / CHUNK_WORDS;
    u32::try_from(n_chunks).map_err(|_| Error::TooLarge {
        kernel,
        what: "chunk count".into(),
        value: n_chunks,
        limit: u32::MAX as usize,
    })
}

/// The most blocks a 1-D grid may have (the entry strides over chunks past it).
const MAX_GRID: u32 = i32::MAX as u32;

/// The device tables behind [`Launch::set`](crate::Launch::set) for one set of tensors: one table of
/// per-tensor pointers per buffer argument, one of 2048-element chunks and one of per-tensor
/// clamp scales. Keep one per set of tensors (per model, per kernel) across steps: while the
/// launches pass the same buffers, the tables are reused and a launch allocates and uploads
/// nothing; a changed set rebuilds them. See [`Launch::set`](crate::Launch::set) for an example, and
/// [`TensorSet::set_clamp_scales`] for a bound per tensor.
pub struct TensorSet {
    /// One device table of per-tensor pointers per buffer argument, in entry order.
    tables: Vec<Arc<DeviceMemory<u64>>>,
    chunks: Option<Arc<DeviceMemory<u32>>>,
    /// One clamp scale per tensor, built with the tables (ones), replaced (never rewritten in
    /// place: a graph may hold the old one) by [`TensorSet::set_clamp_scales`].
    scales: Option<Arc<DeviceMemory<f32>>>,
    /// The scales given to [`TensorSet::set_clamp_scales`] (validated), `None` for ones.
    custom_scales: Option<Vec<f32>>,
    /// The kernel whose roles the tables were validated for (its plain entry's descriptor):
    /// the tables are reused only by launches of the same kernel.
    entry: Option<&'static KernelDescriptor>,
    /// The multi-tensor entry the tables were last built for, for errors.
    kernel: &'static str,
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
    /// [`Launch::set`](crate::Launch::set)) builds them.
    pub fn new() -> TensorSet {
        TensorSet {
            tables: Vec::new(),
            chunks: None,
            scales: None,
            custom_scales: None,
            entry: None,
            kernel: "a multi-tensor entry",
            n_chunks: 0,
            signature: Signature::new(),
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

    /// Clamps each tensor with its own bound: from the next launch on, tensor `t` of the set is
    /// clamped with `tensor_bound(bound, scales[t])` (the launch's bound times the scale, a
    /// product past `BOUND_CEILING` saturated there; `adamant_device::multi::tensor_bound`), as
    /// layer-wise weight clipping's `κ · s_l` with the launch's bound as `κ`. For absolute bounds, give them
    /// as the scales and launch with a fixed bound of 1. Applies to plain and stepped launches;
    /// a stepped launch multiplies its step's bound. The scales go to a new table (uploaded
    /// synchronously: call it between steps, not while a stream is being captured); a graph
    /// captured with the set keeps the table it recorded, so the scales it clamps with stay
    /// the ones its launches validated: capture again for new ones.
    ///
    /// The set must already describe its tensors (after [`TensorSet::sync`] or a launch), and
    /// the scales belong to those tensors: if the set is later rebuilt for other tensors, that
    /// launch is refused until the scales are set again or cleared
    /// ([`TensorSet::clear_clamp_scales`]). Each launch also checks that no scale turns its
    /// bound into 0.
    ///
    /// ```
    /// use adamant_kernels::optimizers::attn_adam_kernel;
    /// use adamant_runtime::{adam_scalars, AdamHyper, ClampPolicy, DeviceArray, ParamBuffer, TensorSet};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let rt = match adamant_runtime::Adamant::new() {
    /// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
    /// #     other => other?,
    /// # };
    /// // Two layers, each clipped to κ·s_l with κ = 2 and s_l = 1/sqrt(fan_in).
    /// let mut tensors = Vec::new();
    /// for (fan_in, len) in [(256usize, 256 * 64), (64, 64 * 8)] {
    ///     let state = |x: f32| DeviceArray::from_host(&vec![x; len]);
    ///     let p = ParamBuffer::from_host(&vec![0.01; len])?;
    ///     tensors.push((fan_in, p, [state(1.0)?, state(0.0)?, state(0.0)?]));
    /// }
    /// let scales: Vec<f32> = tensors.iter().map(|(fan_in, ..)| 1.0 / (*fan_in as f32).sqrt()).collect();
    /// let buffers: Vec<_> = tensors
    ///     .iter_mut()
    ///     .map(|(_, p, [g, m, v])| attn_adam_kernel::Buffers { p, g: g.input(), m, v })
    ///     .collect();
    /// let mut set = TensorSet::new();
    /// set.sync::<attn_adam_kernel::Entry>(&buffers)?;
    /// set.set_clamp_scales(&scales)?;
    /// let hyper = AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.0, 1)?;
    /// let scalars = adam_scalars!(attn_adam_kernel, hyper, weight_decay: 0.0)?;
    /// rt.launch::<attn_adam_kernel::Entry>(rt.stream())
    ///     .plain(&scalars, ClampPolicy::Fixed { bound: 2.0 })
    ///     .set(&mut set, &buffers)?;
    /// # rt.synchronize()?;
    /// # drop(buffers);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::ClampScales`] if `scales` is not one per tensor of the set (or the set has not
    /// been built yet); [`Error::InvalidClampScale`] for a scale that is not finite and at least
    /// `f32::MIN_POSITIVE`, naming the tensor; [`Error::Cuda`] if the upload fails. Nothing is
    /// uploaded on an error.
    pub fn set_clamp_scales(&mut self, scales: &[f32]) -> Result<()> {
        let tensors = self.signature.len();
        let table = match self.scales.as_mut() {
            Some(table) if scales.len() == tensors => table,
            _ => {
                return Err(Error::ClampScales {
                    kernel: self.kernel,
                    scales: scales.len(),
                    tensors,
                    hint: if self.scales.is_none() {
                        "; the set has no tables yet: sync it first (TensorSet::sync, or a launch)"
                    } else {
                        ""
                    },
                })
            }
        };
        check_scales(self.kernel, scales)?;
        *table = DeviceMemory::from_host(scales, "a multi-tensor clamp scale table")?;
        self.custom_scales = Some(scales.to_vec());
        Ok(())
    }

    /// Back to one bound for every tensor: the scale table is all ones again.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] if the upload fails.
    pub fn clear_clamp_scales(&mut self) -> Result<()> {
        if let Some(table) = self.scales.as_mut() {
            let ones = vec![1.0f32; table.len()];
            *table = DeviceMemory::from_host(&ones, "a multi-tensor clamp scale table")?;
        }
        self.custom_scales = None;
        Ok(())
    }

    /// The per-tensor clamp scales given to [`TensorSet::set_clamp_scales`], `None` while every
    /// tensor has the launch's bound.
    pub fn clamp_scales(&self) -> Option<&[f32]> {
        self.custom_scales.as_deref()
    }

    /// Whether the device tables describe exactly `tensors` for `E` (the same kernel, whose
    /// roles they were validated under, and the same buffers at the same addresses, same
    /// lengths, same order). Allocates nothing: this is the per-launch check of an eager
    /// training loop.
    pub fn describes<E: OptimizerEntry>(&self, tensors: &[E::Buffers<Owned<'_>>]) -> bool {
        self.describes_views::<E, _>(tensors)
    }

    /// [`TensorSet::describes`] over any buffer family (owned buffers or foreign regions).
    fn describes_views<E: OptimizerEntry, K: LaunchKinds>(
        &self,
        tensors: &[E::Buffers<K>],
    ) -> bool {
        (self.chunks.is_some() || tensors.is_empty()) && self.same_key::<E, K>(tensors)
    }

    /// Whether the tables were validated for exactly this launch: the same kernel (tables
    /// validated under another kernel's roles and overlap rules are not these, even over the
    /// same addresses) and the same buffers, by name, address and length, in the same order.
    fn same_key<E: OptimizerEntry, K: LaunchKinds>(&self, tensors: &[E::Buffers<K>]) -> bool {
        if tensors.len() != self.signature.len() {
            return false;
        }
        if !tensors.is_empty() && !self.entry.is_some_and(|d| std::ptr::eq(d, E::DESCRIPTOR)) {
            return false;
        }
        tensors.iter().zip(&self.signature).all(|(tensor, known)| {
            let mut same = true;
            let mut k = 0;
            E::visit_buffers(tensor, &mut |name, b| {
                let (address, len) = crate::launch_check::address_len(&b);
                same &= known
                    .get(k)
                    .is_some_and(|r| (r.name, r.address, r.len) == (name, address, len));
                k += 1;
            });
            same && k == known.len()
        })
    }

    /// Makes the device tables describe exactly `tensors`, uploading them (synchronously) only
    /// if the set changed. Validates every tensor first: every buffer has its tensor's parameter
    /// buffer's length, and no written buffer overlaps any other buffer of the set. Returns
    /// whether it rebuilt. Call it before [`Adamant::capture`] for a set that a captured
    /// [`Launch::set`](crate::Launch::set) uses.
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`] (inside an [`Error::InTensor`] naming the tensor, in a set of
    /// more than one) or [`Error::Overlap`], before anything is uploaded; [`Error::TooLarge`] for a tensor or a set the tables cannot index;
    /// [`Error::ClampScales`] if the set has per-tensor clamp scales and `tensors` are other
    /// tensors than those the scales were set for (set them again, or clear them, first);
    /// [`Error::Cuda`] if an upload fails (the old tables are kept).
    pub fn sync<E: OptimizerEntry>(&mut self, tensors: &[E::Buffers<Owned<'_>>]) -> Result<bool> {
        self.sync_views::<E, _>(tensors)
    }

    /// [`TensorSet::sync`] over any buffer family: the raw multi-tensor launches
    /// ([`Launch::raw_set`](crate::Launch::raw_set)) build their tables from foreign regions with it.
    fn sync_views<E: OptimizerEntry, K: LaunchKinds>(
        &mut self,
        tensors: &[E::Buffers<K>],
    ) -> Result<bool> {
        let signature = check_tensors::<E, K>(tensors)?;
        if self.describes_views::<E, K>(tensors) {
            return Ok(false);
        }
        let kernel = E::MULTI_DESCRIPTOR.name;
        if let Some(custom) = &self.custom_scales {
            return Err(Error::ClampScales {
                kernel,
                scales: custom.len(),
                tensors: signature.len(),
                hint: "; the set's tensors changed since its clamp scales were set: set them \
                       again for these tensors (TensorSet::set_clamp_scales), or clear them",
            });
        }
        let buffers = signature.first().map_or(0, |t| t.len());
        let mut tables = vec![Vec::with_capacity(tensors.len()); buffers];
        let mut chunks: Vec<u32> = Vec::new();
        let mut elements = 0usize;
        for (t, tensor) in signature.iter().enumerate() {
            for (b, range) in tensor.iter().enumerate() {
                tables[b].push(range.address);
            }
            let len = tensor[0].len;
            push_chunks(&mut chunks, kernel, t, len)?;
            elements += len;
        }
        let n_chunks = chunk_count(kernel, &chunks)?;
        let tables = tables
            .iter()
            .map(|t| DeviceMemory::from_host(t, "a multi-tensor pointer table"))
            .collect::<Result<Vec<_>>>()?;
        let (chunk_table, scales) = if chunks.is_empty() {
            (None, None)
        } else {
            let ones = vec![1.0f32; signature.len()];
            (
                Some(DeviceMemory::from_host(
                    &chunks,
                    "a multi-tensor chunk table",
                )?),
                Some(DeviceMemory::from_host(
                    &ones,
                    "a multi-tensor clamp scale table",
                )?),
            )
        };
        // New records for the new set (their sequence starts again at 0).
        let records = Records::for_entry(E::MULTI_DESCRIPTOR, signature.len())?;
        *self = TensorSet {
            tables,
            chunks: chunk_table,
            scales,
            custom_scales: None,
            entry: Some(E::DESCRIPTOR),
            kernel,
            n_chunks,
            signature,
            elements,
            rebuilds: self.rebuilds + 1,
            records: Some(records),
        };
        Ok(true)
    }

    /// What a graph that records a launch over the set keeps: its tables and records.
    fn keeps(&self) -> Vec<Keep> {
        let mut keeps: Vec<Keep> = self.tables.iter().map(|t| t.clone() as Keep).collect();
        keeps.extend(self.chunks.iter().map(|c| c.clone() as Keep));
        keeps.extend(self.scales.iter().map(|s| s.clone() as Keep));
        keeps.extend(self.records.iter().flat_map(Records::keeps));
        keeps
    }
}

impl Adamant {
    /// The one multi-tensor launch path, plain or stepped, over owned slices or foreign
    /// regions ([`Launch::raw_set`](crate::Launch::raw_set)); the builder's `Launch::multi` names
    /// the entry in its errors.
    pub(crate) fn launch_set_unnamed<E: OptimizerEntry, K: LaunchKinds>(
        &self,
        stream: &Stream,
        set: &mut TensorSet,
        tensors: &[E::Buffers<K>],
        uniforms: Uniforms<'_, E>,
    ) -> Result<LaunchInfo> {
        let (descriptor, checked) = uniforms.check(true)?;
        let capture = crate::graph::capture_of(stream)?;
        uniforms.refuse_frozen(capture.is_some(), descriptor.name)?;
        let kernel = descriptor.name;
        // The tables were validated when built: an unchanged set needs no further check.
        if !set.describes_views::<E, _>(tensors) {
            if capture.is_some() {
                check_tensors::<E, K>(tensors)?; // a length or overlap error is reported as such
                return Err(Error::Capture {
                    operation: format!(
                        "{kernel}: the tensor set changed during graph capture; sync it before \
                         capturing"
                    ),
                });
            }
            set.sync_views::<E, _>(tensors)?;
        }
        if let Some(custom) = &set.custom_scales {
            check_products(kernel, custom, uniforms.smallest_bound(&checked)?)?;
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
        let pointer = |name: &str| {
            set.signature[0]
                .iter()
                .position(|b| b.name == name)
                .and_then(|i| set.tables.get(i))
                .map(|t| t.address())
        };
        let scales = set.scales.as_ref().expect("built with the chunk table");
        let set_tables = SetTables {
            chunks: chunks.address(),
            n_chunks: set.n_chunks,
            scales: scales.address(),
        };
        let records = set
            .records
            .as_ref()
            .expect("built with the tables")
            .check(descriptor, tensors.len())?;
        // In a capture, the graph keeps the tensors, the set's tables and records, the step
        // state and the device scalars.
        self.retain_in(capture, || {
            let mut keeps = buffer_keeps::<E, K>(tensors);
            keeps.extend(set.keeps());
            keeps.extend(uniforms.keeps(&checked));
            keeps
        })?;
        let mut values = assemble(descriptor, pointer, 0, Some(set_tables), records, &checked)?;
        // SAFETY: `values` was assembled from the registered descriptor. The tables describe
        // exactly `tensors` for this kernel (checked above), which no other launch argument
        // aliases (checked); they stay allocated while the launch can run (a buffer's drop waits
        // for the device; a capture keeps them, retained above; raw regions are their caller's
        // promise); each chunk lies inside its tensor (built from the checked lengths), and the
        // scale table has one `f32` per tensor (built and replaced with the tables).
        unsafe {
            self.enqueue(stream, descriptor, grid, &mut values, || {
                format!("{} tensors", tensors.len())
            })?
        };
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use adamant_device::abi::Same;
    use adamant_kernels::optimizers::{attn_adam_kernel, iqn_adam_kernel};

    use super::TensorSet;
    use crate::launch_check::check_tensors;

    type Pair = Same<(u64, usize)>;

    fn tensors<B>(make: impl Fn([(u64, usize); 4]) -> B) -> Vec<B> {
        (0..3u64)
            .map(|t| make([0, 1, 2, 3].map(|b| (0x100_0000 * (4 * t + b + 1), 64 + t as usize))))
            .collect()
    }

    #[test]
    fn tables_are_reused_only_for_the_kernel_and_buffers_they_were_validated_for() {
        let iqn = tensors(|[p, g, m, v]| iqn_adam_kernel::Buffers::<Pair> { p, g, m, v });
        let attn = tensors(|[p, g, m, v]| attn_adam_kernel::Buffers::<Pair> { p, g, m, v });
        // A set as a sync for iqn_adam_kernel leaves it (without its device tables).
        let mut set = TensorSet::new();
        set.signature = check_tensors::<iqn_adam_kernel::Entry, Pair>(&iqn).unwrap();
        set.entry =
            Some(<iqn_adam_kernel::Entry as adamant_device::abi::OptimizerEntry>::DESCRIPTOR);
        assert!(set.same_key::<iqn_adam_kernel::Entry, Pair>(&iqn));
        // Another kernel over the very same addresses and lengths (and the same roles) is not
        // these tables: its launch rebuilds them, validating under its own descriptor.
        assert!(!set.same_key::<attn_adam_kernel::Entry, Pair>(&attn));
        // One buffer moved, or one tensor fewer: not these tables either.
        let mut moved = tensors(|[p, g, m, v]| iqn_adam_kernel::Buffers::<Pair> { p, g, m, v });
        moved[2].v.0 += 4;
        assert!(!set.same_key::<iqn_adam_kernel::Entry, Pair>(&moved));
        assert!(!set.same_key::<iqn_adam_kernel::Entry, Pair>(&iqn[..2]));
    }
}
