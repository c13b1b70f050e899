//! The fused NaN / max-abs checker's entry. The work layout, the tables, the flag bits and the
//! per-thread accumulator it uses are the device SDK's ([`adamant_device::nan_check`], whose
//! module comment describes the layout), shared with the host that builds the tables and
//! decodes the report.
use adamant_device::kernel_entry;
// The host compiles the entries' descriptors, not their bodies, which these serve.
#[cfg_attr(not(target_arch = "nvptx64"), allow(unused_imports))]
use adamant_device::nan_check::{
    report_q_word, Partial, SlotMeta, WorkItem, REPORT_WORDS_PER_SLOT, SLOT_BF16, SLOT_F32,
};

/// How the checker reads one slot's elements: in aligned 16-byte groups of `LANES`, or one
/// at a time, each widened to the f32 it is (exactly).
#[cfg(target_arch = "nvptx64")]
trait Elements {
    /// One element as stored.
    type Raw: Copy;
    /// The 16-byte group: `LANES` elements.
    type Group: Copy;
    /// Elements per group.
    const LANES: u64;
    /// Lane `k` of `group`.
    fn lane(group: &Self::Group, k: usize) -> Self::Raw;
    /// The f32 value of an element (exact).
    fn widen(x: Self::Raw) -> f32;

    /// Folds in a group whose first element is `index`, in index order (so `first_bad` stays
    /// the smallest bad index this thread saw).
    #[inline(always)]
    fn visit_group(seen: &mut Partial, group: Self::Group, index: u64, threshold: f32) {
        // An index loop (an array's iterator would go through local memory).
        let mut k = 0;
        while (k as u64) < Self::LANES {
            seen.visit(
                Self::widen(Self::lane(&group, k)),
                index + k as u64,
                threshold,
            );
            k += 1;
        }
    }

    /// Element `i` of the slot at `data`.
    ///
    /// # Safety
    /// `data` must address at least `i + 1` elements.
    #[inline(always)]
    unsafe fn one(data: u64, i: u64) -> f32 {
        Self::widen(*(data as *const Self::Raw).add(i as usize))
    }
}

/// A slot of `f32`s.
#[cfg(target_arch = "nvptx64")]
struct Floats;

#[cfg(target_arch = "nvptx64")]
impl Elements for Floats {
    type Raw = f32;
    type Group = adamant_device::vector::F4;
    const LANES: u64 = 4;
    #[inline(always)]
    fn lane(group: &Self::Group, k: usize) -> f32 {
        group.0[k]
    }
    #[inline(always)]
    fn widen(x: f32) -> f32 {
        x
    }
}

/// A slot of 16-bit values: f16 when `F16`, else bf16 (a type each, so each scan's loop has
/// one widening and no branch on the type).
#[cfg(target_arch = "nvptx64")]
struct Halves<const F16: bool>;

#[cfg(target_arch = "nvptx64")]
impl<const F16: bool> Elements for Halves<F16> {
    type Raw = u16;
    type Group = adamant_device::vector::H8;
    const LANES: u64 = 8;
    #[inline(always)]
    fn lane(group: &Self::Group, k: usize) -> u16 {
        group.0[k]
    }
    #[inline(always)]
    fn widen(bits: u16) -> f32 {
        use adamant_device::storage::{bf16_to_f32, f16_to_f32};
        if F16 {
            f16_to_f32(bits)
        } else {
            bf16_to_f32(bits)
        }
    }
}

