//! CUDA graphs over cust's raw driver bindings (cust 0.3.2 exposes no graph API of its own):
//! record one optimizer step (and the NaN check) once, replay it with one launch per step.
//!
//! A graph keeps the device addresses it was recorded with, so it must keep the memory behind
//! them: while a capture is in progress every launch hands the allocations it uses to it
//! ([`Adamant::retain`]), and the [`StepGraph`] owns them until it is dropped. The recording
//! closures' borrows end with the capture; a buffer dropped afterwards stays allocated for the
//! graph, whatever held it (a `RefCell`, a set rebuilt since, a view copied out of it: there are
//! no such views). A launch on a stream captured by code other than [`Adamant::capture`] is
//! refused, since no graph of ours would keep its memory.
use std::marker::PhantomData;

use cust::event::{Event, EventFlags};
use cust::stream::{Stream, StreamFlags, StreamWaitEventFlags};
use cust::sys::{CUgraph, CUgraphExec};

use crate::device::Adamant;
use crate::driver;
use crate::error::{CudaContext, Error, Result};
use crate::memory::Keep;

/// One branch of a recording for [`Adamant::capture`]: a closure that makes its launches on the
/// stream it is given. Branches of one capture have no order between them, so the GPU may run
/// them concurrently; the launches inside one branch keep their order. `'a` is the borrow of
/// everything the closure uses, for the capture only: the graph keeps the memory itself.
pub type Branch<'a> = Box<dyn FnOnce(&Stream) -> Result<()> + 'a>;

/// An instantiated CUDA graph, made by [`Adamant::capture`]: the recorded launches, replayed
/// together by one [`StepGraph::launch`], with the device addresses and argument values they
/// were recorded with. It owns a share of every allocation the recorded launches use (buffers,
/// records, step states, tables, device scalars, the NaN check's bindings), so none is freed
/// while the graph can run, and it borrows the runtime (`'rt`), whose modules hold its kernels.
/// The buffers stay the caller's to use between replays (new gradients, a checkpoint's weights).
pub struct StepGraph<'rt> {
    graph: CUgraph,
    exec: CUgraphExec,
    nodes: usize,
    /// Dropped after the graph is destroyed (see `Drop`).
    kept: Vec<Keep>,
    _runtime: PhantomData<&'rt Adamant>,
}

/// Whether `stream` is being captured into a graph right now.
pub(crate) fn is_capturing(stream: &Stream) -> Result<bool> {
    Ok(capture_of(stream)?.is_some())
}

/// What a graph must not record: a host write between steps (recorded, it would write the same
/// value at every replay).
pub(crate) const HOST_WRITE: &str =
    "a host write between steps; recorded into a graph it would write the same value at every \
     replay";

/// What a graph must not record: a checkpoint's save, snapshot or restore (recorded, its copies
/// would run again at every replay).
pub(crate) const HOST_COPY: &str =
    "part of a checkpoint's save or restore; recorded into a graph its copies would run again at \
     every replay";

/// [`Error::Capture`] if `stream` is being captured: `what` (the call) is `why` ([`HOST_WRITE`],
/// [`HOST_COPY`]), work of the host between steps.
pub(crate) fn refuse_capture(stream: &Stream, what: &str, why: &str) -> Result<()> {
    if is_capturing(stream)? {
        return Err(Error::Capture {
            operation: format!("{what} is {why} (call it between replays)"),
        });
    }
    Ok(())
}

/// The id of the capture `stream` is part of, if any (an invalidated capture is an error). One
/// driver call: a launch path asks once and hands the answer to every check that needs it.
pub(crate) fn capture_of(stream: &Stream) -> Result<Option<u64>> {
    driver::capture_id(stream)
}

impl Adamant {
    /// Hands the allocations a launch on `stream` uses (`keeps`, built only if needed) to the
    /// capture `stream` is part of, so the graph it becomes keeps them alive. Every launch path
    /// calls it after its checks and before it enqueues. Eagerly it does nothing: a buffer is
    /// not freed under an eager launch (its drop waits for the device).
    ///
    /// # Errors
    ///
    /// [`Error::Capture`] for a stream captured by code other than [`Adamant::capture`]: no graph
    /// of ours would keep the launch's memory, so the launch is refused.
    pub(crate) fn retain(&self, stream: &Stream, keeps: impl FnOnce() -> Vec<Keep>) -> Result<()> {
        self.retain_in(capture_of(stream)?, keeps)
    }

