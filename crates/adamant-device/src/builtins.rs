//! The nvptx builtins adamant's kernels use, over `core::arch::nvptx`.
//!
//! `cuda_std` (Rust-CUDA) would be the obvious crate, but 0.2.2 does not compile on the stock
//! nvptx backend (it needs the Rust-CUDA codegen's attributes and a removed feature). The stock
//! intrinsics' names and signatures also move between nightlies, so every kernel goes through
//! this module and a nightly change touches one file.
use core::arch::nvptx;

/// Index of this thread across the whole 1-D grid.
#[inline(always)]
pub fn global_thread_index() -> usize {
    // SAFETY: reading special registers has no preconditions inside a kernel.
    unsafe {
        (nvptx::_block_idx_x() as usize) * (nvptx::_block_dim_x() as usize)
            + nvptx::_thread_idx_x() as usize
    }
}

/// Number of threads in the whole 1-D grid (the grid-stride step).
#[inline(always)]
pub fn grid_threads() -> usize {
    // SAFETY: as above.
    unsafe { (nvptx::_grid_dim_x() as usize) * (nvptx::_block_dim_x() as usize) }
}

#[inline(always)]
pub fn thread_index() -> u32 {
    // SAFETY: as above.
    unsafe { nvptx::_thread_idx_x() }
}

#[inline(always)]
pub fn block_index() -> u32 {
    // SAFETY: as above.
    unsafe { nvptx::_block_idx_x() }
}

#[inline(always)]
pub fn block_dim() -> u32 {
    // SAFETY: as above.
    unsafe { nvptx::_block_dim_x() }
}

#[inline(always)]
pub fn grid_dim() -> u32 {
    // SAFETY: as above.
    unsafe { nvptx::_grid_dim_x() }
}

/// `bar.sync 0`: every thread of the block must reach it.
///
/// # Safety
/// Must be reached by all threads of the block (no divergent call sites).
#[inline(always)]
pub unsafe fn sync_threads() {
    nvptx::_syncthreads()
}

/// The block's dynamic shared memory (sized by the launch), as `T`s.
#[inline(always)]
pub fn dynamic_shared<T>() -> *mut T {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<T>()
}

// Atomics on global memory. `core`'s atomics lower to single `atom.global.*` instructions on
// nvptx (no CAS loops for these widths); `Relaxed` is enough wherever the only reader is the host
// after the stream has synchronised.

/// `atomicOr` on a `u32` in global memory (relaxed).
///
/// # Safety
/// `ptr` must be valid, 4-byte aligned and only accessed atomically while the kernel runs.
#[inline(always)]
pub unsafe fn atomic_or_u32(ptr: *mut u32, value: u32) {
    core::sync::atomic::AtomicU32::from_ptr(ptr)
        .fetch_or(value, core::sync::atomic::Ordering::Relaxed);
}

/// `atomicAdd` on a `u32` (relaxed), in global or shared memory.
///
/// # Safety
/// As [`atomic_or_u32`].
#[inline(always)]
pub unsafe fn atomic_add_u32(ptr: *mut u32, value: u32) {
    core::sync::atomic::AtomicU32::from_ptr(ptr)
        .fetch_add(value, core::sync::atomic::Ordering::Relaxed);
}

/// `atomicMax` on a `u32` in global memory (relaxed).
///
/// # Safety
/// As [`atomic_or_u32`].
#[inline(always)]
pub unsafe fn atomic_max_u32(ptr: *mut u32, value: u32) {
    core::sync::atomic::AtomicU32::from_ptr(ptr)
        .fetch_max(value, core::sync::atomic::Ordering::Relaxed);
}

/// `atomicMin` on a `u64` in global memory (relaxed).
///
/// # Safety
/// `ptr` must be valid, 8-byte aligned and only accessed atomically while the kernel runs.
#[inline(always)]
pub unsafe fn atomic_min_u64(ptr: *mut u64, value: u64) {
    core::sync::atomic::AtomicU64::from_ptr(ptr)
        .fetch_min(value, core::sync::atomic::Ordering::Relaxed);
}

/// `atomicAdd` on a `u32` in global memory, acquire-release at device scope, returning the old
/// value: the arrival counter of a "last block publishes" epilogue (each block's earlier atomics
/// are released by its arrival; the last arrival acquires all of them).
///
/// # Safety
/// As [`atomic_or_u32`].
#[inline(always)]
pub unsafe fn atomic_add_u32_acq_rel(ptr: *mut u32, value: u32) -> u32 {
    core::sync::atomic::AtomicU32::from_ptr(ptr)
        .fetch_add(value, core::sync::atomic::Ordering::AcqRel)
}

/// A relaxed atomic load of a `u32` in global memory (read at L2, never a stale L1 line).
///
/// # Safety
/// As [`atomic_or_u32`].
#[inline(always)]
pub unsafe fn atomic_load_u32(ptr: *mut u32) -> u32 {
    core::sync::atomic::AtomicU32::from_ptr(ptr).load(core::sync::atomic::Ordering::Relaxed)
}