/// Folds elements `start + tid, start + tid + step, ... < end` of the slot at `data` into
/// `seen` (each thread's indices increase).
///
/// # Safety
/// `data` must address `end` elements of `E`'s type.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn scan<E: Elements>(
    seen: &mut Partial,
    data: u64,
    start: u64,
    end: u64,
    tid: u64,
    step: u64,
    threshold: f32,
) {
    let mut i = start + tid;
    if data % 16 == 0 && start % E::LANES == 0 {
        // 16-byte loads, four in flight per thread: the check is a pure stream, and scalar
        // loads leave too few bytes in flight to reach the copy bandwidth.
        let groups = data as *const E::Group;
        let groups_end = end / E::LANES;
        let mut g = start / E::LANES + tid;
        while g + 3 * step < groups_end {
            let a = *groups.add(g as usize);
            let b = *groups.add((g + step) as usize);
            let c = *groups.add((g + 2 * step) as usize);
            let d = *groups.add((g + 3 * step) as usize);
            E::visit_group(seen, a, E::LANES * g, threshold);
            E::visit_group(seen, b, E::LANES * (g + step), threshold);
            E::visit_group(seen, c, E::LANES * (g + 2 * step), threshold);
            E::visit_group(seen, d, E::LANES * (g + 3 * step), threshold);
            g += 4 * step;
        }
        while g < groups_end {
            E::visit_group(seen, *groups.add(g as usize), E::LANES * g, threshold);
            g += step;
        }
        // The last chunk of a slot may end inside a group.
        i = groups_end * E::LANES + tid;
    } else {
        // Four loads issued before any is used, so each thread keeps several in flight.
        while i + 3 * step < end {
            let x0 = E::one(data, i);
            let x1 = E::one(data, i + step);
            let x2 = E::one(data, i + 2 * step);
            let x3 = E::one(data, i + 3 * step);
            seen.visit(x0, i, threshold);
            seen.visit(x1, i + step, threshold);
            seen.visit(x2, i + 2 * step, threshold);
            seen.visit(x3, i + 3 * step, threshold);
            i += 4 * step;
        }
    }
    while i < end {
        seen.visit(E::one(data, i), i, threshold);
        i += step;
    }
}

/// `seen` merged over the lanes of the warp that reach the call together ([`Partial::merge`](adamant_device::nan_check::Partial::merge)'s
/// or, max and min, one `redux` per word), returned to every lane.
///
/// # Safety
/// A warp-uniform call site (every existing lane of the warp reaches it at once).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn warp_merge(seen: Partial) -> Partial {
    use adamant_device::builtins::{warp_max_u32, warp_min_u64, warp_or_u32};
    Partial {
        flags: warp_or_u32(seen.flags),
        max_abs_bits: warp_max_u32(seen.max_abs_bits),
        first_bad: warp_min_u64(seen.first_bad),
    }
}

