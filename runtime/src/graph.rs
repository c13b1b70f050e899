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

/// One branch of a recorded step: the launches it makes on the stream it is given. Branches of
/// one capture have no order between them, so the GPU may run them concurrently.
pub type Branch<'a> = Box<dyn FnOnce(&Stream) -> Result<()> + 'a>;

/// An instantiated CUDA graph. Replay it with [`StepGraph::launch`].
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
    /// (different kernels' multi-tensor steps, say) can overlap on replay. Nothing in a branch
    /// may synchronise or allocate; every launch's validation still runs, and the first error
    /// aborts the capture and is returned.
    pub fn capture<'a>(&self, branches: Vec<Branch<'a>>) -> Result<StepGraph<'a>> {
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
        let recorded = record_branches(main, &streams, branches);
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
    /// Enqueues one replay of the whole graph on `stream` (no host synchronisation).
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        // SAFETY: a valid executable graph; its buffers are kept alive by the borrows in 'a.
        check(
            unsafe { sys::cuGraphLaunch(self.exec, stream.as_inner()) },
            "cuGraphLaunch",
        )
    }

    /// Nodes in the graph (kernels, memsets, and the fork/join dependencies' empty nodes).
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
