//! Every raw driver call the runtime makes (the ones cust 0.3.2 does not wrap: memsets of a
//! word, mapped host pointers, pointer attributes, stream capture and graphs), each with a typed
//! result. The rest of the runtime calls these and never `cust::sys`, so a failed call is turned
//! into an error in one place: [`Error::Cuda`] naming the operation and the driver's status,
//! or [`Error::Capture`] for the capture and graph calls (what a caller of
//! [`Adamant::capture`](crate::Adamant::capture) or [`StepGraph::launch`](crate::StepGraph::launch)
//! handles).
use std::ffi::c_void;
use std::ptr;

use cust::stream::Stream;
use cust::sys::{
    self, CUgraph, CUgraphExec, CUpointer_attribute, CUresult, CUstreamCaptureMode,
    CUstreamCaptureStatus,
};

use crate::error::{DriverError, Error, Result};

/// `status` as a result: [`Error::Cuda`] naming `operation` unless it is success.
fn driver(status: CUresult, operation: impl FnOnce() -> String) -> Result<()> {
    if status == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::Cuda {
            operation: operation(),
            source: DriverError::Status(status),
        })
    }
}

/// `status` as a result: [`Error::Capture`] naming the call unless it is success.
fn capture(status: CUresult, call: &str) -> Result<()> {
    if status == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::Capture {
            operation: format!("{call} failed ({status:?})"),
        })
    }
}

/// Writes `count` copies of the word `bits` from `address`, enqueued on `stream` (a memset node
/// in a capture: no host buffer has to outlive the call).
///
/// # Safety
///
/// `address` is 4-byte aligned with `count` words of an allocation in the runtime's context
/// after it, which no kernel writes concurrently.
pub(crate) unsafe fn fill_words_async(
    address: u64,
    bits: u32,
    count: usize,
    stream: &Stream,
    what: &str,
) -> Result<()> {
    let status = sys::cuMemsetD32Async(address, bits, count, stream.as_inner());
    driver(status, || format!("writing {what}"))
}

/// As [`fill_words_async`], synchronous with the host (setup: a new allocation's first fill).
///
/// # Safety
///
/// As [`fill_words_async`].
pub(crate) unsafe fn fill_words(address: u64, bits: u32, count: usize, what: &str) -> Result<()> {
    let status = sys::cuMemsetD32_v2(address, bits, count);
    driver(status, || format!("filling {what}"))
}

/// Copies `bytes` bytes from device address `device` to page-locked host memory at `host`,
/// enqueued on `stream` (the copy has landed once the stream is synchronized).
///
/// # Safety
///
/// `device .. device + bytes` lies in a live allocation of the runtime's context;
/// `host .. host + bytes` is page-locked memory (cust's `LockedBuffer`) that nothing reads or
/// writes until the stream is synchronized.
pub(crate) unsafe fn copy_to_host_async(
    host: *mut u8,
    device: u64,
    bytes: usize,
    stream: &Stream,
    what: &str,
) -> Result<()> {
    let status = sys::cuMemcpyDtoHAsync_v2(host as *mut c_void, device, bytes, stream.as_inner());
    driver(status, || format!("downloading {what}"))
}

/// Copies `bytes` bytes from page-locked host memory at `host` to device address `device`,
/// enqueued on `stream` (a kernel enqueued after it on the stream reads the new values).
///
/// # Safety
///
/// As [`copy_to_host_async`], and no kernel writes the device range concurrently.
pub(crate) unsafe fn copy_to_device_async(
    device: u64,
    host: *const u8,
    bytes: usize,
    stream: &Stream,
    what: &str,
) -> Result<()> {
    let status = sys::cuMemcpyHtoDAsync_v2(device, host as *const c_void, bytes, stream.as_inner());
    driver(status, || format!("uploading {what}"))
}

/// Copies `bytes` bytes from device address `from` to device address `to`, enqueued on
/// `stream` (a copy node in stream order: a kernel enqueued after it reads the copy, one
/// enqueued before it has written what is copied).
///
/// # Safety
///
/// Both ranges lie in live allocations of the runtime's context and do not overlap; no kernel
/// writes `to` concurrently.
pub(crate) unsafe fn copy_on_device_async(
    to: u64,
    from: u64,
    bytes: usize,
    stream: &Stream,
    what: &str,
) -> Result<()> {
    let status = sys::cuMemcpyDtoDAsync_v2(to, from, bytes, stream.as_inner());
    driver(status, || format!("copying {what} on the device"))
}

/// The device address of page-locked host memory at `host` (mapped into every context's
/// address space on a unified-addressing device).
///
/// # Errors
///
/// [`Error::Cuda`] if the driver gives none (a device without unified addressing: reported as
/// `CUDA_ERROR_NOT_SUPPORTED`).
///
/// # Safety
///
/// `host` was allocated by `cuMemAllocHost` (cust's `LockedBuffer`) and is still allocated.
pub(crate) unsafe fn mapped_device_pointer(host: *mut c_void, what: &str) -> Result<u64> {
    let mut device: sys::CUdeviceptr = 0;
    let status = sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0);
    let operation = || format!("mapping page-locked {what} into the device's address space");
    driver(status, operation)?;
    if device == 0 {
        return Err(Error::Cuda {
            operation: format!("{} (the driver gave a null address)", operation()),
            source: DriverError::Status(sys::CUresult::CUDA_ERROR_NOT_SUPPORTED),
        });
    }
    Ok(device)
}

