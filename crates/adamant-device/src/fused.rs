//! The device side of the fused entries (`fused_optimizer!`; the tables are described in
//! [`crate::abi::fused`]).
pub use crate::abi::fused::*;

/// A fused entry's pointer tables, as its parameters hold them, handed to each rule's
/// `__adamant_fused_chunk`. A table no rule of the set reads may be null.
#[derive(Clone, Copy)]
pub struct FusedTables {
    /// Each tensor's parameter buffer.
    pub param: *const u64,
    /// Each tensor's `k`-th `#[input]`.
    pub inputs: [*const u64; MAX_FUSED_INPUTS],
    /// Each tensor's `k`-th `#[state]`.
    pub states: [*const u64; MAX_FUSED_STATES],
    /// Each tensor's `k`-th `#[uniform_ptr]` (null: the rule's default).
    pub uniforms: [*const u64; MAX_FUSED_UNIFORMS],
}
