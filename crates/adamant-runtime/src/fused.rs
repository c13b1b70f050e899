//! Fused launches: one launch of a `fused_optimizer!` entry updates every tensor of a set, each
//! tensor with its own rule (one of the entry's kernels) and its own step record (its group's
//! hyperparameters, step, guard verdict and bound). The tables (`adamant_abi::fused`) are built
//! by [`FusedSet`] from [`FusedTensor`]s and rebuilt only when the set changes.
use std::collections::HashMap;
use std::marker::PhantomData;
use std::num::NonZeroU32;
use std::sync::Arc;

use adamant_device::abi::fused::{
    fused_slots, rule_word, FusedEntry, FusedSlot, FUSED_PARAMS, FUSED_SLOTS as SLOTS,
    MAX_ROUNDING_INDEX,
};
use adamant_device::abi::{ArgValue, KernelDescriptor, OptimizerEntry, ParamRole};
use adamant_device::diagnostics::MAX_BUFFERS;
use cust::stream::Stream;
use smallvec::SmallVec;

use crate::buffers::{LaunchKinds, Owned};
use crate::device::Adamant;
use crate::error::{Error, Result};
use crate::fused_chunk::{bytes_per_element, ChunkSize};
use crate::launch::{LaunchInfo, BLOCK_THREADS};
use crate::launch_check::{
    check_lengths, check_overlaps, check_uniforms, ranges, views, Args, BufferRange, Signature,
};
use crate::memory::{DeviceMemory, Keep};
use crate::multi::{chunk_count, push_chunks_of};
use crate::records::{LaunchRecords, Records};
use crate::step::StepStates;

/// One tensor of a fused launch: the kernel that updates it (the rule), its buffers (validated:
/// one length), its `#[uniform_ptr]`s and the index of its step record in the launch's
/// [`StepStates`]. It borrows the buffers, so they outlive it.
pub struct FusedTensor<'b> {
    /// The rule's stepped entry (what the fused entry's `RULES` lists).
    rule: &'static KernelDescriptor,
    /// The rule's plain entry (whose domains the record's lr and betas are checked against).
    plain: &'static KernelDescriptor,
    buffers: SmallVec<[BufferRange; MAX_BUFFERS]>,
    /// The address for each slot the rule reads (0 where it reads none, and for a null
    /// `#[uniform_ptr]`, which the rule reads as its default).
    slots: [u64; SLOTS],
    len: usize,
    record: usize,
    keeps: Vec<Keep>,
    _borrow: PhantomData<&'b mut ()>,
}

impl<'b> FusedTensor<'b> {
    /// Tensor updated by kernel `E`, from `buffers` (its generated `Buffers` struct), its
    /// uniform pointers (`E::StepScalars`, as a stepped launch of `E` takes) and record `record`.
    ///
    /// # Errors
    ///
    /// [`Error::LengthMismatch`] for a buffer of another length than the parameter buffer's;
    /// [`Error::UnregisteredKernel`] for an entry whose buffers do not match its descriptor;
    /// the uniform pointers' errors (as a stepped launch's); [`Error::NotARule`] for a kernel
    /// with more buffers of a role than a fused entry has tables (such a kernel cannot be a
    /// rule, so no launch would take it).
    pub fn new<E: OptimizerEntry>(
        buffers: &'b E::Buffers<Owned<'_>>,
        scalars: &E::StepScalars,
        record: usize,
    ) -> Result<FusedTensor<'b>> {
        FusedTensor::from_views::<E, Owned<'_>>(buffers, scalars, record)
    }

    /// Every tensor of one group: each of `buffers` updated by `E`, all with the same uniform
    /// pointers and record (a group's tensors share its hyperparameters).
    ///
    /// # Errors
    ///
    /// As [`FusedTensor::new`], inside [`Error::InTensor`] naming the tensor in `buffers`.
    pub fn group<E: OptimizerEntry>(
        buffers: &'b [E::Buffers<Owned<'_>>],
        scalars: &E::StepScalars,
        record: usize,
    ) -> Result<Vec<FusedTensor<'b>>> {
        buffers
            .iter()
            .enumerate()
            .map(|(t, b)| {
                FusedTensor::new::<E>(b, scalars, record).map_err(|e| e.in_tensor(t, buffers.len()))
            })
            .collect()
    }

    /// [`FusedTensor::new`] over any buffer family the launch checks read.
    pub(crate) fn from_views<E: OptimizerEntry, K: LaunchKinds>(
        buffers: &'b E::Buffers<K>,
        scalars: &E::StepScalars,
        record: usize,
    ) -> Result<FusedTensor<'b>> {
        let rule = E::STEPPED_DESCRIPTOR;
        let views = views::<E, K>(buffers);
        let len = check_lengths(E::DESCRIPTOR, &views)?;
        let slot_list = fused_slots(rule).map_err(|e| Error::NotFusable {
            kernel: E::DESCRIPTOR.name,
            role: e.role,
            count: e.count,
            limit: e.limit,
        })?;
        let (uniforms, uniform_keeps) = check_uniforms(rule, E::step_scalar_values(scalars))?;
        let mut uniforms = uniforms.into_iter();
        let mut slots = [0u64; SLOTS];
        for (i, slot) in slot_list {
            let param = &rule.params[i];
            slots[slot.param_index()] = match slot {
                FusedSlot::Uniform(_) => match uniforms.next() {
                    Some(ArgValue::Ptr(address)) => address,
                    _ => return Err(Error::UnregisteredKernel { kernel: rule.name }),
                },
                _ => views
                    .iter()
                    .find(|(name, ..)| *name == param.name)
                    .map(|(_, _, b)| b.address())
                    .ok_or(Error::UnregisteredKernel { kernel: rule.name })?,
            };
        }
        let ranges = ranges(E::DESCRIPTOR, &views)?;
        let mut keeps: Vec<Keep> = views.iter().filter_map(|(_, _, b)| b.keep()).collect();
        keeps.extend(uniform_keeps);
        Ok(FusedTensor {
            rule,
            plain: E::DESCRIPTOR,
            buffers: ranges,
            slots,
            len,
            record,
            keeps,
            _borrow: PhantomData,
        })
    }

    /// The kernel that updates this tensor.
    pub fn rule(&self) -> &'static str {
        self.plain.name
    }

    /// Its length, in elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The index of its step record.
    pub fn record(&self) -> usize {
        self.record
    }

    /// What identifies it for a set's tables: the rule, the slot addresses, the length, the
    /// record.
    fn key(&self) -> TensorKey {
        (
            self.rule as *const _ as usize,
            self.slots,
            self.len,
            self.record,
        )
    }
}