    /// [`Adamant::retain`] for a launch that already asked its stream for its capture
    /// ([`capture_of`]), so an eager launch makes that driver call once.
    pub(crate) fn retain_in(
        &self,
        capture: Option<u64>,
        keeps: impl FnOnce() -> Vec<Keep>,
    ) -> Result<()> {
        let Some(id) = capture else {
            return Ok(());
        };
        let mut captures = self.captures.lock().unwrap_or_else(|e| e.into_inner());
        match captures.iter_mut().find(|(c, _)| *c == id) {
            Some((_, kept)) => {
                kept.extend(keeps());
                Ok(())
            }
            None => Err(Error::Capture {
                operation: "a launch on a stream that is being captured by code other than \
                            Adamant::capture: no graph of adamant's would keep its memory \
                            alive, so nothing was recorded"
                    .into(),
            }),
        }
    }

    /// Records `branches` into one graph without running them: each branch gets a stream of its
    /// own, forked from and joined back into the runtime's stream, so independent launches
    /// (different kernels' multi-tensor steps, say) can overlap on replay.
    ///
    /// Launch on the stream a branch is given: every launcher and the NaN checker take it.
    /// Nothing in a branch may synchronise or allocate: build every [`TensorSet`](crate::TensorSet)
    /// before capturing. Every launch's validation runs as it is recorded. A replay uses the
    /// recorded arguments, so a kernel whose scalars change from step to step (`#[step]` or
    /// `#[derived]`: the bias corrections, the lr) is recorded through its stepped launch
    /// ([`Launch::stepped`](crate::Launch::stepped)) after a [`StepStates::advance`](crate::StepStates::advance):
    /// it reads every scalar from device memory that every replay advances. Its plain launch
    /// is refused in a capture ([`Error::Capture`]); a kernel of `#[hyper]` scalars alone (the
    /// soft update) may be recorded plain.
    ///
    /// ```
    /// use adamant_kernels::optimizers::iqn_adam_kernel;
    /// use adamant_kernels::soft_update::soft_update_kernel;
    /// use adamant_runtime::cust::stream::Stream;
    /// use adamant_runtime::{
    ///     AdamHyper, Branch, ClampPolicy, DeviceArray, ParamBuffer, QAbsRef, Records, StepBound,
    ///     StepSpec, StepStates,
    /// };
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let rt = match adamant_runtime::Adamant::new() {
    /// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
    /// #     other => other?,
    /// # };
    /// let n = 4096;
    /// let mut p = ParamBuffer::filled(n, 0.01)?;
    /// let (mut g, mut m, mut v) = (DeviceArray::filled(n, 1e-3)?, DeviceArray::zeroed(n)?, DeviceArray::zeroed(n)?);
    /// let (mut target, online) = (ParamBuffer::zeroed(n)?, ParamBuffer::filled(n, 1.0)?);
    /// // One records per branch: the two launches may run at the same time.
    /// let adam_records = Records::single::<iqn_adam_kernel::Entry>()?;
    /// let tau_records = Records::single::<soft_update_kernel::Entry>()?;
    /// let policy = ClampPolicy::from_isv(1.0);
    /// // Adam's step number, bias corrections and hyperparameters live in a record that every
    /// // replay advances.
    /// let spec = StepSpec::adam(&AdamHyper::pytorch_defaults(1)?, StepBound::Policy(policy))?
    ///     .with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper { eps: 1e-8, weight_decay: 0.0 })?;
    /// let states = StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 })?;
    ///
    /// // Two independent branches: an Adam step and a soft update of another network.
    /// let branches: Vec<Branch> = vec![
    ///     Box::new(|s: &Stream| {
    ///         states.advance(&rt, s)?;
    ///         let b = iqn_adam_kernel::Buffers { p: &mut p, g: g.input(), m: &mut m, v: &mut v };
    ///         let k = iqn_adam_kernel::StepScalars {};
    ///         rt.launch::<iqn_adam_kernel::Entry>(s)
    ///             .stepped(&k, &states, 0)
    ///             .buffers(&b, &adam_records)
    ///             .map(|_| ())
    ///     }),
    ///     Box::new(|s: &Stream| {
    ///         let b = soft_update_kernel::Buffers { target: &mut target, online: online.input() };
    ///         let tau = soft_update_kernel::Scalars { tau: 0.5 };
    ///         rt.launch::<soft_update_kernel::Entry>(s)
    ///             .plain(&tau, policy)
    ///             .buffers(&b, &tau_records)
    ///             .map(|_| ())
    ///     }),
    /// ];
    /// let graph = rt.capture(branches)?; // recorded, nothing has run yet
    /// graph.launch(rt.stream())?; // both launches, one call
    /// // The buffers stay the caller's between replays: a new gradient for the next one.
    /// g.upload(&vec![2e-3; n])?;
    /// graph.launch(rt.stream())?; // and again
    /// rt.synchronize()?;
    /// assert_eq!((adam_records.read().sequence, tau_records.read().sequence), (2, 2));
    /// assert_eq!(states.read()?[0].step, 2); // each replay was the next step
    /// assert_eq!(target.download()?[0], 0.75); // two soft updates with τ = 0.5: 0 → 0.5 → 0.75
    /// // The graph keeps a share of every buffer it uses: dropping one here frees nothing the
    /// // graph still writes, and a replay stays correct.
    /// drop((p, m, v));
    /// graph.launch(rt.stream())?;
    /// rt.synchronize()?;
    /// assert_eq!(target.download()?[0], 0.875);
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
    pub fn capture<'a>(&self, branches: Vec<Branch<'a>>) -> Result<StepGraph<'_>> {
        let nothing = || -> Branch<'a> { Box::new(|_: &Stream| Ok(())) };
        self.capture_step(nothing(), branches, nothing())
    }

    /// As [`Adamant::capture`], with a `before` and an `after` on the runtime's stream: `before`
    /// runs first (a [`StepStates::advance`](crate::StepStates::advance), say), then the
    /// branches, which may overlap one another, then `after` once all of them are done (the NaN
    /// check of what they wrote). An application's training step (adamant-rl's session, say)
    /// records its step this way.
    ///
    /// # Errors
    ///
    /// As [`Adamant::capture`].
    pub fn capture_step<'a>(
        &self,
        before: Branch<'a>,
        branches: Vec<Branch<'a>>,
        after: Branch<'a>,
    ) -> Result<StepGraph<'_>> {
        let main = self.stream();
        let streams = (0..branches.len())
            .map(|_| {
                Stream::new(StreamFlags::NON_BLOCKING, None).during("creating a capture stream")
            })
            .collect::<Result<Vec<_>>>()?;
        // The capture is ended below on every path.
        driver::begin_capture(main)?;
        // Register the capture before anything is recorded, so every launch finds it.
        let registered = capture_of(main).and_then(|id| {
            let id = id.ok_or_else(|| Error::Capture {
                operation: "cuStreamBeginCapture left the stream uncaptured".into(),
            })?;
            self.captures
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((id, Vec::new()));
            Ok(id)
        });
        let (id, recorded) = match registered {
            Ok(id) => {
                let recorded = before(main)
                    .and_then(|()| record_branches(main, &streams, branches))
                    .and_then(|()| after(main));
                (Some(id), recorded)
            }
            Err(e) => (None, Err(e)),
        };
        let (graph, ended) = driver::end_capture(main);
        // What the launches used, taken back from the registry on every path.
        let kept = id
            .and_then(|id| {
                let mut captures = self.captures.lock().unwrap_or_else(|e| e.into_inner());
                let at = captures.iter().position(|(c, _)| *c == id)?;
                Some(captures.swap_remove(at).1)
            })
            .unwrap_or_default();
        if let Err(e) = recorded.and(ended) {
            if !graph.is_null() {
                // SAFETY: a graph we own and never instantiated.
                unsafe { driver::destroy_graph(graph) };
            }
            return Err(e);
        }
        // SAFETY: `graph` is the valid graph just captured, ours.
        let exec = match unsafe { driver::instantiate(graph) } {
            Ok(exec) => exec,
            Err(e) => {
                // SAFETY: as above.
                unsafe { driver::destroy_graph(graph) };
                return Err(e);
            }
        };
        // From here the graph's Drop releases both handles on every path.
        let mut step_graph = StepGraph {
            graph,
            exec,
            nodes: 0,
            kept,
            _runtime: PhantomData,
        };
        // SAFETY: the valid graph the step graph owns.
        step_graph.nodes = unsafe { driver::node_count(graph) }?;
        Ok(step_graph)
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
    /// Enqueues one replay of the whole graph on `stream`, without waiting for it: the recorded
    /// launches run with the buffers and arguments they were recorded with, one graph launch
    /// instead of one launch each. Replays on one stream run one after another. See
    /// [`Adamant::capture`] for an example.
    ///
    /// # Errors
    ///
    /// [`Error::Capture`] if the driver refuses the launch.
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        // SAFETY: a valid executable graph; the memory its launches use is in `kept`, and the
        // runtime that loaded its kernels outlives it ('rt).
        unsafe { driver::launch_graph(self.exec, stream) }
    }

    /// How many nodes the graph holds: kernels, memsets, and the empty nodes the fork and join
    /// of the branches may leave. At least one per recorded launch; for tests and logs.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// How many allocations the graph keeps alive (one per buffer, table, record or scalar a
    /// recorded launch used, counted once per launch); for tests and logs.
    pub fn kept(&self) -> usize {
        self.kept.len()
    }
}

impl Drop for StepGraph<'_> {
    fn drop(&mut self) {
        // SAFETY: we own both handles; destroying them is valid even with replays in flight
        // (the driver defers the release until they complete).
        unsafe {
            driver::destroy_exec(self.exec);
            driver::destroy_graph(self.graph);
        }
        // Then `kept` drops; an allocation freed there first waits for the replays in flight.
    }
}
