//! The one validation every optimizer launch path runs before anything is enqueued, and the one
//! place that assembles what the device receives.
//!
//! Every argument of an optimizer launch is derived here from the *registered* descriptor of the
//! entry and from validated values: the buffer pointers (or pointer tables) by name, the length
//! (or chunk table), the uniforms checked against their declared types and domains, and last
//! the clamp bound from [`ClampPolicy::validated`] or, for a stepped entry, the address of a
//! step-state record that [`StepStates`] checked. An `OptimizerEntry` impl contributes
//! only its uniforms' values, and those are checked, so even a hand-written impl cannot hand the
//! device another bound.
use adamant_device::abi::{
    ArgValue, BufferRef, KernelDescriptor, Lifetime, OptimizerEntry, ParamRole, ParamType, Storage,
};
use adamant_device::diagnostics::MAX_BUFFERS;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use std::sync::OnceLock;

use crate::buffers::{uniform_keep, LaunchBuffer, LaunchKinds};
use crate::clamp_policy::{ClampPolicy, ValidBound};
use crate::error::{Error, Result};
use crate::memory::Keep;
use crate::step::StepStates;

/// The buffers of one tensor as the launch checks read them, in entry order: name, role (as the
/// buffer family types it) and the buffer.
pub(crate) fn views<'b, E: OptimizerEntry, K: LaunchKinds>(buffers: &'b E::Buffers<K>) -> Views<'b>
where
    K::Param: 'b,
    K::Input: 'b,
    K::State: 'b,
{
    let mut out = Views::new();
    E::visit_buffers(buffers, &mut |name, b| {
        out.push(match b {
            BufferRef::Param(b) => (name, ParamRole::ParamBuffer, b as &dyn LaunchBuffer),
            BufferRef::Input(b) => (name, ParamRole::Input, b as &dyn LaunchBuffer),
            BufferRef::State(b) => (name, ParamRole::State, b as &dyn LaunchBuffer),
        })
    });
    out
}

/// One tensor's buffers as [`views`] lists them: on the stack (a kernel has at most
/// [`MAX_BUFFERS`]), so checking a launch allocates nothing.
pub(crate) type Views<'b> =
    SmallVec<[(&'static str, ParamRole, &'b dyn LaunchBuffer); MAX_BUFFERS]>;

/// The address and length of one buffer of any family the checks read.
pub fn address_len<K: LaunchKinds>(b: &BufferRef<'_, K>) -> (u64, usize) {
    let view: &dyn LaunchBuffer = match b {
        BufferRef::Param(b) => *b,
        BufferRef::Input(b) => *b,
        BufferRef::State(b) => *b,
    };
    (view.address(), view.len())
}

/// What a graph must keep of `tensors`' buffers (the runtime's own; none for raw regions).
pub fn buffer_keeps<E: OptimizerEntry, K: LaunchKinds>(tensors: &[E::Buffers<K>]) -> Vec<Keep> {
    tensors
        .iter()
        .flat_map(|t| {
            views::<E, K>(t)
                .into_iter()
                .filter_map(|(_, _, b)| b.keep())
        })
        .collect()
}

/// One buffer of one tensor, as validated: its name, address, length and whether the entry
/// writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferRange {
    pub name: &'static str,
    pub address: u64,
    /// Elements, of `bytes` each.
    pub len: usize,
    pub writable: bool,
    /// Bytes per element: the storage type's the kernel declares (and the buffer has: checked).
    pub bytes: u8,
}

/// Per tensor, its buffers in entry order.
/// On the stack for one tensor (a single-buffer launch allocates nothing for it).
pub type Signature = SmallVec<[SmallVec<[BufferRange; MAX_BUFFERS]>; 1]>;

pub use crate::args::Args;

/// What a validated launch passes last: the bound (plain entries) or the address of the
/// step-state record (stepped entries).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LastArg {
    Bound(ValidBound),
    StepState(u64),
}

