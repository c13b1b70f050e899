//! The host side of the step's own protection (`adamant_kernels::guard`): a [`GradientGuard`]
//! holds the device tables of one set of gradients (the tensors that step with one guarded
//! record) and enqueues the pass that judges them, before the record's advance. Recorded into
//! a graph, every replay judges its own step's gradients: a non-finite gradient skips the step
//! (nothing written, `t` kept, the skip counted in the record), and with clipping the stepped
//! entries scale their `#[grad]` inputs by the global-norm coefficient. No host synchronisation.
use std::sync::Arc;

use adamant_kernels::abi::ArgValue;
use adamant_kernels::guard::{grad_guard_kernel, GUARD_MAX_BLOCKS, GUARD_THREADS};
use cust::stream::Stream;

use crate::buffers::{keep_of, ReadBuffer};
use crate::device::Adamant;
#[cfg(doc)]
use crate::error::Error;
use crate::error::{CudaContext, Result};
use crate::launch::arg_pointers;
use crate::memory::{DeviceMemory, Keep};
use crate::multi::push_chunks;
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
///     .guarded(GuardSpec { skip_non_finite: true, max_norm: Some(1.0) })?;
/// let states = StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 })?;
/// let guard = GradientGuard::new(&[&g])?;
/// let mut step = |g: &DeviceArray| -> adamant_runtime::Result<()> {
///     guard.enqueue(&rt, rt.stream(), &states, 0)?; // judge this step's gradients
///     states.advance(&rt, rt.stream())?;              // t += 1 unless skipped
///     let b = iqn_adam_kernel::Buffers { p: &mut p, g: g.input(), m: &mut m, v: &mut v };
///     let k = iqn_adam_kernel::StepScalars {};
///     rt.launch_stepped::<iqn_adam_kernel::Entry>(rt.stream(), &b, &k, &states, 0, &records)?;
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
    /// One gradient address per tensor.
    grads: Arc<DeviceMemory<u64>>,
    /// Per tensor, the index of its first element counting the tensors one after another.
    offsets: Arc<DeviceMemory<u64>>,
    /// The chunk table (`CHUNK_WORDS` words per chunk), at least one word.
    chunks: Arc<DeviceMemory<u32>>,
    n_chunks: u32,
    /// Two words per block: its f64 partial sum (bits) and its first non-finite index.
    partials: Arc<DeviceMemory<u64>>,
    /// The blocks' arrival counter, reset by the last one.
    arrivals: Arc<DeviceMemory<u32>>,
    /// The gradients' allocations, which a graph recording the guard keeps.
    gradients: Vec<Keep>,
}

impl GradientGuard {
    /// The guard of `gradients` (every gradient buffer of the tensors that step with one
    /// record; empty ones count as no elements). Allocates and uploads its tables: setup.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`] for a gradient past `u32::MAX` elements; [`Error::OutOfMemory`] or
    /// [`Error::Cuda`] for the tables.
    pub fn new(gradients: &[&dyn ReadBuffer]) -> Result<GradientGuard> {
        let kernel = grad_guard_kernel::DESCRIPTOR.name;
        let mut chunks = Vec::new();
        for (t, g) in gradients.iter().enumerate() {
            push_chunks(&mut chunks, kernel, t, g.len())?;
        }
        let n_chunks = (chunks.len() / adamant_kernels::multi::CHUNK_WORDS) as u32;
        let addresses: Vec<u64> = gradients.iter().map(|g| g.device_ptr()).collect();
        let offsets: Vec<u64> = gradients
            .iter()
            .scan(0u64, |next, g| {
                let first = *next;
                *next += g.len() as u64;
                Some(first)
            })
            .collect();
        // A table of no chunk still needs an allocation to point at (never read).
        if chunks.is_empty() {
            chunks.push(0);
        }
        let grads = DeviceMemory::from_host(
            if addresses.is_empty() {
                &[0]
            } else {
                &addresses
            },
            "a gradient guard's gradient table",
        )?;
        Ok(GradientGuard {
            grads,
            offsets: DeviceMemory::from_host(
                if offsets.is_empty() { &[0] } else { &offsets },
                "a gradient guard's tensor offsets",
            )?,
            chunks: DeviceMemory::from_host(&chunks, "a gradient guard's chunk table")?,
            n_chunks,
            partials: DeviceMemory::from_host(
                &vec![0u64; 2 * GUARD_MAX_BLOCKS as usize],
                "a gradient guard's partial sums",
            )?,
            arrivals: DeviceMemory::from_host(&[0u32], "a gradient guard's arrival counter")?,
            gradients: gradients.iter().map(|g| keep_of(*g)).collect(),
        })
    }

