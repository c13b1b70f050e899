//! The fused NaN / max-abs checker: one launch scans every slot of a contiguous range of the
//! runtime's slot table (`adamant_runtime::nan_check`) and leaves, per slot, a flag word, the
//! largest `|x|` seen and the index of the first bad element.
//!
//! Work layout: the host splits every slot into chunks of a few thousand elements and uploads
//! one [`WorkItem`] per chunk; blocks grid-stride over that table. A large slot is therefore
//! scanned by many blocks at once (the seed's one-block-per-slot layout left one block to walk
//! the largest buffer alone while the others idled). Each block reduces its chunk in shared
//! memory and thread 0 publishes the result with one atomic per output word.
//!
//! The layout types and flag bits are ungated: the host builds the tables with the same
//! definitions the device reads, and decodes the flags with the same constants.
use crate::kernel_entry;

/// Flag bit: a NaN, `+inf` or `-inf` was seen in the slot.
pub const FLAG_NON_FINITE: u32 = 1 << 0;
/// Flag bit: a finite value with `|x| > threshold` was seen in the slot (non-finite values set
/// only [`FLAG_NON_FINITE`], so this bit means "finite but too large": the early warning).
pub const FLAG_OVER_THRESHOLD: u32 = 1 << 1;
/// Every flag bit the kernel can set.
pub const FLAG_ALL: u32 = FLAG_NON_FINITE | FLAG_OVER_THRESHOLD;
/// The first-bad-index word of a slot where nothing was flagged. The host fills that buffer
/// with `0xFF` bytes before each launch; the kernel only ever lowers it (atomic min).
pub const NO_BAD_INDEX: u64 = u64::MAX;
/// Dynamic shared memory per thread of a block: the reduction's first-bad index (`u64`), flag
/// word (`u32`) and max-abs bits (`u32`).
pub const SHARED_BYTES_PER_THREAD: u32 = 16;
/// The `factor` of a slot checked for non-finite values only: its threshold is `+inf`, which no
/// finite `|x|` exceeds.
pub const NON_FINITE_ONLY: f32 = f32::INFINITY;

/// One slot of the checked range, as the kernel reads it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlotMeta {
    /// Device address of the slot's `f32` data (may be 0 when `len` is 0).
    pub ptr: u64,
    /// Number of elements. The kernel never reads past it, whatever the work table says.
    pub len: u64,
    /// The threshold is `factor × q_abs_ref_eff` (a kernel argument, so a new `Q_ABS_REF` needs
    /// no re-upload); [`NON_FINITE_ONLY`] for slots without a max-abs check.
    pub factor: f32,
    /// Keeps the size a multiple of the alignment, spelled out so host and device agree.
    pub reserved: u32,
}

/// One chunk of one slot: elements `start .. start + count` of slot `slot` (relative to the
/// first slot of the checked range).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkItem {
    pub start: u64,
    pub slot: u32,
    pub count: u32,
}

/// The flag bits one element sets against `threshold` (`+inf` for non-finite-only slots).
///
/// NaN is tested explicitly with `x != x`: a reduction built on `fmaxf` / `max.f32` /
/// `f32::max` drops NaN operands, so it would never surface one. `±inf` sets only
/// [`FLAG_NON_FINITE`], so [`FLAG_OVER_THRESHOLD`] always means a finite value.
#[inline(always)]
#[allow(clippy::eq_op)] // `x != x` is the NaN test, on purpose.
pub fn element_flags(x: f32, threshold: f32) -> u32 {
    let magnitude = x.abs();
    if x != x || magnitude == f32::INFINITY {
        FLAG_NON_FINITE
    } else if magnitude > threshold {
        FLAG_OVER_THRESHOLD
    } else {
        0
    }
}

/// The bits of `|x|`. Non-negative floats order like their bit patterns as `u32` (and `|NaN|`
/// sorts above `+inf`), so an integer max over these keeps NaN visible in the max-abs word and
/// lets the device combine maxima with `atom.max.u32`.
#[inline(always)]
pub fn abs_bits(x: f32) -> u32 {
    x.to_bits() & 0x7fff_ffff
}