/// What a validated launch passes on: its last argument, the uniforms' values in entry order,
/// and the device scalars its `#[uniform_ptr]`s point at (for a graph to keep).
#[derive(Debug)]
pub struct CheckedArgs {
    pub last: LastArg,
    pub scalars: Vec<ArgValue>,
    pub uniforms: Vec<Keep>,
}

impl CheckedArgs {
    /// The bound for [`crate::LaunchInfo`]: the value passed, or NaN for a stepped launch (the
    /// device reads it from the record).
    pub fn bound_value(&self) -> f32 {
        match self.last {
            LastArg::Bound(b) => b.value(),
            LastArg::StepState(_) => f32::NAN,
        }
    }
}

/// The uniforms of one launch and where its bound comes from: a plain launch's `Scalars` and
/// clamp policy, or a stepped launch's `StepScalars` and step-state record. Every launch path
/// (single, multi-tensor; plain, stepped) validates through [`Uniforms::check`].
pub enum Uniforms<'s, E: OptimizerEntry> {
    Plain {
        scalars: &'s E::Scalars,
        policy: ClampPolicy,
    },
    Stepped {
        scalars: &'s E::StepScalars,
        states: &'s StepStates,
        index: usize,
    },
}

impl<E: OptimizerEntry> Uniforms<'_, E> {
    /// The entry a launch of these uniforms runs: single or multi-tensor, plain or stepped.
    pub fn descriptor(&self, multi: bool) -> &'static KernelDescriptor {
        match (self, multi) {
            (Uniforms::Plain { .. }, false) => E::DESCRIPTOR,
            (Uniforms::Plain { .. }, true) => E::MULTI_DESCRIPTOR,
            (Uniforms::Stepped { .. }, false) => E::STEPPED_DESCRIPTOR,
            (Uniforms::Stepped { .. }, true) => E::MULTI_STEPPED_DESCRIPTOR,
        }
    }

    /// What a graph must keep besides the buffers and the records: the step-state record's
    /// allocations and the device scalars `checked` found.
    pub fn keeps(&self, checked: &CheckedArgs) -> Vec<Keep> {
        let mut keeps = match self {
            Uniforms::Plain { .. } => Vec::new(),
            Uniforms::Stepped { states, .. } => states.keeps(),
        };
        keeps.extend(checked.uniforms.iter().cloned());
        keeps
    }

    /// Refuses a plain launch into a capture for a kernel whose scalars change from step to
    /// step (`#[step]` or `#[derived]`): the graph would replay this launch's values at every
    /// step, the seed's bug class (bias corrections frozen at step 1). Its stepped launch reads
    /// them from a record that every replay advances. A kernel of `#[hyper]` scalars alone
    /// (constant for the run by declaration) may be captured plain.
    pub fn refuse_frozen(&self, capturing: bool, entry: &'static str) -> Result<()> {
        let Some((name, how)) = self.per_step_scalar() else {
            return Ok(());
        };
        if !capturing {
            return Ok(());
        }
        Err(Error::Capture {
            operation: format!(
                "a plain launch of {entry}: its scalar `{name}` ({how}) changes every step, and \
                 a graph would replay this launch's value at every step; record its stepped \
                 launch (`Launch::stepped`, after StepStates::advance), which reads it from \
                 the step-state record"
            ),
        })
    }

    /// Refuses to prepare ([`crate::Launch::prepare`]) a plain launch of a kernel whose scalars
    /// change from step to step: a prepared launch passes the same values at every enqueue, as a
    /// graph's replay does ([`Uniforms::refuse_frozen`]).
    pub fn refuse_prepared(&self, entry: &'static str) -> Result<()> {
        match self.per_step_scalar() {
            None => Ok(()),
            Some((scalar, how)) => Err(Error::FrozenScalar {
                kernel: entry,
                scalar,
                how,
            }),
        }
    }

    /// For a plain launch, the first scalar of `E` that changes from step to step (`#[step]`
    /// or `#[derived]`), with what makes it so; `None` for a stepped launch, whose scalars are
    /// read on the device, and for a kernel of `#[hyper]` scalars alone.
    fn per_step_scalar(&self) -> Option<(&'static str, &'static str)> {
        if !matches!(self, Uniforms::Plain { .. }) {
            return None;
        }
        let scalar = E::STEPPED_DESCRIPTOR
            .record
            .iter()
            .find(|r| !matches!(r.lifetime, Lifetime::Hyper { .. }))?;
        let how = match scalar.lifetime {
            Lifetime::Step => "a #[step] field",
            _ => "#[derived] from the step number",
        };
        Some((scalar.name, how))
    }

    /// The smallest bound this launch can clamp with: the policy's, or the step-state record's
    /// smallest ([`StepStates::smallest_bound`]).
    pub fn smallest_bound(&self, checked: &CheckedArgs) -> Result<f32> {
        match self {
            Uniforms::Plain { .. } => Ok(checked.bound_value()),
            Uniforms::Stepped { states, index, .. } => states.smallest_bound(*index),
        }
    }

    /// The entry this launch uses (single or multi-tensor, plain or stepped) and its checked
    /// arguments.
    pub fn check(&self, multi: bool) -> Result<(&'static KernelDescriptor, CheckedArgs)> {
        match self {
            Uniforms::Plain { scalars, policy } => {
                let d = self.descriptor(multi);
                Ok((d, check_launch::<E>(d, scalars, *policy)?))
            }
            Uniforms::Stepped {
                scalars,
                states,
                index,
            } => {
                let descriptor = registered_entry::<E>(self.descriptor(multi))?;
                let address = states.check_launch(descriptor, E::DESCRIPTOR, *index)?;
                let (scalars, uniforms) =
                    check_uniforms(descriptor, E::step_scalar_values(scalars))?;
                Ok((
                    descriptor,
                    CheckedArgs {
                        last: LastArg::StepState(address),
                        scalars,
                        uniforms,
                    },
                ))
            }
        }
    }
}

