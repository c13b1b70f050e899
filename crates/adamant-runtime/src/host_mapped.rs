//! Page-locked host memory that kernels write directly: a check's report or a step's records
//! reach the host with no copy node in the graph and no memset before it. The host reads them
//! after the event that follows the writing kernel on its stream (kernel completion makes the
//! writes visible to the host).
use std::ffi::c_void;

use cust::memory::{DeviceCopy, LockedBuffer};

use crate::error::{Error, Result};

/// `len` values in page-locked host memory, and the device address kernels write them through.
pub(crate) struct HostMapped<T: DeviceCopy> {
    host: LockedBuffer<T>,
    device: u64,
}

impl<T: DeviceCopy> HostMapped<T> {
    /// `len` copies of `value` (at least one), mapped into the current context's address space.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] if the allocation fails or the driver gives no device address for it (a
    /// device without unified addressing).
    pub(crate) fn new(value: &T, len: usize, what: &str) -> Result<Self> {
        let mut host = LockedBuffer::new(value, len.max(1))
            .map_err(|e| Error::cuda(format!("allocating page-locked {what}"), e))?;
        // SAFETY: `host` is page-locked memory from `cuMemAllocHost` (cust's `LockedBuffer`),
        // alive while `HostMapped` holds it.
        let device = unsafe {
            crate::driver::mapped_device_pointer(host.as_mut_ptr() as *mut c_void, what)
        }?;
        Ok(HostMapped { host, device })
    }

    /// The address kernels write through.
    pub(crate) fn device_ptr(&self) -> u64 {
        self.device
    }

    /// Overwrites the first `values.len()` values from the host: only while no kernel that
    /// writes them can be running (before the first launch).
    pub(crate) fn write(&mut self, values: &[T]) {
        let base = self.host.as_mut_ptr();
        for (i, v) in values.iter().enumerate().take(self.host.len()) {
            // SAFETY: `i` is within the allocation; no kernel writes it concurrently (the
            // caller's promise), and volatile keeps the store from being elided.
            unsafe { std::ptr::write_volatile(base.add(i), *v) };
        }
    }

    /// A copy of the values as the last kernel that wrote them left them: only meaningful after
    /// waiting for an event recorded after that kernel. Volatile reads, because the device
    /// writes this memory behind the compiler's back.
    pub(crate) fn read(&self) -> Vec<T> {
        let base = self.host.as_ptr();
        (0..self.host.len())
            // SAFETY: `i` is within the allocation, which holds initialised `T`s (filled at
            // creation; the kernels write whole values of the same layout).
            .map(|i| unsafe { std::ptr::read_volatile(base.add(i)) })
            .collect()
    }
}

impl<T: DeviceCopy> Drop for HostMapped<T> {
    fn drop(&mut self) {
        // Kernels write this memory (a launch's last block publishes its records here): wait for
        // the context's work before cust frees it, as a device allocation's drop does
        // (`memory.rs`), so no kernel still in flight writes freed host memory. A graph that
        // recorded such a kernel owns a share of this value, so this runs after the graph is
        // gone. An error cannot be reported from a drop.
        let _ = cust::context::CurrentContext::synchronize();
    }
}