/// A relaxed atomic load of a `u64` in global memory.
///
/// # Safety
/// As [`atomic_min_u64`].
#[inline(always)]
pub unsafe fn atomic_load_u64(ptr: *mut u64) -> u64 {
    core::sync::atomic::AtomicU64::from_ptr(ptr).load(core::sync::atomic::Ordering::Relaxed)
}

unsafe extern "C" {
    // PTX `membar.gl`: a fence at device scope. `core`'s fences are system-scope on nvptx
    // (`fence.acq_rel.sys`), which also waits on host-visible memory; every block of an
    // optimizer launch pays its fence, so the scope matters (measured on an H200: Adam on 2^28
    // elements at 0.76x the copy bandwidth with the system fence).
    #[link_name = "llvm.nvvm.membar.gl"]
    fn membar_gl();
}

/// A fence at device scope: with [`atomic_add_u32_acq_rel`], makes the other blocks' atomics
/// visible to every thread of the block that arrived last (every writer and reader is on the
/// device; the host reads only after the kernel has completed).
#[inline(always)]
pub fn fence_acq_rel() {
    // SAFETY: a fence has no preconditions.
    unsafe { membar_gl() }
}

unsafe extern "C" {
    // PTX `redux.sync.max.u32` / `redux.sync.add.u32` (sm_80 and later; the module targets
    // sm_90): one instruction reduces a value over the lanes of `mask`.
    #[link_name = "llvm.nvvm.redux.sync.umax"]
    fn redux_umax_raw(value: u32, mask: u32) -> u32;
    #[link_name = "llvm.nvvm.redux.sync.add"]
    fn redux_add_raw(value: u32, mask: u32) -> u32;
    #[link_name = "llvm.nvvm.redux.sync.umin"]
    fn redux_umin_raw(value: u32, mask: u32) -> u32;
    #[link_name = "llvm.nvvm.redux.sync.or"]
    fn redux_or_raw(value: u32, mask: u32) -> u32;
}

/// This thread's lane in its warp.
#[inline(always)]
pub fn lane_index() -> u32 {
    thread_index() % 32
}

/// The lanes of this thread's warp that exist in a 1-D block (all 32 but in a block's last,
/// partial warp). The warp reductions name these, not `activemask`: after loops whose trip
/// counts differ between lanes, the lanes need not have reconverged, and `activemask` would name
/// only the ones that happen to run together, so a reduction over it would lose the others'
/// values (measured on an H200: clamp counts short in a record). `redux.sync` with this mask
/// waits for every lane in it.
#[inline(always)]
pub fn warp_lanes() -> u32 {
    let left = block_dim() - (thread_index() & !31);
    if left >= 32 {
        u32::MAX
    } else {
        (1u32 << left) - 1
    }
}

/// The largest `value` over the lanes of the warp ([`warp_lanes`]), returned to each.
///
/// # Safety
/// Every lane of the warp that exists must reach the call (a warp-uniform call site), or the
/// ones that do wait forever.
#[inline(always)]
pub unsafe fn warp_max_u32(value: u32) -> u32 {
    redux_umax_raw(value, warp_lanes())
}

/// The sum (wrapping) of `value` over the lanes of the warp ([`warp_lanes`]).
///
/// # Safety
/// As [`warp_max_u32`].
#[inline(always)]
pub unsafe fn warp_sum_u32(value: u32) -> u32 {
    redux_add_raw(value, warp_lanes())
}

/// The bitwise or of `value` over the lanes of the warp ([`warp_lanes`]).
///
/// # Safety
/// As [`warp_max_u32`].
#[inline(always)]
pub unsafe fn warp_or_u32(value: u32) -> u32 {
    redux_or_raw(value, warp_lanes())
}

/// The smallest `value` over the lanes of the warp ([`warp_lanes`]): the high words'
/// minimum, then the low words' among the lanes that hold it.
///
/// # Safety
/// As [`warp_max_u32`].
#[inline(always)]
pub unsafe fn warp_min_u64(value: u64) -> u64 {
    let mask = warp_lanes();
    let (high, low) = ((value >> 32) as u32, value as u32);
    let min_high = redux_umin_raw(high, mask);
    let low = if high == min_high { low } else { u32::MAX };
    ((min_high as u64) << 32) | redux_umin_raw(low, mask) as u64
}

/// Ends the kernel with an error the launch reports: for a state the host never creates (a
/// fused entry's rule index out of range), which must not pass silently.
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: `trap` has no preconditions; it aborts the kernel.
    unsafe { core::arch::nvptx::trap() }
}

unsafe extern "C" {
    // PTX `prefetch.L1 [a]` (generic address): brings the line holding `a` into L1 without
    // waiting for it. It writes no memory and defines no register.
    #[link_name = "llvm.nvvm.prefetch.L1"]
    fn prefetch_l1_raw(address: *const u8);
}

/// Asks for the line holding `at` in L1, without waiting (a sweep's next group, while it
/// computes the current one).
///
/// # Safety
/// `at` must point into an allocation.
#[inline(always)]
pub unsafe fn prefetch_l1<T>(at: *const T) {
    prefetch_l1_raw(at as *const u8)
}