/// `descriptor` is registered, and so are all four of `E`'s entries.
fn registered_entry<E: OptimizerEntry>(
    descriptor: &'static KernelDescriptor,
) -> Result<&'static KernelDescriptor> {
    let descriptor = registered(descriptor)?;
    registered(E::DESCRIPTOR)?;
    registered(E::MULTI_DESCRIPTOR)?;
    registered(E::STEPPED_DESCRIPTOR)?;
    registered(E::MULTI_STEPPED_DESCRIPTOR)?;
    Ok(descriptor)
}

/// The registered descriptor called like `descriptor`, which must equal it field for field: an
/// impl cannot launch a registered entry under a descriptor of its own making.
pub fn registered(descriptor: &'static KernelDescriptor) -> Result<&'static KernelDescriptor> {
    // The registry is fixed at link time: index it once, by kernel set and name (two crates
    // may each have an entry of the same name, in their own modules). A set and name registered
    // twice (a second registration could be picked in its place) maps to None.
    type Index = FxHashMap<(&'static str, &'static str), Option<&'static KernelDescriptor>>;
    struct Registry {
        by_name: Index,
        // The addresses of the descriptors registered once under their set and name: the
        // generated entries pass the very static they registered, so every launch's five checks
        // are five pointer lookups, and only another descriptor (one read from a certificate,
        // say) is looked up by name and compared field by field.
        unique: FxHashSet<usize>,
    }
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    let registry = REGISTRY.get_or_init(|| {
        let mut by_name = Index::default();
        for k in adamant_device::abi::KERNELS.iter().copied() {
            by_name
                .entry((k.set, k.name))
                .and_modify(|slot| *slot = None)
                .or_insert(Some(k));
        }
        let unique = by_name
            .values()
            .flatten()
            .map(|k| *k as *const KernelDescriptor as usize)
            .collect();
        Registry { by_name, unique }
    });
    if registry
        .unique
        .contains(&(descriptor as *const KernelDescriptor as usize))
    {
        return Ok(descriptor);
    }
    match registry
        .by_name
        .get(&(descriptor.set, descriptor.name))
        .copied()
        .flatten()
    {
        Some(known) if std::ptr::eq(known, descriptor) || known == descriptor => Ok(known),
        _ => Err(Error::UnregisteredKernel {
            kernel: descriptor.name,
        }),
    }
}

/// The checks of a launch that do not depend on the buffers: the entry is registered (single and
/// multi-tensor), the clamp policy gives a valid bound, and every uniform has the declared type
/// and lies in its declared domain.
pub fn check_launch<E: OptimizerEntry>(
    descriptor: &'static KernelDescriptor,
    scalars: &E::Scalars,
    policy: ClampPolicy,
) -> Result<CheckedArgs> {
    let descriptor = registered_entry::<E>(descriptor)?;
    let bound = policy.validated()?;
    let (scalars, uniforms) = check_uniforms(descriptor, E::scalar_values(scalars))?;
    Ok(CheckedArgs {
        last: LastArg::Bound(bound),
        scalars,
        uniforms,
    })
}

/// Every uniform has the declared type and lies in its declared domain, and every non-null
/// `#[uniform_ptr]` points at a live device scalar (returned, for a graph to keep).
pub(crate) fn check_uniforms(
    descriptor: &'static KernelDescriptor,
    values: Vec<ArgValue>,
) -> Result<(Vec<ArgValue>, Vec<Keep>)> {
    let uniforms = || {
        descriptor.params.iter().filter(|p| {
            matches!(
                p.role,
                ParamRole::Scalar { .. } | ParamRole::UniformPtr { .. }
            )
        })
    };
    let expected = uniforms().count();
    if values.len() != expected {
        return Err(Error::ScalarCount {
            kernel: descriptor.name,
            expected,
            found: values.len(),
        });
    }
    let mut keeps = Vec::new();
    for (param, value) in uniforms().zip(&values) {
        let type_ok = matches!(
            (param.ty, value),
            (ParamType::F32, ArgValue::F32(_))
                | (ParamType::U32, ArgValue::U32(_))
                | (ParamType::Ptr, ArgValue::Ptr(_))
                | (ParamType::Usize, ArgValue::Usize(_))
        );
        if !type_ok {
            return Err(Error::ScalarType {
                kernel: descriptor.name,
                name: param.name,
                expected: param.ty,
            });
        }
        if let (ParamRole::UniformPtr { .. }, ArgValue::Ptr(ptr)) = (param.role, value) {
            keeps.extend(uniform_keep(descriptor.name, param.name, *ptr)?);
        }
        if let ParamRole::Scalar { domain } = param.role {
            let number = match *value {
                ArgValue::F32(v) => v as f64,
                ArgValue::U32(v) => v as f64,
                ArgValue::Usize(v) => v as f64,
                ArgValue::Ptr(v) => v as f64,
            };
            if !domain.contains(number) {
                return Err(Error::InvalidScalar {
                    kernel: descriptor.name,
                    name: param.name,
                    value: number,
                    requirement: domain.describe(),
                });
            }
        }
    }
    Ok((values, keeps))
}

/// The checks of a launch's buffers: within each tensor every buffer has the parameter buffer's
/// length and the role the registered descriptor gives it, and no buffer that the entry writes
/// overlaps any other buffer of the launch (of the same tensor or of another one). Returns what
/// was checked.
pub fn check_tensors<E: OptimizerEntry, K: LaunchKinds>(
    tensors: &[E::Buffers<K>],
) -> Result<Signature> {
    let descriptor = E::DESCRIPTOR;
    let multi = tensors.len() != 1;
    let signature: Signature = tensors
        .iter()
        .enumerate()
        .map(|(t, tensor)| {
            let views = views::<E, K>(tensor);
            check_lengths(descriptor, &views).map_err(|e| e.in_tensor(t, tensors.len()))?;
            ranges(descriptor, &views).map_err(|e| e.in_tensor(t, tensors.len()))
        })
        .collect::<Result<_>>()?;
    check_overlaps(descriptor.name, &signature, multi)?;
    Ok(signature)
}

/// One tensor's buffers as ranges, each checked against its declaration in `descriptor`: its
/// role (the generated types give each buffer its declared role; only a hand-written, unsafe
/// entry could disagree, and it is refused) and its storage type, whose element size the range
/// is counted in. Every launch path that binds buffers builds its ranges here.
pub(crate) fn ranges(
    descriptor: &'static KernelDescriptor,
    views: &Views<'_>,
) -> Result<SmallVec<[BufferRange; MAX_BUFFERS]>> {
    let unregistered = || Error::UnregisteredKernel {
        kernel: descriptor.name,
    };
    views
        .iter()
        .map(|&(name, typed, b)| {
            let param = descriptor
                .params
                .iter()
                .find(|p| p.name == name)
                .ok_or_else(unregistered)?;
            if param.role != typed {
                return Err(unregistered());
            }
            check_storage(descriptor.name, name, param.storage, b.storage())?;
            Ok(BufferRange {
                name,
                address: b.address(),
                len: b.len(),
                writable: param.role.is_writable(),
                bytes: param.storage.bytes() as u8,
            })
        })
        .collect()
}

/// A buffer's storage type against the one its kernel declares for it: an f32 buffer bound to a
/// `#[param(bf16)]` would be read as twice as many 16-bit values, and the reverse as half as
/// many floats, so a mismatch is refused before anything is launched.
pub(crate) fn check_storage(
    kernel: &'static str,
    buffer: &'static str,
    declared: Storage,
    given: Storage,
) -> Result<()> {
    if declared == given {
        Ok(())
    } else {
        Err(Error::StorageMismatch {
            kernel,
            buffer,
            declared,
            given,
        })
    }
}

/// No buffer that is written may share a byte with any other buffer (read-only buffers may share
/// with each other). One sort and one sweep: O(n log n) in the number of buffers. The sort moves
/// only each range's ends and its place in `signature` (a launch's check is on the eager path's
/// every step), and the buffers are looked up again only to name a clash.
pub(crate) fn check_overlaps(
    kernel: &'static str,
    signature: &Signature,
    multi: bool,
) -> Result<()> {
    // (start, end, tensor, buffer): a single-buffer launch's fit on the stack.
    let mut ranges: SmallVec<[(u64, u64, usize, usize); MAX_BUFFERS]> = SmallVec::new();
    for (t, tensor) in signature.iter().enumerate() {
        for (i, b) in tensor.iter().enumerate() {
            if b.len > 0 {
                let end = b
                    .address
                    .saturating_add((b.len as u64).saturating_mul(b.bytes as u64));
                ranges.push((b.address, end, t, i));
            }
        }
    }
    ranges.sort_unstable();
    // The range reaching furthest so far, among all and among the written ones: its end and
    // its place.
    let mut furthest_any: Option<(u64, usize, usize)> = None;
    let mut furthest_written: Option<(u64, usize, usize)> = None;
    for &(start, end, t, i) in &ranges {
        let writable = signature[t][i].writable;
        let clash = if writable {
            furthest_any
        } else {
            furthest_written
        };
        if let Some((other_end, other_t, other_i)) = clash {
            if start < other_end {
                return Err(Error::Overlap {
                    kernel,
                    first: describe(multi, other_t, &signature[other_t][other_i]),
                    second: describe(multi, t, &signature[t][i]),
                });
            }
        }
        if furthest_any.is_none_or(|(e, _, _)| end > e) {
            furthest_any = Some((end, t, i));
        }
        if writable && furthest_written.is_none_or(|(e, _, _)| end > e) {
            furthest_written = Some((end, t, i));
        }
    }
    Ok(())
}

fn describe(multi: bool, tensor: usize, b: &BufferRange) -> String {
    let tensor = if multi {
        format!("tensor {tensor} ")
    } else {
        String::new()
    };
    format!(
        "{tensor}`{}` (0x{:x}, {} elements{})",
        b.name,
        b.address,
        b.len,
        if b.writable { ", written" } else { ", read" }
    )
}

/// Every buffer must have the parameter buffer's length. Returns that length.
pub(crate) fn check_lengths(
    descriptor: &'static KernelDescriptor,
    views: &[(&'static str, ParamRole, &dyn LaunchBuffer)],
) -> Result<usize> {
    let (reference, _, param) = views
        .iter()
        .find(|(_, role, _)| *role == ParamRole::ParamBuffer)
        .ok_or(Error::UnregisteredKernel {
            kernel: descriptor.name,
        })?;
    let expected = param.len();
    for (name, _, buffer) in views {
        let found = buffer.len();
        if found != expected {
            return Err(Error::LengthMismatch {
                kernel: descriptor.name,
                buffer: name,
                found,
                reference,
                expected,
            });
        }
    }
    Ok(expected)
}

/// The device tables of a multi-tensor launch besides the per-buffer pointer tables: the chunk
/// table, its length and the per-tensor clamp scales (all built by [`crate::TensorSet`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetTables {
    pub chunks: u64,
    pub n_chunks: u32,
    pub scales: u64,
}

/// The argument list of an entry, in its descriptor's order: `pointer(name)` for each buffer or
/// pointer table, `len` or the set's tables, the checked uniforms, the checked records header,
/// and the validated bound last. Any parameter this cannot fill is an error, not a guess.
pub fn assemble(
    descriptor: &'static KernelDescriptor,
    pointer: impl Fn(&str) -> Option<u64>,
    len: usize,
    set: Option<SetTables>,
    records: u64,
    checked: &CheckedArgs,
) -> Result<Args> {
    let mut scalars = checked.scalars.iter();
    let bad = || Error::UnregisteredKernel {
        kernel: descriptor.name,
    };
    let last = descriptor.params.len().checked_sub(1).ok_or_else(bad)?;
    let mut out = Args::new();
    for (i, p) in descriptor.params.iter().enumerate() {
        let value = match p.role {
            ParamRole::ParamBuffer
            | ParamRole::Input
            | ParamRole::State
            | ParamRole::ParamTable
            | ParamRole::InputTable
            | ParamRole::StateTable => ArgValue::Ptr(pointer(p.name).ok_or_else(bad)?),
            ParamRole::Len => ArgValue::Usize(len),
            ParamRole::ChunkTable => ArgValue::Ptr(set.ok_or_else(bad)?.chunks),
            ParamRole::ChunkCount => ArgValue::U32(set.ok_or_else(bad)?.n_chunks),
            ParamRole::ClampScales => ArgValue::Ptr(set.ok_or_else(bad)?.scales),
            ParamRole::Records if i + 1 == last => ArgValue::Ptr(records),
            ParamRole::Scalar { .. } | ParamRole::UniformPtr { .. } => {
                *scalars.next().ok_or_else(bad)?
            }
            ParamRole::ClampBound if i == last => match checked.last {
                LastArg::Bound(b) => ArgValue::F32(b.value()),
                LastArg::StepState(_) => return Err(bad()),
            },
            ParamRole::StepState if i == last => match checked.last {
                LastArg::StepState(address) => ArgValue::Ptr(address),
                LastArg::Bound(_) => return Err(bad()),
            },
            ParamRole::ClampBound
            | ParamRole::StepState
            | ParamRole::Records
            | ParamRole::Output
            | ParamRole::IndexTable
            // A fused entry's tables: only its own launch path fills them (`fused.rs`).
            | ParamRole::UniformTable
            | ParamRole::RuleTable
            | ParamRole::StepStateTable => return Err(bad()),
        };
        out.push(value);
    }
    if scalars.next().is_some() {
        return Err(bad());
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
