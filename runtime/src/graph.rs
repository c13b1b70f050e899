//! CUDA graphs over cust's raw driver bindings (cust 0.3.2 exposes no graph API of its own):
//! record one optimizer step (and the NaN check) once, replay it with one launch per step.
//!
//! A graph keeps the device addresses it was recorded with. [`StepGraph`] therefore borrows,
//! for its whole life, everything the recording closures borrowed: the buffers cannot be freed
//! or reallocated while the graph can still be replayed.
use std::marker::PhantomData;
use std::ptr;

use cust::event::{Event, EventFlags};
use cust::stream::{Stream, StreamFlags, StreamWaitEventFlags};
use cust::sys::{self, CUgraph, CUgraphExec, CUresult, CUstreamCaptureMode, CUstreamCaptureStatus};

use crate::device::Adamant;
use crate::error::{CudaContext, Error, Result};

/// One branch of a recording for [`Adamant::capture`]: a closure that makes its launches on the
/// stream it is given. Branches of one capture have no order between them, so the GPU may run
/// them concurrently; the launches inside one branch keep their order. `'a` is the borrow of
/// everything the closure uses, which the resulting [`StepGraph`] keeps.
pub type Branch<'a> = Box<dyn FnOnce(&Stream) -> Result<()> + 'a>;

/// An instantiated CUDA graph, made by [`Adamant::capture`]: the recorded launches, replayed
/// together by one [`StepGraph::launch`], with the device addresses and argument values they
/// were recorded with. It borrows (`'a`) every buffer the recording used, so none can be freed
/// or reallocated while the graph can still run; drop it to use them again.
pub struct StepGraph<'a> {
    graph: CUgraph,
    exec: CUgraphExec,
    nodes: usize,
    // The buffers the recorded launches use must outlive every replay.
    _borrows: PhantomData<&'a mut ()>,
}

fn check(status: CUresult, operation: &str) -> Result<()> {
    if status == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::Capture {
            operation: format!("{operation} failed ({status:?})"),
        })
    }
}

