//! The chunk table that drives the multi-tensor entries (`<kernel>_multi`): one launch updates
//! every tensor of a set, each tensor cut into chunks so that work spreads over all
//! multiprocessors however the tensor sizes are skewed. Built by the runtime, read by the device.

/// One unit of work: `len` elements of tensor `tensor`, starting at element `start`.
/// `start` is a multiple of 4, so a 16-byte aligned tensor gives 16-byte aligned chunks; one
/// record is one 16-byte load.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Chunk {
    pub tensor: u32,
    pub start: u32,
    pub len: u32,
    pub reserved: u32,
}

/// `u32`s per [`Chunk`] record (the runtime uploads the table as `u32`s).
pub const CHUNK_WORDS: usize = 4;
