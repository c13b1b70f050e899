//! The step guard's entry: one pass over the gradients of the guarded records' tensors, whose
//! last block writes each record's verdict and, for a fused step, advances the records. The
//! record layout, the chunk tables and the verdict arithmetic it uses are the device SDK's
//! ([`adamant_device::guard`]), shared with the host that builds the tables and tests the
//! arithmetic.
// The host compiles the entries' descriptors, not their bodies, which these serve.
#[cfg_attr(not(target_arch = "nvptx64"), allow(unused_imports))]
use adamant_device::guard::{any_non_finite, finish, GuardChunk, GuardGroup, Seen};
use adamant_device::kernel_entry;
#[cfg_attr(not(target_arch = "nvptx64"), allow(unused_imports))]
use adamant_device::step::StepRecord;

/// The block's sum (in a fixed tree order) and smallest first index, on thread 0 ([`Seen::EMPTY`]
/// on the others). Every thread of the block must call it.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn block_reduce(sums: *mut u64, firsts: *mut u64, seen: Seen) -> Seen {
    use adamant_device::builtins::{block_dim, sync_threads, thread_index};
    let tid = thread_index() as usize;
    *sums.add(tid) = seen.sum.to_bits();
    *firsts.add(tid) = seen.first;
    sync_threads();
    let mut half = (block_dim() / 2) as usize;
    while half > 0 {
        if tid < half {
            let (a, b) = (tid, tid + half);
            *sums.add(a) = (f64::from_bits(*sums.add(a)) + f64::from_bits(*sums.add(b))).to_bits();
            if *firsts.add(b) < *firsts.add(a) {
                *firsts.add(a) = *firsts.add(b);
            }
        }
        sync_threads();
        half /= 2;
    }
    // Only thread 0 reads the result: the others may already be writing the next reduction's
    // words (their own, never word 0) while it reads.
    if tid == 0 {
        Seen {
            sum: f64::from_bits(*sums),
            first: *firsts,
        }
    } else {
        Seen::EMPTY
    }
}