/// The checker entry. One launch covers the whole range; see the module comment for the layout.
///
/// - `slots[0..n_slots]`: the range's slots; `work[0..n_work]`: the chunks.
/// - `flags`, `max_abs_bits` (zeroed) and `first_bad` (filled with [`NO_BAD_INDEX`]) have
///   `n_slots` entries each and are prepared on the launch's stream before it.
/// - Launch with a 1-D block of any size and `block_dim × SHARED_BYTES_PER_THREAD` bytes of
///   dynamic shared memory.
///
/// # Safety
/// Every pointer must be valid for the counts above; every `slots[i].ptr` for `slots[i].len`
/// `f32`s.
#[kernel_entry]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "gpu-kernel" fn nan_check_kernel(
    slots: *const SlotMeta,
    n_slots: u32,
    work: *const WorkItem,
    n_work: u32,
    q_abs_ref_eff: f32,
    flags: *mut u32,
    max_abs_bits: *mut u32,
    first_bad: *mut u64,
) {
    use crate::builtins::{
        atomic_max_u32, atomic_min_u64, atomic_or_u32, block_dim, block_index, dynamic_shared,
        grid_dim, sync_threads, thread_index,
    };

    let tid = thread_index();
    let threads = block_dim();
    // Shared layout: [u64; threads] first-bad, then [u32; threads] flags, [u32; threads] max.
    // The u64 array comes first so every element is naturally aligned.
    let shared_first = dynamic_shared::<u64>();
    let shared_flags = shared_first.add(threads as usize) as *mut u32;
    let shared_max = shared_flags.add(threads as usize);

    // `item` depends on the block index only, so the loop (and every barrier in it) is
    // block-uniform.
    let mut item = block_index();
    while item < n_work {
        let chunk = *work.add(item as usize);
        let in_range = chunk.slot < n_slots;
        let mut seen_flags = 0u32;
        let mut seen_max = 0u32;
        let mut first = NO_BAD_INDEX;
        if in_range {
            let slot = *slots.add(chunk.slot as usize);
            let threshold = slot.factor * q_abs_ref_eff;
            let data = slot.ptr as *const f32;
            let end = core::cmp::min(chunk.start.saturating_add(chunk.count as u64), slot.len);
            // Consecutive threads read consecutive elements (coalesced). Each thread's indices
            // increase, so its first bad element is the first one it finds.
            let mut i = chunk.start + tid as u64;
            while i < end {
                let x = *data.add(i as usize);
                let bits = element_flags(x, threshold);
                if bits != 0 && seen_flags == 0 {
                    first = i;
                }
                seen_flags |= bits;
                seen_max = core::cmp::max(seen_max, abs_bits(x));
                i += threads as u64;
            }
        }

        *shared_first.add(tid as usize) = first;
        *shared_flags.add(tid as usize) = seen_flags;
        *shared_max.add(tid as usize) = seen_max;
        sync_threads();
        // Tree reduction for any block size: the upper `active - half` entries fold onto the
        // lower ones. Writes go to indices below `half`, reads come from `half` and above, so a
        // step never reads what it writes; the barrier ends each step. Thread 0 folds at every
        // step and ends holding the block's result in registers.
        let mut active = threads;
        while active > 1 {
            let half = active.div_ceil(2);
            if tid + half < active {
                let other = (tid + half) as usize;
                first = core::cmp::min(first, *shared_first.add(other));
                seen_flags |= *shared_flags.add(other);
                seen_max = core::cmp::max(seen_max, *shared_max.add(other));
                *shared_first.add(tid as usize) = first;
                *shared_flags.add(tid as usize) = seen_flags;
                *shared_max.add(tid as usize) = seen_max;
            }
            sync_threads();
            active = half;
        }

        if tid == 0 && in_range {
            let slot = chunk.slot as usize;
            if seen_max != 0 {
                atomic_max_u32(max_abs_bits.add(slot), seen_max);
            }
            if seen_flags != 0 {
                atomic_or_u32(flags.add(slot), seen_flags);
                atomic_min_u64(first_bad.add(slot), first);
            }
        }
        item += grid_dim();
    }
}