/// The allocation that holds device address `ptr`: its start and size in bytes, or the driver's
/// status if it knows none (memory of another context, or not device memory).
pub(crate) fn allocation_of(ptr: u64) -> std::result::Result<(u64, u64), CUresult> {
    let attribute = |which: CUpointer_attribute| {
        let mut value: u64 = 0;
        // SAFETY: both attributes write one `CUdeviceptr` / `size_t` (8 bytes) into `value`;
        // the driver only reads its tables for `ptr`.
        let status = unsafe {
            sys::cuPointerGetAttribute(&mut value as *mut u64 as *mut c_void, which, ptr)
        };
        if status == CUresult::CUDA_SUCCESS {
            Ok(value)
        } else {
            Err(status)
        }
    };
    let start = attribute(CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)?;
    let size = attribute(CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_SIZE)?;
    Ok((start, size))
}

/// The id of the capture `stream` is part of, if any.
///
/// # Errors
///
/// [`Error::Capture`] if the query fails or the stream's capture was invalidated.
pub(crate) fn capture_id(stream: &Stream) -> Result<Option<u64>> {
    let mut status = CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let mut id: sys::cuuint64_t = 0;
    // SAFETY: a valid stream handle and out-pointers to locals.
    capture(
        unsafe { sys::cuStreamGetCaptureInfo(stream.as_inner(), &mut status, &mut id) },
        "cuStreamGetCaptureInfo",
    )?;
    match status {
        CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE => Ok(None),
        CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE => Ok(Some(id)),
        _ => Err(Error::Capture {
            operation: "a launch on a stream whose capture was invalidated".into(),
        }),
    }
}

/// Begins a capture of `stream` (thread-local mode: other threads' launches are not captured).
/// The caller must end it ([`end_capture`]) on every path.
pub(crate) fn begin_capture(stream: &Stream) -> Result<()> {
    // SAFETY: a valid stream handle.
    capture(
        unsafe {
            sys::cuStreamBeginCapture_v2(
                stream.as_inner(),
                CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            )
        },
        "cuStreamBeginCapture",
    )
}

/// Ends the capture of `stream`: the graph it recorded (null if none), and whether the driver
/// accepted it. A non-null graph is the caller's to destroy ([`destroy_graph`]) on every path.
pub(crate) fn end_capture(stream: &Stream) -> (CUgraph, Result<()>) {
    let mut graph: CUgraph = ptr::null_mut();
    // SAFETY: a valid stream handle; `graph` receives the result (or stays null).
    let status = unsafe { sys::cuStreamEndCapture(stream.as_inner(), &mut graph) };
    (graph, capture(status, "cuStreamEndCapture"))
}

/// Instantiates `graph`.
///
/// # Safety
///
/// `graph` is a valid graph handle the caller owns.
pub(crate) unsafe fn instantiate(graph: CUgraph) -> Result<CUgraphExec> {
    let mut exec: CUgraphExec = ptr::null_mut();
    capture(
        sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0),
        "cuGraphInstantiate",
    )?;
    Ok(exec)
}

/// How many nodes `graph` holds.
///
/// # Safety
///
/// `graph` is a valid graph handle.
pub(crate) unsafe fn node_count(graph: CUgraph) -> Result<usize> {
    let mut nodes = 0;
    capture(
        sys::cuGraphGetNodes(graph, ptr::null_mut(), &mut nodes),
        "cuGraphGetNodes",
    )?;
    Ok(nodes)
}

/// Launches `exec` on `stream`.
///
/// # Safety
///
/// `exec` is a valid executable graph, and the memory its launches use is alive.
pub(crate) unsafe fn launch_graph(exec: CUgraphExec, stream: &Stream) -> Result<()> {
    capture(sys::cuGraphLaunch(exec, stream.as_inner()), "cuGraphLaunch")
}

/// Destroys `graph`. The driver defers the release until replays in flight complete.
///
/// # Safety
///
/// `graph` is a valid graph handle the caller owns and does not use again.
pub(crate) unsafe fn destroy_graph(graph: CUgraph) {
    sys::cuGraphDestroy(graph);
}

/// Destroys `exec`. The driver defers the release until replays in flight complete.
///
/// # Safety
///
/// `exec` is a valid executable graph the caller owns and does not use again.
pub(crate) unsafe fn destroy_exec(exec: CUgraphExec) {
    sys::cuGraphExecDestroy(exec);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_raw_call_is_the_one_driver_error_with_its_status_and_operation() {
        assert!(driver(CUresult::CUDA_SUCCESS, || unreachable!()).is_ok());
        let err = driver(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS, || {
            "writing the records".into()
        })
        .unwrap_err();
        match &err {
            Error::Cuda {
                operation,
                source: DriverError::Status(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS),
            } => assert_eq!(operation, "writing the records"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            err.to_string(),
            "CUDA error during writing the records: CUDA_ERROR_ILLEGAL_ADDRESS (CUresult 700)"
        );
        // A cust error of the same status reads the same way and has the same code.
        let cust = Error::cuda("launching k", cust::error::CudaError::IllegalAddress);
        match &cust {
            Error::Cuda { source, .. } => assert_eq!(source.code(), 700),
            other => panic!("{other:?}"),
        }
        assert!(cust.to_string().ends_with("(CUresult 700)"), "{cust}");
    }
}