/// One pass over the gradients of one or more guarded records' tensors: `chunks` cuts them
/// into work ([`GuardChunk`]s of a multiple of [`GUARD_CHUNK_QUANTUM`](adamant_device::guard::GUARD_CHUNK_QUANTUM) values, one tensor each,
/// the chunks of a record together) and `groups` says which chunks are whose. Every block sums
/// the squares of each of its chunks' values in f64 and finds its first non-finite one
/// (`partials`: two words per chunk); the block that arrives last (the only one, for a grid of
/// one block, which needs no counter) combines the partials, one record per warp in a fixed
/// order, writes each record's guard ([`finish`], `records` being the first record's address)
/// and resets the arrival counter. Launched with at most [`GUARD_MAX_BLOCKS`](adamant_device::guard::GUARD_MAX_BLOCKS) blocks of
/// [`GUARD_THREADS`](adamant_device::guard::GUARD_THREADS) threads and [`GUARD_SHARED_WORDS`](adamant_device::guard::GUARD_SHARED_WORDS) `u64`s of dynamic shared memory.
///
/// With `n_advance > 0` the last block then advances the first `n_advance` records from
/// `records` itself, as [`crate::step::step_advance_kernel`] would (publishing each to
/// `mirror`): a guarded step needs no advance node of its own, and the advance sees the
/// verdicts just written, in the same block, after a barrier.
///
/// The order of every sum depends only on the tables and the block size, which the runtime
/// fixes when it builds the guard: an eager step and its replay compute the same bits.
///
/// The records, the partials and the counter are declared as integer words (a
/// `#[kernel_entry]` writes report words through its `#[output]`s); the runtime binds only
/// its own here.
#[kernel_entry]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "gpu-kernel" fn grad_guard_kernel(
    #[index] chunks: *const GuardChunk,
    n_chunks: u32,
    #[index] groups: *const GuardGroup,
    n_groups: u32,
    #[output] partials: *mut u64,
    #[output] arrivals: *mut u32,
    #[output] records: *mut u32,
    n_advance: u32,
    #[output] mirror: *mut u32,
) {
    use adamant_device::builtins::{
        atomic_add_u32_acq_rel, atomic_load_u64, block_dim, block_index, dynamic_shared,
        fence_acq_rel, grid_dim, lane_index, sync_threads, thread_index,
    };
    use adamant_device::vector::F4;
    let tid = thread_index();
    let threads = block_dim();
    let shared = dynamic_shared::<u64>();
    let (sums, firsts) = (shared, shared.add(threads as usize));
    let last = shared.add(2 * threads as usize);
    // `c` depends on the block index only: the loop, and the barriers in it, are block-uniform.
    let mut c = block_index();
    while c < n_chunks {
        let chunk = *chunks.add(c as usize);
        let data = chunk.data as *const f32;
        let (origin, len) = (chunk.origin, chunk.len as usize);
        let step = threads as usize;
        let mut seen = Seen::EMPTY;
        let mut i = tid as usize;
        if let Some(half) = chunk.half() {
            // 16-bit gradients: groups of four (8-byte loads) when aligned, each widened exactly.
            let data16 = chunk.data as *const u16;
            if (data16 as usize) % 8 == 0 {
                let quads = data16 as *const adamant_device::vector::H4;
                let n_quads = len / 4;
                let mut q = tid as usize;
                while q < n_quads {
                    let h = *quads.add(q);
                    let f = F4([
                        half.to_f32(h.0[0]),
                        half.to_f32(h.0[1]),
                        half.to_f32(h.0[2]),
                        half.to_f32(h.0[3]),
                    ]);
                    seen.add4(f, origin + 4 * q as u64);
                    q += step;
                }
                i = 4 * n_quads + tid as usize;
            }
            while i < len {
                seen.add(half.to_f32(*data16.add(i)), origin + i as u64);
                i += step;
            }
            // Skip the f32 paths below (`len` is no f32 count here).
            i = usize::MAX;
        } else if (data as usize) % 16 == 0 {
            // 16-byte loads, four in flight per thread: a pure stream, which scalar loads
            // would leave short of the copy bandwidth.
            let quads = data as *const F4;
            let n_quads = len / 4;
            let mut q = tid as usize;
            while q + 3 * step < n_quads {
                let a = *quads.add(q);
                let b = *quads.add(q + step);
                let c = *quads.add(q + 2 * step);
                let d = *quads.add(q + 3 * step);
                // One test for the sixteen values: no branch between the loads, which stay in
                // flight together.
                let bad =
                    any_non_finite(a) | any_non_finite(b) | any_non_finite(c) | any_non_finite(d);
                if bad {
                    seen.add4(a, origin + 4 * q as u64);
                    seen.add4(b, origin + 4 * (q + step) as u64);
                    seen.add4(c, origin + 4 * (q + 2 * step) as u64);
                    seen.add4(d, origin + 4 * (q + 3 * step) as u64);
                } else {
                    seen.add_finite(a);
                    seen.add_finite(b);
                    seen.add_finite(c);
                    seen.add_finite(d);
                }
                q += 4 * step;
            }
            while q < n_quads {
                seen.add4(*quads.add(q), origin + 4 * q as u64);
                q += step;
            }
            // A gradient's last chunk may end inside a quad.
            i = 4 * n_quads + tid as usize;
        }
        while i < len {
            seen.add(*data.add(i), origin + i as u64);
            i += step;
        }
        let chunk_seen = block_reduce(sums, firsts, seen);
        if tid == 0 {
            *partials.add(2 * c as usize) = chunk_seen.sum.to_bits();
            *partials.add(2 * c as usize + 1) = chunk_seen.first;
        }
        c += grid_dim();
    }
    // A grid of one block is its own last block: its thread 0 wrote every partial, which the
    // barrier below makes visible to the block, with no fence or counter.
    if grid_dim() > 1 {
        if tid == 0 {
            fence_acq_rel();
            let arrived = atomic_add_u32_acq_rel(arrivals, 1) + 1;
            *last = (arrived == grid_dim()) as u64;
        }
        sync_threads();
        // Block-uniform: every thread of the block read the same word after the barrier.
        if *last == 0 {
            return;
        }
        fence_acq_rel();
    } else {
        sync_threads();
    }
    // The last block judges the records, one per warp at a time: lane l combines the record's
    // chunks l, l + 32, ... in that order, then the warp's fixed tree. Every warp runs every
    // round (the barriers stay block-uniform); a warp past the last record adds nothing.
    let (warp, lane) = ((tid / 32) as usize, lane_index() as usize);
    let warps = (threads / 32) as usize;
    let mut round = 0;
    while round < n_groups as usize {
        let g = round + warp;
        let mut all = Seen::EMPTY;
        if g < n_groups as usize {
            let group = *groups.add(g);
            let mut k = group.first_chunk as usize + lane;
            while k < group.end_chunk as usize {
                all.sum += f64::from_bits(atomic_load_u64(partials.add(2 * k)));
                let at = atomic_load_u64(partials.add(2 * k + 1));
                all.first = if at < all.first { at } else { all.first };
                k += 32;
            }
        }
        let total = warp_reduce(sums, firsts, all);
        if lane == 0 && g < n_groups as usize {
            let group = *groups.add(g);
            let record = (records as *mut StepRecord).add(group.record as usize);
            finish(&mut *record, total.sum, total.first);
        }
        round += warps;
    }
    if tid == 0 {
        *arrivals = 0;
    }
    if n_advance > 0 {
        // The verdicts above were written by other threads of this block.
        sync_threads();
        let mut i = tid as usize;
        while i < n_advance as usize {
            adamant_device::step::advance_record(records, mirror, i);
            i += threads as usize;
        }
    }
}

/// Each warp's sum (in a fixed tree order) and smallest first index, on its lane 0
/// ([`Seen::EMPTY`] on the others), through the warp's 32 words of `sums` and `firsts`. Every
/// thread of the block must call it (its barriers are the block's).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn warp_reduce(sums: *mut u64, firsts: *mut u64, seen: Seen) -> Seen {
    use adamant_device::builtins::{lane_index, sync_threads, thread_index};
    let tid = thread_index() as usize;
    let (base, lane) = (tid - lane_index() as usize, lane_index() as usize);
    sync_threads(); // the words' last readers (the previous reduction) are done
    *sums.add(tid) = seen.sum.to_bits();
    *firsts.add(tid) = seen.first;
    sync_threads();
    let mut half = 16;
    while half > 0 {
        if lane < half {
            let (a, b) = (base + lane, base + lane + half);
            *sums.add(a) = (f64::from_bits(*sums.add(a)) + f64::from_bits(*sums.add(b))).to_bits();
            if *firsts.add(b) < *firsts.add(a) {
                *firsts.add(a) = *firsts.add(b);
            }
        }
        sync_threads();
        half /= 2;
    }
    if lane == 0 {
        Seen {
            sum: f64::from_bits(*sums.add(base)),
            first: *firsts.add(base),
        }
    } else {
        Seen::EMPTY
    }
}
