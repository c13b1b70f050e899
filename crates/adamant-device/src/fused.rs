//! The device side of the fused entries (`fused_optimizer!`; the tables are described in
//! [`crate::abi::fused`]).
pub use crate::abi::fused::*;

/// A fused entry's pointer tables, as its parameters hold them, handed to each rule's
/// `__adamant_fused_chunk`. A table no rule of the set reads may be null.
#[derive(Clone, Copy)]
pub struct FusedTables {
    /// Each tensor's parameter buffer, in the table of its storage and rounding
    /// (`adamant_abi::fused::param_table_index`): null in every other.
    pub params: [*const u64; FUSED_PARAM_TABLES],
    /// Each tensor's `k`-th `#[input]`.
    pub inputs: [*const u64; MAX_FUSED_INPUTS],
    /// Each tensor's `k`-th `#[state]`.
    pub states: [*const u64; MAX_FUSED_STATES],
    /// Each tensor's `k`-th `#[uniform_ptr]` (null: the rule's default).
    pub uniforms: [*const u64; MAX_FUSED_UNIFORMS],
}

impl FusedTables {
    /// Parameter table `k`, null past [`FUSED_PARAM_TABLES`].
    #[inline(always)]
    pub fn param(&self, k: usize) -> *const u64 {
        self.params.get(k).copied().unwrap_or(core::ptr::null())
    }

    /// Input table `k`, null past [`MAX_FUSED_INPUTS`] (a kernel that would read one is not
    /// `FUSABLE`, and no fused set compiles with it).
    #[inline(always)]
    pub fn input(&self, k: usize) -> *const u64 {
        self.inputs.get(k).copied().unwrap_or(core::ptr::null())
    }

    /// State table `k`, null past [`MAX_FUSED_STATES`].
    #[inline(always)]
    pub fn state(&self, k: usize) -> *const u64 {
        self.states.get(k).copied().unwrap_or(core::ptr::null())
    }

    /// Uniform-pointer table `k`, null past [`MAX_FUSED_UNIFORMS`].
    #[inline(always)]
    pub fn uniform(&self, k: usize) -> *const u64 {
        self.uniforms.get(k).copied().unwrap_or(core::ptr::null())
    }
}