/// Whether `stream` is being captured into a graph right now.
pub(crate) fn is_capturing(stream: &Stream) -> Result<bool> {
    let mut status = CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: a valid stream handle and an out-pointer to a local.
    check(
        unsafe { sys::cuStreamIsCapturing(stream.as_inner(), &mut status) },
        "cuStreamIsCapturing",
    )?;
    Ok(status != CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
}

impl Adamant {
    /// Records `branches` into one graph without running them: each branch gets a stream of its
    /// own, forked from and joined back into the runtime's stream, so independent launches
    /// (different kernels' multi-tensor steps, say) can overlap on replay.
    ///
    /// Launch on the stream a branch is given: every launcher and the NaN checker take it.
    /// Nothing in a branch may synchronise or allocate: build every [`TensorSet`](crate::TensorSet)
    /// before capturing. Every launch's validation runs as it is recorded. A replay uses the
    /// recorded arguments: for values that change from step to step (the bias corrections, the
    /// lr, the bound), record the stepped launches ([`Adamant::launch_stepped`]) after a
    /// [`StepStates::advance`](crate::StepStates::advance), which read them from device memory
    /// that every replay advances, or use a [`TrainingSession`](crate::TrainingSession).
    ///
    /// ```
    /// use adamant_kernels::optimizers::iqn_adam_kernel;
    /// use adamant_kernels::soft_update::soft_update_kernel;
    /// use adamant_runtime::cust::memory::{CopyDestination, DeviceBuffer};
    /// use adamant_runtime::cust::stream::Stream;
    /// use adamant_runtime::{adam_scalars, AdamHyper, Branch, ClampPolicy, Records};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let rt = match adamant_runtime::Adamant::new() {
    /// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
    /// #     other => other?,
    /// # };
    /// let n = 4096;
    /// let filled = |x: f32| DeviceBuffer::from_slice(&vec![x; n]);
    /// let (mut p, mut g, mut m, mut v) = (filled(0.01)?, filled(1e-3)?, filled(0.0)?, filled(0.0)?);
    /// let (mut target, mut online) = (filled(0.0)?, filled(1.0)?);
    /// // One records per branch: the two launches may run at the same time.
    /// let adam_records = Records::single::<iqn_adam_kernel::Entry>()?;
    /// let tau_records = Records::single::<soft_update_kernel::Entry>()?;
    /// let hyper = AdamHyper::pytorch_defaults(1)?;
    /// let adam = adam_scalars!(iqn_adam_kernel, hyper, weight_decay: 0.0)?;
    /// let policy = ClampPolicy::from_isv(1.0);
    ///
    /// // Two independent branches: an Adam step and a soft update of another network.
    /// let branches: Vec<Branch> = vec![
    ///     Box::new(|s: &Stream| {
    ///         let b = iqn_adam_kernel::Buffers { p: &mut *p, g: &mut *g, m: &mut *m, v: &mut *v };
    ///         rt.launch_optimizer::<iqn_adam_kernel::Entry>(s, &b, &adam, policy, &adam_records)
    ///             .map(|_| ())
    ///     }),
    ///     Box::new(|s: &Stream| {
    ///         let b = soft_update_kernel::Buffers { target: &mut *target, online: &mut *online };
    ///         let tau = soft_update_kernel::Scalars { tau: 0.5 };
    ///         rt.launch_optimizer::<soft_update_kernel::Entry>(s, &b, &tau, policy, &tau_records)
    ///             .map(|_| ())
    ///     }),
    /// ];
    /// let graph = rt.capture(branches)?; // recorded, nothing has run yet
    /// graph.launch(rt.stream())?; // both launches, one call
    /// graph.launch(rt.stream())?; // and again
    /// rt.synchronize()?;
    /// drop(graph); // releases the buffers
    /// assert_eq!((adam_records.read().sequence, tau_records.read().sequence), (2, 2));
    ///
    /// let mut host = vec![0.0f32; n];
    /// target.copy_to(&mut host[..])?;
    /// assert_eq!(host[0], 0.75); // two soft updates with τ = 0.5: 0 → 0.5 → 0.75
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// The first error a branch returns (a launch's validation error, say), which aborts the
    /// capture; [`Error::Capture`] if the driver refuses to capture or instantiate the graph, or
    /// for work that cannot be captured; [`Error::Cuda`] for the streams and events of the fork
    /// and join.
    pub fn capture<'a>(&self, branches: Vec<Branch<'a>>) -> Result<StepGraph<'a>> {
        let nothing = || -> Branch<'a> { Box::new(|_: &Stream| Ok(())) };
        self.capture_step(nothing(), branches, nothing())
    }

    /// As [`Adamant::capture`], with a `before` and an `after` on the runtime's stream: `before`
    /// runs first (a [`StepStates::advance`](crate::StepStates::advance), say), then the
    /// branches, which may overlap one another, then `after` once all of them are done (the NaN
    /// check of what they wrote). A [`TrainingSession`](crate::TrainingSession) records its step
    /// this way.
    ///
    /// # Errors
    ///
    /// As [`Adamant::capture`].
    pub fn capture_step<'a>(
        &self,
        before: Branch<'a>,
        branches: Vec<Branch<'a>>,
        after: Branch<'a>,
    ) -> Result<StepGraph<'a>> {
        let main = self.stream();
        let streams = (0..branches.len())
            .map(|_| {
                Stream::new(StreamFlags::NON_BLOCKING, None).during("creating a capture stream")
            })
            .collect::<Result<Vec<_>>>()?;
        // SAFETY: a valid stream; the capture is ended below on every path.
        check(
            unsafe {
                sys::cuStreamBeginCapture_v2(
                    main.as_inner(),
                    CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                )
            },
            "cuStreamBeginCapture",
        )?;
        let recorded = before(main)
            .and_then(|()| record_branches(main, &streams, branches))
            .and_then(|()| after(main));
        let mut graph: CUgraph = ptr::null_mut();
        // SAFETY: ends the capture begun above; `graph` receives the result (or stays null).
        let ended = check(
            unsafe { sys::cuStreamEndCapture(main.as_inner(), &mut graph) },
            "cuStreamEndCapture",
        );
        if let Err(e) = recorded.and(ended) {
            if !graph.is_null() {
                // SAFETY: a graph we own and never instantiated.
                unsafe { sys::cuGraphDestroy(graph) };
            }
            return Err(e);
        }
        let mut exec: CUgraphExec = ptr::null_mut();
        // SAFETY: `graph` is a valid captured graph; `exec` receives the executable.
        if let Err(e) = check(
            unsafe { sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0) },
            "cuGraphInstantiate",
        ) {
            // SAFETY: as above.
            unsafe { sys::cuGraphDestroy(graph) };
            return Err(e);
        }
        let mut nodes = 0usize;
        // SAFETY: querying the node count only (null node array).
        check(
            unsafe { sys::cuGraphGetNodes(graph, ptr::null_mut(), &mut nodes) },
            "cuGraphGetNodes",
        )?;
        Ok(StepGraph {
            graph,
            exec,
            nodes,
            _borrows: PhantomData,
        })
    }
}

