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

/// The clamp bound of one tensor of a multi-tensor launch: the launch's `bound` (the last
/// parameter, or the step state's) times the tensor's `scale`, the `f32` at the tensor's index in
/// the entry's `weight_clamp_scales` table (the index of its pointers in the buffer tables). So a
/// launch can clip layer by layer, `κ · s_l` in layer-wise weight clipping, and a table of ones
/// (what the runtime passes when no scales are given) leaves every tensor at the launch's bound,
/// bit for bit. A product above [`crate::clamp::BOUND_CEILING`] (an overflow included) saturates
/// there, so no tensor's bound exceeds the ceiling whatever the launch's bound (a stepped one
/// grows with `Q_ABS_REF`) and its scale. A bound of 0 (clamp disabled) stays 0.
///
/// The PTX audit proves each stored value is `contract(x, tensor_bound(bound, scale))` with the
/// scale loaded at the stored pointer's own tensor index, from its own definition of this rule.
#[inline(always)]
pub fn tensor_bound(bound: f32, scale: f32) -> f32 {
    let b = bound * scale;
    if b > crate::clamp::BOUND_CEILING {
        crate::clamp::BOUND_CEILING
    } else {
        b
    }
}
