//! A single-buffer launch checked once and enqueued again and again ([`Launch::prepare`]): the
//! eager training loop's fast path. Every check of [`Launch::buffers`] runs when it is prepared,
//! and the arguments are assembled then; an enqueue asks the stream whether it is being
//! captured (a graph must keep what the launch uses) and hands the prepared arguments to the
//! driver, with no other work and no allocation.
//!
//! What makes skipping the checks sound is what the prepared launch holds: the buffers (their
//! `&mut` borrows, so none can be freed, resized or bound to another launch meanwhile), the
//! records and, for a stepped launch, the step-state records, for as long as it lives. What it
//! cannot hold still is a value: a plain launch of a kernel whose scalars change every step
//! (`#[step]`, `#[derived]`) would pass the step it was prepared at forever, so it is refused
//! ([`Error::FrozenScalar`]); its stepped launch reads them from the record every
//! [`StepStates::advance`] moves on, and a learning rate set between enqueues
//! ([`StepStates::set_lr`]) is checked against every kernel that reads the record.
use adamant_device::abi::{ArgValue, OptimizerEntry};
use cust::stream::Stream;

use crate::buffers::Owned;
use crate::device::Adamant;
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::launch::{single_keeps, LaunchInfo, SingleArgs};
#[cfg(doc)]
use crate::launch_builder::Launch;
use crate::launch_check::Uniforms;
use crate::memory::Keep;
use crate::records::Records;
#[cfg(doc)]
use crate::step::StepStates;

/// A launch of `E`'s single-buffer entry, checked and assembled once ([`Launch::prepare`]),
/// enqueued by [`Prepared::enqueue`] as often as needed.
#[must_use = "a prepared launch runs only when enqueued"]
pub struct Prepared<'a, E: OptimizerEntry> {
    rt: &'a Adamant,
    stream: &'a Stream,
    single: SingleArgs,
    /// What a graph keeps when an enqueue is captured (built once, cloned only then).
    keeps: Vec<Keep>,
    // Held, not read: what the arguments point at stays alive and unshared while they may be
    // enqueued.
    _uniforms: Uniforms<'a, E>,
    _buffers: E::Buffers<Owned<'a>>,
    _records: &'a Records,
}

impl<'a, E: OptimizerEntry> Prepared<'a, E> {
    /// The checks of [`Launch::buffers`], in its order, then the refusal of a plain launch
    /// whose scalars change every step, and the entry's function looked up: a prepared launch
    /// that exists is one the driver can be handed.
    pub(crate) fn new(
        rt: &'a Adamant,
        stream: &'a Stream,
        uniforms: Uniforms<'a, E>,
        buffers: E::Buffers<Owned<'a>>,
        records: &'a Records,
    ) -> Result<Self> {
        let (descriptor, checked) = uniforms.check(false)?;
        uniforms.refuse_prepared(descriptor.name)?;
        let single = rt.single_args::<E, Owned<'a>>(descriptor, &buffers, &checked, records)?;
        rt.function(descriptor)?;
        let keeps = single_keeps::<E, Owned<'a>>(&buffers, records, &uniforms, &checked);
        Ok(Prepared {
            rt,
            stream,
            single,
            keeps,
            _uniforms: uniforms,
            _buffers: buffers,
            _records: records,
        })
    }

    /// Enqueues the launch on the stream it was prepared for, with the arguments checked when
    /// it was prepared. Inside a capture by [`Adamant::capture`] the graph keeps what the
    /// launch uses, as for every launch.
    ///
    /// # Errors
    ///
    /// [`Error::Capture`] for a stream captured by other code (no graph of ours would keep the
    /// launch's memory); [`Error::Cuda`] if the driver refuses the launch. Each names the entry.
    pub fn enqueue(&mut self) -> Result<LaunchInfo> {
        let kernel = self.single.info.kernel;
        let capture = crate::graph::capture_of(self.stream).map_err(|e| e.in_kernel(kernel))?;
        self.rt
            .retain_in(capture, || self.keeps.clone())
            .map_err(|e| e.in_kernel(kernel))?;
        // SAFETY: the arguments were assembled from the registered descriptor over buffers
        // checked for length and overlap; the buffers, records and step-state records they
        // point at are borrowed by `self`, so they live, unshared, until it is dropped, and
        // their drops wait for the device (a capture keeps them, retained above).
        unsafe { self.rt.enqueue_single(self.stream, &mut self.single) }
            .map_err(|e| e.in_kernel(kernel))?;
        Ok(self.single.info)
    }

    /// What each enqueue launches: the entry, its elements, grid and bound.
    pub fn info(&self) -> LaunchInfo {
        self.single.info
    }

    /// The argument values each enqueue passes, in the entry's parameter order (the buffers'
    /// addresses, the length, the uniforms, the records header, the bound or the step-state
    /// record's address): for logs, and for a benchmark's driver floor of the same launch.
    pub fn arguments(&self) -> &[ArgValue] {
        &self.single.values
    }
}
