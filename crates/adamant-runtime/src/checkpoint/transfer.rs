//! Copies between device memory and a checkpoint's bytes, on the caller's stream, through two
//! page-locked staging buffers used in turn chunk after chunk: while the device copies one chunk
//! into (or out of) one buffer, the host copies the other chunk between its buffer and the
//! checkpoint's bytes, on every core. A state of any size moves with a bounded amount of
//! page-locked memory, at close to the driver's page-locked copy speed: copying one chunk at a
//! time and then moving it on one core left most of a 3 GB save's time in the host copy (1.75 s
//! on an H100 machine, the eleventh session's checkpoint bench).
use cust::event::{Event, EventFlags};
use cust::memory::LockedBuffer;
use cust::stream::Stream;
use rayon::prelude::*;

use super::digest::{hash_pieces, PieceDigest, PIECE_BYTES};
use crate::error::{Error, Result};

/// The largest chunk one copy moves (each staging buffer's size for a large state): whole
/// checksum pieces, so each chunk's pieces are hashed on their own as it arrives.
const CHUNK_BYTES: usize = 4 * PIECE_BYTES;
const _: () = assert!(CHUNK_BYTES.is_multiple_of(PIECE_BYTES));

/// Bytes per task of a parallel host copy.
const HOST_SLICE: usize = 1 << 20;

/// Two page-locked staging buffers and the events that say when the device is done with each,
/// allocated at the first copy and grown up to [`CHUNK_BYTES`].
#[derive(Default)]
pub(crate) struct Staging {
    buffers: [Option<LockedBuffer<u8>>; 2],
    events: [Option<Event>; 2],
}

/// `src` into `dst` (of the same length), on every core.
fn parallel_copy(dst: &mut [u8], src: &[u8]) {
    dst.par_chunks_mut(HOST_SLICE)
        .zip(src.par_chunks(HOST_SLICE))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

impl Staging {
    /// Staging buffer `k` (0 or 1), at least `min(bytes, CHUNK_BYTES)` long.
    fn buffer(&mut self, k: usize, bytes: usize) -> Result<&mut LockedBuffer<u8>> {
        let want = bytes.clamp(1, CHUNK_BYTES);
        let slot = &mut self.buffers[k];
        if slot.as_ref().is_none_or(|b| b.len() < want) {
            *slot = None;
            let buffer = LockedBuffer::new(&0u8, want).map_err(|e| {
                Error::cuda(format!("allocating {want} bytes of page-locked staging"), e)
            })?;
            *slot = Some(buffer);
        }
        Ok(slot.as_mut().expect("allocated above"))
    }

    /// Records event `k` on `stream` (after the copy just enqueued on it).
    fn mark(&mut self, k: usize, stream: &Stream, what: &str) -> Result<()> {
        if self.events[k].is_none() {
            let event = Event::new(EventFlags::DISABLE_TIMING)
                .map_err(|e| Error::cuda(format!("creating an event for {what}"), e))?;
            self.events[k] = Some(event);
        }
        let event = self.events[k].as_ref().expect("created above");
        event
            .record(stream)
            .map_err(|e| Error::cuda(format!("ordering the copies of {what}"), e))
    }

    /// Waits until the device is done with staging buffer `k` (no-op before its first use).
    fn wait(&self, k: usize, what: &str) -> Result<()> {
        match &self.events[k] {
            Some(event) => event
                .synchronize()
                .map_err(|e| Error::cuda(format!("copying {what}"), e)),
            None => Ok(()),
        }
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
        Ok(self.transfer_down(address, bytes, stream, what, false)?.0)
    }

    /// [`Staging::download`], with the digests of the bytes' checksum pieces, each chunk hashed
    /// while the next one is copied from the device (the save then has nothing left to hash).
    ///
    /// # Safety
    ///
    /// As [`Staging::download`].
    pub(crate) unsafe fn download_hashed(
        &mut self,
        address: u64,
        bytes: usize,
        stream: &Stream,
        what: &str,
    ) -> Result<(Vec<u8>, Vec<PieceDigest>)> {
        self.transfer_down(address, bytes, stream, what, true)
    }

    /// The download, and with `hash` the pieces' digests.
    unsafe fn transfer_down(
        &mut self,
        address: u64,
        bytes: usize,
        stream: &Stream,
        what: &str,
        hash: bool,
    ) -> Result<(Vec<u8>, Vec<PieceDigest>)> {
        let mut digests = Vec::new();
        // Zeroed pages are mapped lazily: the parallel copies fault them in on every core.
        let mut out = vec![0u8; bytes];
        let chunks: Vec<(usize, usize)> = (0..bytes)
            .step_by(CHUNK_BYTES)
            .map(|at| (at, (bytes - at).min(CHUNK_BYTES)))
            .collect();
        let enqueue = |staging: &mut Staging, c: usize| -> Result<()> {
            let (at, n) = chunks[c];
            let buffer = staging.buffer(c % 2, n)?;
            crate::driver::copy_to_host_async(
                buffer.as_mut_ptr(),
                address + at as u64,
                n,
                stream,
                what,
            )?;
            staging.mark(c % 2, stream, what)
        };
        if !chunks.is_empty() {
            enqueue(self, 0)?;
        }
        for (c, &(at, n)) in chunks.iter().enumerate() {
            // The next chunk goes into the other buffer, which the host finished reading in
            // the previous iteration, while this one is moved out.
            if c + 1 < chunks.len() {
                enqueue(self, c + 1)?;
            }
            self.wait(c % 2, what)?;
            let buffer = self.buffers[c % 2].as_ref().expect("enqueued into");
            parallel_copy(&mut out[at..at + n], &buffer[..n]);
            if hash {
                // A chunk starts on a piece boundary (its size is a multiple of a piece's).
                digests.extend(hash_pieces(&out[at..at + n]));
            }
        }
        Ok((out, digests))
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
        for (c, chunk) in data.chunks(CHUNK_BYTES).enumerate() {
            let k = c % 2;
            // The buffer's previous chunk (two back) must have left it before it is refilled;
            // the other buffer's copy to the device runs meanwhile.
            self.wait(k, what)?;
            let buffer = self.buffer(k, chunk.len())?;
            parallel_copy(&mut buffer[..chunk.len()], chunk);
            crate::driver::copy_to_device_async(
                address + (c * CHUNK_BYTES) as u64,
                buffer.as_ptr(),
                chunk.len(),
                stream,
                what,
            )?;
            self.mark(k, stream, what)?;
        }
        stream
            .synchronize()
            .map_err(|e| Error::cuda(format!("uploading {what}"), e))
    }
}
