//! Device memory the runtime owns, and why it cannot be freed under a launch or a graph.
//!
//! Every allocation a launch can reach (parameter and state buffers, device scalars, step-state
//! records, diagnostics records, multi-tensor tables, the NaN checker's tables) is a
//! [`DeviceMemory`] behind an [`Arc`]. The handle the caller holds is one owner; a graph that
//! recorded a launch is another: while a capture is in progress, every launch hands the
//! allocations it uses to that capture ([`crate::Adamant::retain`]), and the [`crate::StepGraph`]
//! keeps them until it is dropped. So dropping a buffer, replacing a set's tables or a step
//! state behind a `RefCell` never frees memory a graph still writes. And no allocation is freed
//! while an eager launch may still use it: [`DeviceMemory`]'s drop (and the page-locked
//! `HostMapped`'s) waits for the context's work first.
use std::any::Any;
use std::sync::Arc;

use cust::memory::{CopyDestination, DeviceBuffer, DeviceCopy, DeviceSlice};

use crate::error::{Error, Result};

/// The captures in progress, by the driver's capture id, with what their launches used so far
/// (held by the runtime, filled by `Adamant::retain`, taken by the graph each becomes).
pub(crate) type Captures = std::sync::Mutex<Vec<(u64, Vec<Keep>)>>;

/// An allocation a captured graph keeps alive until it is dropped.
pub(crate) type Keep = Arc<dyn Any + Send + Sync>;

/// `len` values of `T` in device memory, owned by whatever holds an [`Arc`] of it.
///
/// Public only as an unnameable type (its module is private): the sealed buffer traits name it.
pub struct DeviceMemory<T: DeviceCopy> {
    buffer: DeviceBuffer<T>,
}

impl<T: DeviceCopy> std::fmt::Debug for DeviceMemory<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} × {} bytes at {:#x}",
            self.len(),
            size_of::<T>(),
            self.address()
        )
    }
}

fn allocation_error(what: &str, bytes: usize, source: cust::error::CudaError) -> Error {
    match source {
        cust::error::CudaError::OutOfMemory => Error::OutOfMemory {
            what: what.to_string(),
            bytes,
        },
        other => Error::cuda(format!("allocating {what}"), other),
    }
}

impl<T: DeviceCopy> DeviceMemory<T> {
    /// A copy of `data` in a new allocation. Its contents have landed when this returns, so
    /// a launch on any stream (a non-blocking one included, which does not wait for the legacy
    /// stream's copies) reads them: new allocations are setup, not the per-step path.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfMemory`] naming `what`, or [`Error::Cuda`].
    pub(crate) fn from_host(data: &[T], what: &str) -> Result<Arc<Self>> {
        let buffer = DeviceBuffer::from_slice(data)
            .map_err(|e| allocation_error(what, std::mem::size_of_val(data), e))?;
        landed(what)?;
        Ok(Arc::new(DeviceMemory { buffer }))
    }

    /// The device address of the first value.
    pub(crate) fn address(&self) -> u64 {
        self.buffer.as_device_ptr().as_raw()
    }

    /// How many values.
    pub(crate) fn len(&self) -> usize {
        self.buffer.len()
    }

    /// A view of the whole allocation for one of cust's copies.
    fn view(&self) -> DeviceSlice<T> {
        // SAFETY: the view covers exactly our live allocation and lives only for the copy that
        // uses it. Device memory is written by the device behind Rust's back in any case; the
        // copies are ordered with the launches as their callers document.
        unsafe { DeviceSlice::from_raw_parts_mut(self.buffer.as_device_ptr(), self.buffer.len()) }
    }

    /// Overwrites the allocation with `data` (cust's synchronous copy, on the legacy default
    /// stream), which must have exactly [`DeviceMemory::len`] values (the callers check, naming
    /// the buffer).
    pub(crate) fn write(&self, data: &[T], what: &str) -> Result<()> {
        debug_assert_eq!(data.len(), self.len());
        self.view()
            .copy_from(data)
            .map_err(|e| Error::cuda(format!("uploading {what}"), e))
    }

    /// A copy of the allocation on the host (cust's synchronous copy).
    pub(crate) fn read(&self, what: &str) -> Result<Vec<T>>
    where
        T: Default + Clone,
    {
        let mut host = vec![T::default(); self.len()];
        self.view()
            .copy_to(&mut host[..])
            .map_err(|e| Error::cuda(format!("downloading {what}"), e))?;
        Ok(host)
    }
}

impl DeviceMemory<u8> {
    /// `bytes` bytes of new device memory, not initialised: for a copy to fill (a checkpoint's
    /// snapshot), which the caller enqueues before anything reads it.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfMemory`] naming `what`, or [`Error::Cuda`].
    pub(crate) fn for_copy(bytes: usize, what: &str) -> Result<Arc<Self>> {
        // SAFETY: `u8` is valid for any bits, and the caller writes every byte before a read.
        let buffer = unsafe { DeviceBuffer::<u8>::uninitialized(bytes.max(1)) }
            .map_err(|e| allocation_error(what, bytes, e))?;
        Ok(Arc::new(DeviceMemory { buffer }))
    }
}

impl DeviceMemory<f32> {
    /// `len` copies of `value`, written on the device (no host buffer of `len` values): one
    /// memset of the new allocation, landed when this returns (as [`DeviceMemory::from_host`]).
    ///
    /// # Errors
    ///
    /// As [`DeviceMemory::from_host`]; [`Error::Cuda`] if the memset fails.
    pub(crate) fn filled(len: usize, value: f32, what: &str) -> Result<Arc<Self>> {
        // SAFETY: every element is written by the memset below before anything can read it.
        let buffer = unsafe { DeviceBuffer::<f32>::uninitialized(len) }
            .map_err(|e| allocation_error(what, len * 4, e))?;
        let memory = Arc::new(DeviceMemory { buffer });
        if len > 0 {
            // SAFETY: `len` 4-byte words of our own new allocation.
            unsafe { crate::driver::fill_words(memory.address(), value.to_bits(), len, what) }?;
            landed(what)?;
        }
        Ok(memory)
    }
}

/// Waits for the copy or memset that filled a new allocation: cust's copy from pageable memory
/// and the memset may return before the device has the data, and only the legacy stream and
/// blocking streams are ordered after them.
fn landed(what: &str) -> Result<()> {
    cust::context::CurrentContext::synchronize()
        .map_err(|e| Error::cuda(format!("waiting for {what} to land"), e))
}

impl<T: DeviceCopy> Drop for DeviceMemory<T> {
    fn drop(&mut self) {
        // An eager launch enqueued before the last owner let go may still be running: wait for
        // the context's work, so the memory is never freed under a kernel (cuMemFree only "may"
        // synchronise). A graph that recorded the memory is itself an owner, so this runs after
        // the graph is gone. An error here (no context left, a capture in progress on this
        // thread) cannot be reported from a drop; the free below is then cust's as before.
        let _ = cust::context::CurrentContext::synchronize();
    }
}