type TensorKey = (usize, [u64; SLOTS], usize, usize);

/// The device tables behind a fused launch for one set of tensors: a pointer table per slot, the
/// chunk table, the clamp scales (ones), each tensor's rule and step-record pointer, and the
/// diagnostics records (one per tensor). Keep one per set across steps: while the launches pass
/// the same tensors (same rules, buffers, records), nothing is allocated or uploaded.
pub struct FusedSet {
    entry: Option<&'static KernelDescriptor>,
    keys: Vec<TensorKey>,
    /// The `StepStates` the record pointers point into (its records' base address).
    states_at: u64,
    slots: [Option<Arc<DeviceMemory<u64>>>; SLOTS],
    chunks: Option<Arc<DeviceMemory<u32>>>,
    scales: Option<Arc<DeviceMemory<f32>>>,
    rules: Option<Arc<DeviceMemory<u32>>>,
    step_states: Option<Arc<DeviceMemory<u64>>>,
    n_chunks: u32,
    /// How this set's launches cut each tensor into chunks ([`FusedSet::with_chunk_size`]).
    chunk: ChunkSize,
    /// The most blocks of one launch ([`FusedSet::with_max_blocks`]); `None`: one per chunk.
    max_blocks: Option<NonZeroU32>,
    elements: usize,
    rebuilds: u64,
    records: Option<Records>,
}

impl Default for FusedSet {
    fn default() -> Self {
        FusedSet::new()
    }
}

impl FusedSet {
    /// An empty set: the first launch builds its tables.
    pub fn new() -> FusedSet {
        FusedSet {
            entry: None,
            keys: Vec::new(),
            states_at: 0,
            slots: Default::default(),
            chunks: None,
            scales: None,
            rules: None,
            step_states: None,
            n_chunks: 0,
            chunk: ChunkSize::DEFAULT,
            max_blocks: None,
            elements: 0,
            rebuilds: 0,
            records: None,
        }
    }

    /// An empty set whose launches cut each tensor into chunks of `elements` (one block each),
    /// the same for every tensor, instead of [`ChunkSize::DEFAULT`]'s byte budget:
    /// [`FusedSet::with_chunk_size`] of [`ChunkSize::Elements`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidChunkElements`] unless `elements` is a positive multiple of 4 (a chunk
    /// of a 16-byte aligned tensor stays aligned) of at most 2^24.
    pub fn with_chunk_elements(elements: usize) -> Result<FusedSet> {
        FusedSet::with_chunk_size(ChunkSize::Elements(elements))
    }

    /// An empty set whose launches cut each tensor into chunks of `size` (one block each)
    /// instead of [`ChunkSize::DEFAULT`]: larger chunks pay each block's start (a chain of
    /// dependent reads) and its record flush fewer times, smaller ones spread a set of few
    /// tensors over more multiprocessors. The results are the same bit for bit (each element's
    /// update does not depend on its chunk, and the records combine chunks order-free).
    ///
    /// # Errors
    ///
    /// [`ChunkSize::checked`]'s: [`Error::InvalidChunkElements`], [`Error::InvalidChunkBytes`].
    pub fn with_chunk_size(size: ChunkSize) -> Result<FusedSet> {
        Ok(FusedSet {
            chunk: size.checked()?,
            ..FusedSet::new()
        })
    }