    /// Enqueues the guard pass over the gradients for record `index` of `states`, on `stream`:
    /// the record's step is judged from the gradients as they are when the pass runs. Enqueue
    /// it after the gradients are written and before the record's advance (which refuses a
    /// guarded record without one).
    ///
    /// # Errors
    ///
    /// Before anything is enqueued: [`Error::StepIndex`], [`Error::NotGuarded`] for a record
    /// made without a guard, [`Error::MissingKernel`], [`Error::Capture`] for a capture adamant
    /// did not begin. [`Error::Cuda`] if the driver refuses the launch.
    pub fn enqueue(
        &self,
        rt: &Adamant,
        stream: &Stream,
        states: &StepStates,
        index: usize,
    ) -> Result<()> {
        let kernel = grad_guard_kernel::DESCRIPTOR.name;
        let function = rt.function(&grad_guard_kernel::DESCRIPTOR)?;
        let record = states.guard_enqueued(index)?;
        rt.retain(stream, || {
            let mut keeps: Vec<Keep> = vec![
                self.grads.clone(),
                self.offsets.clone(),
                self.chunks.clone(),
                self.partials.clone(),
                self.arrivals.clone(),
            ];
            keeps.extend(self.gradients.iter().cloned());
            keeps.extend(states.keeps());
            keeps
        })
        .map_err(|e| e.in_kernel(kernel))?;
        let blocks = self.n_chunks.clamp(1, GUARD_MAX_BLOCKS);
        let mut values = guard_args(
            self.grads.address(),
            self.offsets.address(),
            self.chunks.address(),
            self.n_chunks,
            self.partials.address(),
            self.arrivals.address(),
            record,
        );
        let params = arg_pointers(&mut values);
        let shared = 2 * GUARD_THREADS * size_of::<u64>() as u32;
        // SAFETY: the entry's seven parameters (checked against its descriptor): our gradient
        // table (each address a live gradient buffer we keep, of the lengths the chunks cover)
        // and its offsets, our chunk table of `n_chunks` chunks, our partials (two words for
        // each of GUARD_MAX_BLOCKS ≥ `blocks`), our counter, and a record of `states` (checked
        // index); two u64s of shared memory per thread.
        unsafe { stream.launch(function, blocks, GUARD_THREADS, shared, &params) }
            .during_with(|| format!("launching {kernel} ({} chunks)", self.n_chunks))
    }
}

/// `grad_guard_kernel`'s arguments in PTX order, checked against its descriptor.
fn guard_args(
    grads: u64,
    offsets: u64,
    chunks: u64,
    n_chunks: u32,
    partials: u64,
    arrivals: u64,
    record: u64,
) -> [ArgValue; 7] {
    let values = [
        ArgValue::Ptr(grads),
        ArgValue::Ptr(offsets),
        ArgValue::Ptr(chunks),
        ArgValue::U32(n_chunks),
        ArgValue::Ptr(partials),
        ArgValue::Ptr(arrivals),
        ArgValue::Ptr(record),
    ];
    crate::launch::assert_args_match(&grad_guard_kernel::DESCRIPTOR, &values);
    values
}

#[cfg(test)]
mod tests {
    /// A change to the guard entry's signature not followed here fails on the CPU.
    #[test]
    fn guard_args_match_the_entry_signature() {
        assert_eq!(super::guard_args(1, 2, 3, 4, 5, 6, 7).len(), 7);
    }
}