/// The checker entry. One launch covers the whole range; see the module comment for the layout.
///
/// - `slots[0..n_slots]`: the range's slots; `work[0..n_work]`: the chunks.
/// - `q_abs_ref_eff`: one `f32`, `max(Q_ABS_REF, 1)`, by which the slots' factors are multiplied.
/// - `flags`, `max_abs_bits` (zeroed) and `first_bad` (filled with [`NO_BAD_INDEX`](adamant_device::nan_check::NO_BAD_INDEX)) have
///   `n_slots` entries each: the accumulators, [`Partial::EMPTY`] between launches (the host
///   initialises them once; the last block resets them).
/// - `arrivals`: one `u32`, 0 between launches (the same).
/// - `report`: [`report_words`](adamant_device::nan_check::report_words)`(n_slots)` words, written by the last block only.
/// - Launch with a 1-D block of any size and `block_dim × SHARED_BYTES_PER_THREAD` bytes of
///   dynamic shared memory.
///
/// # Safety
/// Every pointer must be valid for the counts above; every `slots[i].ptr` for `slots[i].len`
/// elements of its `storage`.
#[kernel_entry]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "gpu-kernel" fn nan_check_kernel(
    #[index] slots: *const SlotMeta,
    n_slots: u32,
    #[index] work: *const WorkItem,
    n_work: u32,
    #[input] q_abs_ref_eff: *const f32,
    #[output] flags: *mut u32,
    #[output] max_abs_bits: *mut u32,
    #[output] first_bad: *mut u64,
    #[output] arrivals: *mut u32,
    #[output] report: *mut u32,
) {
    use adamant_device::builtins::{
        atomic_add_u32_acq_rel, atomic_load_u32, atomic_load_u64, atomic_max_u32, atomic_min_u64,
        atomic_or_u32, block_dim, block_index, dynamic_shared, fence_acq_rel, grid_dim, lane_index,
        sync_threads, thread_index,
    };

    // One f32 in device memory, not an argument: a replayed graph reads the value of its step
    // (a step-state record's, or the word the host wrote for an eager check).
    let q_abs_ref_eff: f32 = *q_abs_ref_eff;
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
        let mut seen = Partial::EMPTY;
        if in_range {
            let slot = *slots.add(chunk.slot as usize);
            let threshold = slot.factor * q_abs_ref_eff;
            let end = core::cmp::min(chunk.start.saturating_add(chunk.count as u64), slot.len);
            // Consecutive threads read consecutive elements (coalesced).
            let (tid, step) = (tid as u64, threads as u64);
            let (data, start) = (slot.ptr, chunk.start);
            // Any code but these two reads as f16 (`SlotMeta::storage`): never past 2 bytes
            // an element.
            match slot.storage {
                SLOT_F32 => scan::<Floats>(&mut seen, data, start, end, tid, step, threshold),
                SLOT_BF16 => {
                    scan::<Halves<false>>(&mut seen, data, start, end, tid, step, threshold)
                }
                _ => scan::<Halves<true>>(&mut seen, data, start, end, tid, step, threshold),
            }
        }

        // The warp's partials in one `redux` per word, then the warps' through shared memory,
        // merged by warp 0: two barriers per chunk instead of one per halving step.
        let warp_seen = warp_merge(seen);
        let warp = (tid / 32) as usize;
        if lane_index() == 0 {
            *shared_first.add(warp) = warp_seen.first_bad;
            *shared_flags.add(warp) = warp_seen.flags;
            *shared_max.add(warp) = warp_seen.max_abs_bits;
        }
        sync_threads();
        if tid < 32 {
            // Warp-uniform: all of warp 0, whose lanes each take one warp's partial.
            let lane = tid as usize;
            let mine = if tid < threads.div_ceil(32) {
                Partial {
                    flags: *shared_flags.add(lane),
                    max_abs_bits: *shared_max.add(lane),
                    first_bad: *shared_first.add(lane),
                }
            } else {
                Partial::EMPTY
            };
            seen = warp_merge(mine);
        }
        // Warp 0 has read every warp's partial before any warp writes the next chunk's.
        sync_threads();

        // One atomic per output word per chunk; the same merge as above, across blocks.
        if tid == 0 && in_range {
            let slot = chunk.slot as usize;
            if seen.max_abs_bits != 0 {
                atomic_max_u32(max_abs_bits.add(slot), seen.max_abs_bits);
            }
            if seen.flags != 0 {
                atomic_or_u32(flags.add(slot), seen.flags);
                atomic_min_u64(first_bad.add(slot), seen.first_bad);
            }
        }
        item += grid_dim();
    }
    // The last block to arrive publishes and resets. Only thread 0 of each block wrote the
    // accumulators (atomics), so its acquire-release arrival orders them before the count; the
    // barrier hands the verdict (and, with the fence, the acquired view) to the whole block.
    if tid == 0 {
        fence_acq_rel();
        let arrived = atomic_add_u32_acq_rel(arrivals, 1) + 1;
        *shared_flags = (arrived == grid_dim()) as u32;
    }
    sync_threads();
    if *shared_flags != 0 {
        fence_acq_rel();
        let mut slot = tid;
        while slot < n_slots {
            let s = slot as usize;
            let seen = Partial {
                flags: atomic_load_u32(flags.add(s)),
                max_abs_bits: atomic_load_u32(max_abs_bits.add(s)),
                first_bad: atomic_load_u64(first_bad.add(s)),
            };
            let out = report.add(REPORT_WORDS_PER_SLOT * s);
            // Four plain stores (an iterator over the array would go through local memory).
            let [w0, w1, w2, w3] = seen.to_words();
            *out = w0;
            *out.add(1) = w1;
            *out.add(2) = w2;
            *out.add(3) = w3;
            *flags.add(s) = Partial::EMPTY.flags;
            *max_abs_bits.add(s) = Partial::EMPTY.max_abs_bits;
            *first_bad.add(s) = Partial::EMPTY.first_bad;
            slot += threads;
        }
        if tid == 0 {
            *report.add(report_q_word(n_slots as usize)) = q_abs_ref_eff.to_bits();
            *arrivals = 0;
        }
    }
}