    /// How this set's launches cut each tensor into chunks.
    pub fn chunk_size(&self) -> ChunkSize {
        self.chunk
    }

    /// This set with its launches capped at `blocks` blocks: each block then takes chunks in
    /// turn (block `b` the chunks `b`, `b + blocks`, ...), starting and publishing once, where
    /// the default (one block per chunk) pays both for every chunk; each chunk's facts are
    /// flushed into its tensor's record either way. The results are the same bit for bit.
    pub fn with_max_blocks(self, blocks: NonZeroU32) -> FusedSet {
        FusedSet {
            max_blocks: Some(blocks),
            ..self
        }
    }

    /// The cap of [`FusedSet::with_max_blocks`], if any.
    pub fn max_blocks(&self) -> Option<NonZeroU32> {
        self.max_blocks
    }

    /// How many times the tables were (re)built.
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds
    }

    /// Total elements over the set's tensors.
    pub fn elements(&self) -> usize {
        self.elements
    }

    /// The diagnostics records of the last finished launch, one per tensor (in the launch's
    /// order, each with the fused entry's record buffers: the rule's own first, the rest empty);
    /// `None` before the first launch.
    pub fn records(&self) -> Option<LaunchRecords> {
        self.records.as_ref().map(Records::read)
    }

    fn describes(
        &self,
        entry: &'static KernelDescriptor,
        states_at: u64,
        tensors: &[FusedTensor<'_>],
    ) -> bool {
        self.entry.is_some_and(|d| std::ptr::eq(d, entry))
            && self.states_at == states_at
            && self.keys.len() == tensors.len()
            && self.keys.iter().zip(tensors).all(|(k, t)| *k == t.key())
    }

    /// Builds the tables for `tensors` (validated by the caller: rules and records; here the
    /// overlaps across the whole set) and uploads them.
    fn rebuild<F: FusedEntry>(
        &mut self,
        tensors: &[FusedTensor<'_>],
        rule_of: &[u32],
        record_at: &[u64],
        states_at: u64,
    ) -> Result<()> {
        let kernel = F::DESCRIPTOR.name;
        check_set(kernel, tensors)?;
        let mut slot_tables: [Vec<u64>; SLOTS] = Default::default();
        for tensor in tensors {
            for (table, address) in slot_tables.iter_mut().zip(tensor.slots) {
                table.push(address);
            }
        }
        let elements = tensors.iter().map(|t| t.len).sum();
        let chunks = chunk_table(kernel, tensors, self.chunk)?;
        let n_chunks = chunk_count(kernel, &chunks)?;
        // Every slot has a table, with 0 for the tensors whose rule does not read it (and for a
        // null `#[uniform_ptr]`, which its rule reads as the default): the entry reads a
        // tensor's row of every table its set's rules use before it branches to the rule
        // (`adamant_device::fused::FusedRow`), whichever rules this launch's tensors have.
        let mut slots: [Option<Arc<DeviceMemory<u64>>>; SLOTS] = Default::default();
        for (out, table) in slots.iter_mut().zip(&slot_tables) {
            *out = Some(DeviceMemory::from_host(table, "a fused pointer table")?);
        }
        let nonempty = !chunks.is_empty();
        let ones = vec![1.0f32; tensors.len()];
        *self = FusedSet {
            entry: Some(F::DESCRIPTOR),
            keys: tensors.iter().map(FusedTensor::key).collect(),
            states_at,
            slots,
            chunks: nonempty
                .then(|| DeviceMemory::from_host(&chunks, "a fused chunk table"))
                .transpose()?,
            scales: nonempty
                .then(|| DeviceMemory::from_host(&ones, "a fused clamp scale table"))
                .transpose()?,
            rules: nonempty
                .then(|| DeviceMemory::from_host(rule_of, "a fused rule table"))
                .transpose()?,
            step_states: nonempty
                .then(|| DeviceMemory::from_host(record_at, "a fused step-state table"))
                .transpose()?,
            n_chunks,
            chunk: self.chunk,
            max_blocks: self.max_blocks,
            elements,
            rebuilds: self.rebuilds + 1,
            records: Some(Records::new(tensors.len(), F::RECORD_BUFFERS)?),
        };
        Ok(())
    }

    /// Makes the tables describe exactly `tensors` for `F`, uploading them (synchronously) only
    /// if the set changed; returns whether it rebuilt. Call it before capturing a graph that
    /// launches the set (a capture cannot upload tables). Checks what a table holds (each
    /// tensor's rule is one of `F`'s, each record exists, no written buffer overlaps another);
    /// the launch checks the rest (the record was advanced and made for the rule).
    ///
    /// # Errors
    ///
    /// [`Error::NotARule`], [`Error::StepIndex`] (inside [`Error::InTensor`]),
    /// [`Error::Overlap`], [`Error::TooLarge`], [`Error::Cuda`]; the old tables are kept.
    pub fn sync<F: FusedEntry>(
        &mut self,
        tensors: &[FusedTensor<'_>],
        states: &StepStates,
    ) -> Result<bool> {
        let rule_of = rules_of::<F>(tensors)?;
        let record_at = tensors
            .iter()
            .enumerate()
            .map(|(t, tensor)| {
                states
                    .record_ptr(tensor.record)
                    .map_err(|e| e.in_kernel(F::DESCRIPTOR.name).in_tensor(t, 2))
            })
            .collect::<Result<Vec<u64>>>()?;
        let states_at = states.record_ptr(0).unwrap_or(0);
        if self.describes(F::DESCRIPTOR, states_at, tensors) {
            return Ok(false);
        }
        self.rebuild::<F>(tensors, &rule_of, &record_at, states_at)?;
        Ok(true)
    }

    fn keeps(&self) -> Vec<Keep> {
        let mut keeps: Vec<Keep> = self
            .slots
            .iter()
            .flatten()
            .map(|t| t.clone() as Keep)
            .collect();
        keeps.extend(self.chunks.iter().map(|c| c.clone() as Keep));
        keeps.extend(self.scales.iter().map(|c| c.clone() as Keep));
        keeps.extend(self.rules.iter().map(|c| c.clone() as Keep));
        keeps.extend(self.step_states.iter().map(|c| c.clone() as Keep));
        keeps.extend(self.records.iter().flat_map(Records::keeps));
        keeps
    }
}

impl Adamant {
    /// Enqueues one launch of the fused entry `F` over `tensors`: each tensor updated by its own
    /// rule with the scalars, guard verdict and bound of its own record of `states`. The same
    /// validation as a stepped launch of each rule (the record exists, was advanced and was made
    /// for the rule; its lr and betas lie in the rule's domains), then, when the set changed,
    /// the overlaps across the whole set. In a capture the set must not change (sync it with an
    /// eager launch first), and the graph keeps every buffer and table.
    ///
    /// # Errors
    ///
    /// [`Error::NotARule`] for a tensor whose kernel is not one of `F`'s rules; a stepped
    /// launch's errors for a record ([`Error::StepIndex`], [`Error::NotAdvanced`],
    /// [`Error::RecordKernel`], [`Error::InvalidScalar`]), inside [`Error::InTensor`] naming the
    /// tensor; [`Error::Overlap`] between any two buffers of the set (one written);
    /// [`Error::Capture`] for a changed set while capturing; [`Error::MissingKernel`] if the
    /// module lacks `F`; [`Error::Cuda`]. Nothing is launched on an error.
    pub fn launch_fused<F: FusedEntry>(
        &self,
        stream: &Stream,
        set: &mut FusedSet,
        tensors: &[FusedTensor<'_>],
        states: &StepStates,
    ) -> Result<LaunchInfo> {
        let descriptor = F::DESCRIPTOR;
        let kernel = descriptor.name;
        let capture = crate::graph::capture_of(stream)?;
        let rule_of = rules_of::<F>(tensors)?;
        let mut record_at: SmallVec<[u64; 16]> = SmallVec::new();
        for (t, tensor) in tensors.iter().enumerate() {
            let address = states
                .check_launch(tensor.rule, tensor.plain, tensor.record)
                .map_err(|e| e.in_kernel(kernel).in_tensor(t, 2))?;
            record_at.push(address);
        }
        let states_at = states.record_ptr(0).unwrap_or(0);
        if !set.describes(descriptor, states_at, tensors) {
            if capture.is_some() {
                return Err(Error::Capture {
                    operation: format!(
                        "{kernel}: the fused set changed during graph capture; sync it \
                         (FusedSet::sync) before capturing"
                    ),
                });
            }
            set.rebuild::<F>(tensors, &rule_of, &record_at, states_at)?;
        }
        let grid = grid(set.n_chunks, set.max_blocks);
        let info = LaunchInfo {
            kernel,
            elements: set.elements,
            bound: f32::NAN,
            grid,
            block: BLOCK_THREADS,
        };
        if set.chunks.is_none() {
            return Ok(info);
        }
        let records = set
            .records
            .as_ref()
            .expect("built with the tables")
            .check_counts(descriptor, tensors.len(), F::RECORD_BUFFERS)?;
        self.retain_in(capture, || {
            let mut keeps: Vec<Keep> = tensors
                .iter()
                .flat_map(|t| t.keeps.iter().cloned())
                .collect();
            keeps.extend(set.keeps());
            keeps.extend(states.keeps());
            keeps
        })?;
        let mut values = assemble(descriptor, set, records)?;
        // SAFETY: `values` follows the registered descriptor's roles, parameter by parameter.
        // The tables describe exactly `tensors` (same rules, buffers, lengths and records,
        // checked above), whose buffers no other buffer of the set aliases (checked when built);
        // each record pointer is into `states` (checked per tensor); each chunk lies inside its
        // tensor; the scale, rule and record tables have one entry per tensor. The buffers are
        // borrowed by `tensors` for the call, a capture keeps every allocation (retained above).
        unsafe {
            self.enqueue(stream, descriptor, grid, &mut values, || {
                format!("{} tensors", tensors.len())
            })?
        };
        Ok(info)
    }
}

/// The chunk table of a launch of `kernel` over `tensors`: each tensor cut into chunks of
/// `size` for the bytes its rule moves per element.
fn chunk_table(
    kernel: &'static str,
    tensors: &[FusedTensor<'_>],
    size: ChunkSize,
) -> Result<Vec<u32>> {
    let mut chunks = Vec::new();
    for (t, tensor) in tensors.iter().enumerate() {
        let elements = size.elements_for(bytes_per_element(&tensor.buffers));
        push_chunks_of(&mut chunks, kernel, t, tensor.len, elements)?;
    }
    Ok(chunks)
}

/// The blocks of a launch over `n_chunks` chunks: one per chunk, at least one, at most `cap`
/// (and the driver's limit).
fn grid(n_chunks: u32, cap: Option<NonZeroU32>) -> u32 {
    let cap = cap.map_or(i32::MAX as u32, |b| b.get().min(i32::MAX as u32));
    n_chunks.clamp(1, cap)
}

/// No buffer of the set that is written shares a byte with any other buffer of the set, whatever
/// the tensors' rules.
fn check_set(kernel: &'static str, tensors: &[FusedTensor<'_>]) -> Result<()> {
    let signature: Signature = tensors.iter().map(|t| t.buffers.clone()).collect();
    check_overlaps(kernel, &signature, true)
}

/// Each tensor's rule-table word ([`rule_word`]): the index of its rule among `F`'s, and its
/// rounding index, its position among the tensors before it of the same rule and record (its
/// index in that group's own multi-tensor launch, whose stochastic rounding the fused launch
/// then repeats bit for bit).
fn rules_of<F: FusedEntry>(tensors: &[FusedTensor<'_>]) -> Result<Vec<u32>> {
    let mut seen: HashMap<(u32, usize), u32> = HashMap::new();
    tensors
        .iter()
        .enumerate()
        .map(|(t, tensor)| {
            let branch = branch_of::<F>(t, tensor)?;
            let index = seen.entry((branch, tensor.record)).or_insert(0);
            if *index > MAX_ROUNDING_INDEX {
                return Err(Error::TooLarge {
                    kernel: F::DESCRIPTOR.name,
                    what: format!(
                        "the group of tensor {t} (tensors of rule `{}` with record {})",
                        tensor.plain.name, tensor.record
                    ),
                    value: *index as usize + 1,
                    limit: MAX_ROUNDING_INDEX as usize + 1,
                });
            }
            let word = rule_word(branch, *index);
            *index += 1;
            Ok(word)
        })
        .collect()
}

/// The index of `tensor`'s rule among `F`'s.
fn branch_of<F: FusedEntry>(t: usize, tensor: &FusedTensor<'_>) -> Result<u32> {
    F::RULES
        .iter()
        .position(|r| std::ptr::eq(*r, tensor.rule))
        .map(|r| r as u32)
        .ok_or_else(|| Error::NotARule {
            kernel: F::DESCRIPTOR.name,
            tensor: t,
            rule: tensor.plain.name,
            rules: F::RULES
                .iter()
                .map(|r| r.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The fused entry's arguments, parameter by parameter from its descriptor's roles; any role
/// this cannot fill is an error, not a guess.
fn assemble(descriptor: &'static KernelDescriptor, set: &FusedSet, records: u64) -> Result<Args> {
    let bad = || Error::UnregisteredKernel {
        kernel: descriptor.name,
    };
    let need = |a: Option<u64>| a.ok_or_else(bad);
    let mut out = Args::new();
    // Every fused entry registers the one list (`fused_optimizer!`); anything else is not one.
    if descriptor.params != FUSED_PARAMS {
        return Err(bad());
    }
    for (i, p) in descriptor.params.iter().enumerate() {
        let value = match p.role {
            ParamRole::ParamTable
            | ParamRole::InputTable
            | ParamRole::StateTable
            | ParamRole::UniformTable
                if i < SLOTS =>
            {
                // Never a null table: the entry reads a tensor's row of every table
                // (`FusedTables::row`), so a set without its tables is an error here.
                ArgValue::Ptr(need(set.slots[i].as_ref().map(|t| t.address()))?)
            }
            ParamRole::ChunkTable => ArgValue::Ptr(need(set.chunks.as_ref().map(|c| c.address()))?),
            ParamRole::ChunkCount => ArgValue::U32(set.n_chunks),
            ParamRole::ClampScales => {
                ArgValue::Ptr(need(set.scales.as_ref().map(|c| c.address()))?)
            }
            ParamRole::RuleTable => ArgValue::Ptr(need(set.rules.as_ref().map(|c| c.address()))?),
            ParamRole::Records => ArgValue::Ptr(records),
            ParamRole::StepStateTable => {
                ArgValue::Ptr(need(set.step_states.as_ref().map(|c| c.address()))?)
            }
            _ => return Err(bad()),
        };
        out.push(value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use adamant_device::abi::fused::FusedEntry;
    use adamant_device::abi::{OptimizerEntry, Same, UniformPtr};
    use adamant_kernels::fused::adamant_fused_step::Entry as Fused;
    use adamant_kernels::optimizers::{
        attn_adam_kernel, curiosity_adam_step, dqn_adam_update_kernel,
    };

    use std::num::NonZeroU32;

    use super::{check_set, grid, rules_of, FusedSet, FusedSlot, FusedTensor, SLOTS};
    use crate::error::Error;
    use crate::fused_chunk::{ChunkSize, MAX_CHUNK_ELEMENTS};
    use adamant_device::abi::fused::{rule_branch, rule_rounding_index};

    type Pair = Same<(u64, usize)>;

    fn dqn(base: u64, len: usize) -> dqn_adam_update_kernel::Buffers<Pair> {
        let at = |k: u64| (base + k * 0x10_0000, len);
        dqn_adam_update_kernel::Buffers {
            p: at(0),
            g: at(1),
            m: at(2),
            v: at(3),
        }
    }

    fn amsgrad(base: u64, len: usize) -> curiosity_adam_step::Buffers<Pair> {
        let at = |k: u64| (base + k * 0x10_0000, len);
        curiosity_adam_step::Buffers {
            p: at(0),
            g: at(1),
            m: at(2),
            v: at(3),
            v_max: at(4),
        }
    }

    const NO_SCALE: dqn_adam_update_kernel::StepScalars = dqn_adam_update_kernel::StepScalars {
        grad_scale: UniformPtr::NULL,
    };

    /// A DQN tensor of record `record` (its grad_scale null).
    fn dqn_tensor(b: &dqn_adam_update_kernel::Buffers<Pair>, record: usize) -> FusedTensor<'_> {
        FusedTensor::from_views::<dqn_adam_update_kernel::Entry, Pair>(b, &NO_SCALE, record)
            .unwrap()
    }

    /// An AMSGrad tensor of record `record`.
    fn amsgrad_tensor(c: &curiosity_adam_step::Buffers<Pair>, record: usize) -> FusedTensor<'_> {
        let s = curiosity_adam_step::StepScalars {};
        FusedTensor::from_views::<curiosity_adam_step::Entry, Pair>(c, &s, record).unwrap()
    }

    /// The slots `t`'s rule reads, from the ABI's one mapping (`fused_slots`), which the
    /// generated fused chunk follows too.
    fn read_slots(t: &FusedTensor<'_>) -> [bool; SLOTS] {
        let mut reads = [false; SLOTS];
        for (_, slot) in super::fused_slots(t.rule).unwrap() {
            reads[slot.param_index()] = true;
        }
        reads
    }

    /// Each buffer and uniform pointer lands in its role's table, in declared order (the order
    /// the generated fused chunk reads them in).
    #[test]
    fn each_buffer_lands_in_its_slot() {
        let b = dqn(0x1000_0000, 10);
        // A null grad_scale (a live one is a DeviceScalar, on a GPU): 0 in its slot, which the
        // rule reads as the default.
        let t = dqn_tensor(&b, 3);
        let at = |slot: FusedSlot| slot.param_index();
        let mut want = [0u64; SLOTS];
        // The f32 parameter table, input0, state0, state1 (and uniform0, null).
        want[at(FusedSlot::Param(0))] = 0x1000_0000;
        want[at(FusedSlot::Input(0))] = 0x1010_0000;
        want[at(FusedSlot::State(0))] = 0x1020_0000;
        want[at(FusedSlot::State(1))] = 0x1030_0000;
        assert_eq!(t.slots, want);
        let reads = |slots: &[FusedSlot]| {
            let mut r = [false; SLOTS];
            for &s in slots {
                r[at(s)] = true;
            }
            r
        };
        use FusedSlot::{Input, Param, State, Uniform};
        assert_eq!(
            read_slots(&t),
            reads(&[Param(0), Input(0), State(0), State(1), Uniform(0)])
        );
        assert_eq!(
            (t.len(), t.record(), t.rule()),
            (10, 3, "dqn_adam_update_kernel")
        );
        let c = amsgrad(0x2000_0000, 4);
        let t = amsgrad_tensor(&c, 0);
        assert_eq!(
            read_slots(&t),
            reads(&[Param(0), Input(0), State(0), State(1), State(2)])
        );
        assert_eq!(
            t.slots[at(State(2))],
            0x2040_0000,
            "v_max is the third state"
        );
    }

    /// A 16-bit weight lands in the parameter table of its storage and rounding, and only there:
    /// bf16 to nearest, bf16 stochastic and f16 each have their own.
    #[test]
    fn a_sixteen_bit_weight_lands_in_its_storages_table() {
        use crate::{DeviceRegion, Raw};
        use adamant_device::abi::Storage;
        use adamant_kernels::half_weights::{adamw_bf16, adamw_bf16_sr_moments, adamw_f16};
        let at =
            |k: u64, storage| DeviceRegion::of(0x4000_0000 + k * 0x10_0000, 6, storage).unwrap();
        // Each kernel's buffers in the storages it declares.
        macro_rules! tensor {
            ($k:ident) => {{
                let d = $k::DESCRIPTOR.params;
                let b = $k::Buffers::<Raw> {
                    p: at(0, d[0].storage),
                    g: at(1, d[1].storage),
                    m: at(2, d[2].storage),
                    v: at(3, d[3].storage),
                };
                assert_ne!(d[0].storage, Storage::F32);
                let t =
                    FusedTensor::from_views::<$k::Entry, Raw>(&b, &$k::StepScalars {}, 0).unwrap();
                (t.slots, read_slots(&t))
            }};
        }
        for ((slots, reads), table) in [
            (tensor!(adamw_bf16), 1),
            (tensor!(adamw_bf16_sr_moments), 2),
            (tensor!(adamw_f16), 3),
        ] {
            for k in 0..adamant_device::abi::fused::FUSED_PARAM_TABLES {
                let i = FusedSlot::Param(k).param_index();
                assert_eq!(reads[i], k == table, "table {k}");
                assert_eq!(
                    slots[i],
                    if k == table { 0x4000_0000 } else { 0 },
                    "table {k}"
                );
            }
            assert_eq!(slots[FusedSlot::State(1).param_index()], 0x4030_0000);
        }
    }

    /// A 16-bit rule's tensor given buffers of another storage than its kernel declares is
    /// refused, naming the kernel, the buffer and both storages: no table would hold it.
    #[test]
    fn a_sixteen_bit_rule_refuses_buffers_of_another_storage() {
        use adamant_device::abi::Storage;
        use adamant_kernels::half_weights::adamw_bf16_sr_moments as k;
        let at = |i: u64, storage| {
            crate::DeviceRegion::of(0x5000_0000 + i * 0x10_0000, 8, storage).unwrap()
        };
        // The moments as f32 where the kernel declares bf16.
        let b = k::Buffers::<crate::Raw> {
            p: at(0, Storage::Bf16),
            g: at(1, Storage::Bf16),
            m: at(2, Storage::F32),
            v: at(3, Storage::Bf16),
        };
        let e = FusedTensor::from_views::<k::Entry, crate::Raw>(&b, &k::StepScalars {}, 0)
            .err()
            .expect("refused");
        assert!(
            matches!(
                e,
                Error::StorageMismatch {
                    kernel: "adamw_bf16_sr_moments",
                    buffer: "m",
                    declared: Storage::Bf16,
                    given: Storage::F32,
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn a_buffer_of_another_length_is_refused_naming_it() {
        let mut b = dqn(0x1000_0000, 10);
        b.v.1 = 9;
        let e = FusedTensor::from_views::<dqn_adam_update_kernel::Entry, Pair>(&b, &NO_SCALE, 0)
            .err()
            .expect("refused");
        assert!(
            matches!(
                e,
                Error::LengthMismatch {
                    buffer: "v",
                    found: 9,
                    expected: 10,
                    ..
                }
            ),
            "{e}"
        );
    }

    /// A tensor's rounding index counts the tensors before it of the same rule and record (its
    /// index in that group's own launch), whatever lies between them.
    #[test]
    fn rounding_indices_count_within_each_rule_and_record() {
        let (b, c) = (dqn(0x1000_0000, 8), amsgrad(0x3000_0000, 8));
        let tensors = vec![
            dqn_tensor(&b, 0),
            amsgrad_tensor(&c, 1),
            dqn_tensor(&b, 0),
            dqn_tensor(&b, 1),
            amsgrad_tensor(&c, 1),
            dqn_tensor(&b, 0),
        ];
        let words = rules_of::<Fused>(&tensors).unwrap();
        let indices: Vec<u32> = words.iter().map(|&w| rule_rounding_index(w)).collect();
        assert_eq!(indices, [0, 0, 1, 0, 1, 2]);
        let branch = |n: &str| Fused::RULES.iter().position(|r| r.name == n).unwrap() as u32;
        let (dqn, ams) = (
            branch("dqn_adam_update_kernel_stepped"),
            branch("curiosity_adam_step_stepped"),
        );
        let branches: Vec<u32> = words.iter().map(|&w| rule_branch(w)).collect();
        assert_eq!(branches, [dqn, ams, dqn, dqn, ams, dqn]);
    }

    /// Every tensor's rule is found among the entry's, in branch order; any other entry (here the
    /// same kernel's multi-tensor entry, which is no rule) is refused, naming the tensor.
    #[test]
    fn rules_are_found_in_branch_order_and_others_refused() {
        let (b, c) = (dqn(0x1000_0000, 8), amsgrad(0x3000_0000, 8));
        let tensors = vec![amsgrad_tensor(&c, 1), dqn_tensor(&b, 0)];
        let want: Vec<u32> = [
            "curiosity_adam_step_stepped",
            "dqn_adam_update_kernel_stepped",
        ]
        .iter()
        .map(|n| Fused::RULES.iter().position(|r| r.name == *n).unwrap() as u32)
        .collect();
        assert_eq!(rules_of::<Fused>(&tensors).unwrap(), want);
        let mut stray = tensors;
        stray[1].rule = <attn_adam_kernel::Entry as OptimizerEntry>::MULTI_STEPPED_DESCRIPTOR;
        let e = rules_of::<Fused>(&stray).unwrap_err();
        assert!(
            matches!(
                &e,
                Error::NotARule {
                    kernel: "adamant_fused_step",
                    tensor: 1,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string().contains("curiosity_adam_step_stepped"),
            "lists the rules: {e}"
        );
    }

    /// A buffer written by one rule's tensor may not overlap any buffer of another rule's tensor.
    #[test]
    fn overlaps_across_rules_are_refused() {
        let b = dqn(0x1000_0000, 64);
        // The AMSGrad tensor's v_max starts 8 bytes into the DQN tensor's m.
        let mut c = amsgrad(0x5000_0000, 64);
        c.v_max.0 = 0x1020_0008;
        let tensors = vec![dqn_tensor(&b, 0), amsgrad_tensor(&c, 1)];
        let e = check_set("adamant_fused_step", &tensors).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Overlap {
                    kernel: "adamant_fused_step",
                    ..
                }
            ),
            "{e}"
        );
        let text = e.to_string();
        assert!(
            text.contains("tensor 0 `m`") && text.contains("tensor 1 `v_max`"),
            "{text}"
        );
        // Apart, they pass.
        c.v_max.0 = 0x5040_0000;
        let tensors = vec![dqn_tensor(&b, 0), amsgrad_tensor(&c, 1)];
        check_set("adamant_fused_step", &tensors).unwrap();
    }

    #[test]
    fn a_capped_grid_takes_at_most_its_cap_and_at_least_one_block() {
        let cap = NonZeroU32::new(396);
        assert_eq!(grid(2674, None), 2674);
        assert_eq!(grid(2674, cap), 396);
        assert_eq!(grid(10, cap), 10);
        assert_eq!(grid(0, cap), 1);
        assert_eq!(grid(u32::MAX, None), i32::MAX as u32);
        let set = FusedSet::with_chunk_elements(8192)
            .unwrap()
            .with_max_blocks(cap.unwrap());
        assert_eq!(
            (set.chunk_size(), set.max_blocks()),
            (ChunkSize::Elements(8192), cap)
        );
        assert_eq!(FusedSet::new().max_blocks(), None);
    }

    /// By default an f32 Adam tensor is cut into chunks of 4,096 elements and an AMSGrad one
    /// (36 bytes an element) into 3,072; an element count cuts both alike. Every element is in
    /// exactly one chunk, in order.
    #[test]
    fn the_default_cuts_each_tensor_by_the_bytes_its_rule_moves() {
        let (b, c) = (dqn(0x1000_0000, 10_000), amsgrad(0x5000_0000, 7_000));
        let tensors = vec![dqn_tensor(&b, 0), amsgrad_tensor(&c, 1)];
        let rows = |size| {
            let table = super::chunk_table("adamant_fused_step", &tensors, size).unwrap();
            table
                .chunks(4)
                .map(|r| (r[0], r[1], r[2]))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            rows(ChunkSize::DEFAULT),
            [
                (0, 0, 4096),
                (0, 4096, 4096),
                (0, 8192, 1808),
                (1, 0, 3072),
                (1, 3072, 3072),
                (1, 6144, 856),
            ]
        );
        assert_eq!(
            rows(ChunkSize::Elements(4096)),
            [
                (0, 0, 4096),
                (0, 4096, 4096),
                (0, 8192, 1808),
                (1, 0, 4096),
                (1, 4096, 2904),
            ]
        );
    }

    #[test]
    fn a_chunk_size_is_checked_when_the_set_is_made() {
        assert_eq!(FusedSet::new().chunk_size(), ChunkSize::DEFAULT);
        for ok in [4, 2048, 8192, MAX_CHUNK_ELEMENTS] {
            assert_eq!(
                FusedSet::with_chunk_elements(ok).unwrap().chunk_size(),
                ChunkSize::Elements(ok)
            );
        }
        for bad in [0, 2, 8190, MAX_CHUNK_ELEMENTS + 4] {
            let e = FusedSet::with_chunk_elements(bad).err().expect("refused");
            assert!(
                matches!(e, Error::InvalidChunkElements { value, .. } if value == bad),
                "{e}"
            );
        }
        let e = FusedSet::with_chunk_size(ChunkSize::Bytes(3))
            .err()
            .expect("refused");
        assert!(
            matches!(e, Error::InvalidChunkBytes { value: 3, .. }),
            "{e}"
        );
    }
}