/// Fork every branch stream from `main`, run each branch on its stream, join them back.
fn record_branches(main: &Stream, streams: &[Stream], branches: Vec<Branch<'_>>) -> Result<()> {
    for stream in streams {
        let fork = Event::new(EventFlags::DISABLE_TIMING).during("creating a fork event")?;
        fork.record(main).during("recording a fork event")?;
        stream
            .wait_event(fork, StreamWaitEventFlags::DEFAULT)
            .during("forking a capture stream")?;
    }
    let mut result = Ok(());
    for (branch, stream) in branches.into_iter().zip(streams) {
        if result.is_ok() {
            result = branch(stream);
        }
        // Join even after an error, so the capture can still be ended cleanly.
        let join = Event::new(EventFlags::DISABLE_TIMING).during("creating a join event")?;
        join.record(stream).during("recording a join event")?;
        main.wait_event(join, StreamWaitEventFlags::DEFAULT)
            .during("joining a capture stream")?;
    }
    result
}

impl StepGraph<'_> {
    /// The same graph without the borrow, for a type that owns the buffers the graph uses and
    /// drops the graph first (the [`TrainingSession`](crate::TrainingSession)).
    ///
    /// # Safety
    ///
    /// Every buffer the recording used must stay allocated, at the same address, until the
    /// returned graph is dropped.
    pub(crate) unsafe fn detach(self) -> StepGraph<'static> {
        let me = std::mem::ManuallyDrop::new(self);
        StepGraph {
            graph: me.graph,
            exec: me.exec,
            nodes: me.nodes,
            _borrows: PhantomData,
        }
    }

    /// Enqueues one replay of the whole graph on `stream`, without waiting for it: the recorded
    /// launches run with the buffers and arguments they were recorded with, one graph launch
    /// instead of one launch each. Replays on one stream run one after another. See
    /// [`Adamant::capture`] for an example.
    ///
    /// # Errors
    ///
    /// [`Error::Capture`] if the driver refuses the launch.
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        // SAFETY: a valid executable graph; its buffers are kept alive by the borrows in 'a.
        check(
            unsafe { sys::cuGraphLaunch(self.exec, stream.as_inner()) },
            "cuGraphLaunch",
        )
    }

    /// How many nodes the graph holds: kernels, memsets, and the empty nodes the fork and join
    /// of the branches may leave. At least one per recorded launch; for tests and logs.
    pub fn nodes(&self) -> usize {
        self.nodes
    }
}

impl Drop for StepGraph<'_> {
    fn drop(&mut self) {
        // SAFETY: we own both handles; destroying them is valid even with replays in flight
        // (the driver defers the release until they complete).
        unsafe {
            sys::cuGraphExecDestroy(self.exec);
            sys::cuGraphDestroy(self.graph);
        }
    }
}
