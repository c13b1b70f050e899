//! Copies between device memory and a checkpoint's bytes, on the caller's stream, through one
//! page-locked staging buffer reused chunk after chunk (so a state of any size moves with a
//! bounded amount of page-locked memory, and at the driver's page-locked copy speed).
use cust::memory::LockedBuffer;
use cust::stream::Stream;

use crate::error::{Error, Result};

/// The largest chunk one copy moves (the staging buffer's size for a large state).
const CHUNK_BYTES: usize = 64 << 20;

/// A page-locked staging buffer, allocated at the first copy and grown up to
/// [`CHUNK_BYTES`].
#[derive(Default)]
pub(crate) struct Staging {
    buffer: Option<LockedBuffer<u8>>,
}

impl Staging {
    /// The staging buffer, at least `min(bytes, CHUNK_BYTES)` long.
    fn buffer(&mut self, bytes: usize) -> Result<&mut LockedBuffer<u8>> {
        let want = bytes.clamp(1, CHUNK_BYTES);
        if self.buffer.as_ref().is_none_or(|b| b.len() < want) {
            self.buffer = None;
            let buffer = LockedBuffer::new(&0u8, want).map_err(|e| {
                Error::cuda(format!("allocating {want} bytes of page-locked staging"), e)
            })?;
            self.buffer = Some(buffer);
        }
        Ok(self.buffer.as_mut().expect("allocated above"))
    }

    /// The `bytes` bytes at device address `address`, after the work enqueued before on
    /// `stream`.
    ///
    /// # Safety
    ///
    /// `address .. address + bytes` lies in a live allocation of the runtime's context.
    pub(crate) unsafe fn download(
        &mut self,
        address: u64,
        bytes: usize,
        stream: &Stream,
        what: &str,
    ) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(bytes);
        let buffer = self.buffer(bytes)?;
        let mut done = 0;
        while done < bytes {
            let n = (bytes - done).min(buffer.len());
            crate::driver::copy_to_host_async(
                buffer.as_mut_ptr(),
                address + done as u64,
                n,
                stream,
                what,
            )?;
            stream
                .synchronize()
                .map_err(|e| Error::cuda(format!("downloading {what}"), e))?;
            out.extend_from_slice(&buffer[..n]);
            done += n;
        }
        Ok(out)
    }

    /// Writes `data` at device address `address`, ordered after the work enqueued before on
    /// `stream`; landed when this returns.
    ///
    /// # Safety
    ///
    /// `address .. address + data.len()` lies in a live allocation of the runtime's context,
    /// which no kernel writes concurrently.
    pub(crate) unsafe fn upload(
        &mut self,
        address: u64,
        data: &[u8],
        stream: &Stream,
        what: &str,
    ) -> Result<()> {
        let buffer = self.buffer(data.len())?;
        let mut done = 0;
        while done < data.len() {
            let n = (data.len() - done).min(buffer.len());
            buffer[..n].copy_from_slice(&data[done..done + n]);
            crate::driver::copy_to_device_async(
                address + done as u64,
                buffer.as_ptr(),
                n,
                stream,
                what,
            )?;
            // The staging buffer is reused by the next chunk: this one must have left it.
            stream
                .synchronize()
                .map_err(|e| Error::cuda(format!("uploading {what}"), e))?;
            done += n;
        }
        Ok(())
    }
}
