//! The step's own protection, inside the graph: before a guarded record advances, one pass over
//! the gradients of the tensors that step with it (`grad_guard_kernel`, in `adamant-kernels`)
//! sums their squares and finds whether any is NaN or infinite. Its last block writes the record's [`StepGuard`]:
//!
//! - **skip on a non-finite gradient** ([`GUARD_SKIP_NON_FINITE`]): the step is skipped. The
//!   advance does not advance `t` (the bias corrections stay right), the kernel's schedule does
//!   not run, and every stepped entry reading the record writes nothing (it sweeps no element,
//!   publishing an empty diagnostics record), so every parameter and state buffer is left bit for
//!   bit as it was. The skip is counted in the guard and flagged in the record's sticky flags.
//! - **global-norm clipping** ([`GUARD_CLIP`]): every `#[grad]` input of the stepped entries is
//!   multiplied by `min(1, max_norm / (norm + 1e-6))`, `norm` the 2-norm of every gradient of the
//!   record's tensors (`torch.nn.utils.clip_grad_norm_`'s coefficient), computed on the device
//!   with no host synchronisation.
//!
//! The sum is accumulated in f64 in a fixed order (each block's elements, then the blocks'
//! partials in block order), so an eager step and its replay compute the same bits. A finite f32
//! squared is finite in f64, so the sum is non-finite exactly when a gradient is.
//!
//! Each guard run stamps the step it guarded ([`StepGuard::epoch`]): a guarded record whose
//! advance or update finds no guard for its step skips that step (flagged
//! [`FLAG_UNGUARDED_STEP`]) rather than stepping with another step's verdict.
//!
//! The record layout and the pure parts ([`finish`], [`verdict`]) are ungated: the host tests them
//! against f64 references.
use crate::step::{count_skip, StepRecord};
// The guard's words are part of the step record, so they are defined with it (the advance reads
// them); they are the guard's API, so they are named here too.
pub use crate::step::{
    advance_skips, StepGuard, FLAG_SKIPPED_STEP, FLAG_UNGUARDED_STEP, GUARD_CLIP, GUARD_LOSS_SCALE,
    GUARD_SKIP_NON_FINITE, LOSS_SCALE_BACKOFF, LOSS_SCALE_GROWTH, NO_NON_FINITE,
};

/// `torch.nn.utils.clip_grad_norm_`'s epsilon: the coefficient is `max_norm / (norm + 1e-6)`.
pub const CLIP_EPSILON: f32 = 1e-6;

/// The guard's verdict on a record, from the sum of squares of its tensors' gradients and the
/// first non-finite one's index ([`NO_NON_FINITE`] for none): run by
/// the last block of `grad_guard_kernel` (and by the host tests). Stamps the step it guards,
/// sets the norm, and either marks the step skipped (counted and flagged) or sets the clip
/// coefficient. An unguarded record (mode 0) is left alone.
#[inline(always)]
pub fn finish(record: &mut StepRecord, sum_of_squares: f64, first_non_finite: u64) {
    let (guard, state) = (&mut record.guard, &mut record.state);
    if guard.mode == 0 {
        return;
    }
    let epoch = state.step.wrapping_add(1);
    guard.epoch = epoch;
    guard.first_non_finite = first_non_finite;
    // Under loss scaling the gradients are the scaled loss's: their norm is divided back.
    let scaling = guard.mode & GUARD_LOSS_SCALE != 0;
    let scale = if scaling { guard.loss_scale } else { 1.0 };
    let norm = (sqrt_f64(sum_of_squares) / scale as f64) as f32;
    guard.norm = norm;
    // NaN and inf both fail `is_finite`; a finite f32 squared never overflows an f64 sum.
    let skips = guard.mode & GUARD_SKIP_NON_FINITE != 0 || scaling;
    if skips && !sum_of_squares.is_finite() {
        guard.skip = 1;
        guard.clip_coef = 1.0;
        count_skip(guard, state, epoch, FLAG_SKIPPED_STEP);
        if scaling {
            // An overflow: the next backward scales by half as much.
            guard.loss_scale = scale * LOSS_SCALE_BACKOFF;
            guard.clean_steps = 0;
            guard.scale_backoffs = guard.scale_backoffs.wrapping_add(1);
        }
        return;
    }
    guard.skip = 0;
    let clip = if guard.mode & GUARD_CLIP != 0 {
        let coef = guard.max_norm / (norm + CLIP_EPSILON);
        // `coef < 1.0` is false for NaN: a NaN norm (clipping without the skip) leaves the
        // gradients as they are, NaN included, as PyTorch's clamp to 1 would not hide them.
        if coef < 1.0 {
            coef
        } else {
            1.0
        }
    } else {
        1.0
    };
    // The multiplier of the scaled gradients: unscale, then clip (exactly PyTorch's
    // `unscale_` then `clip_grad_norm_` when the scale is a power of two, as it stays when it
    // starts as one: both factors are).
    guard.clip_coef = clip / scale;
    if scaling {
        let clean = guard.clean_steps + 1;
        if clean >= guard.growth_interval {
            let grown = scale * LOSS_SCALE_GROWTH;
            // PyTorch keeps the scale where doubling it would overflow.
            if grown.is_finite() {
                guard.loss_scale = grown;
            }
            guard.clean_steps = 0;
        } else {
            guard.clean_steps = clean;
        }
    }
}

/// What a stepped entry (or a schedule) does with `record` after its advance ([`verdict`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Verdict {
    /// Leave everything as it was: a guarded record whose step was skipped, or whose advance
    /// did not take the step the guard ran for.
    pub skip: bool,
    /// The multiplier of the `#[grad]` inputs: the guard's clip coefficient, 1 for an
    /// unguarded record.
    pub grad_coef: f32,
}

/// The guard's verdict on `record`, read word after word as the test needs them (the mode,
/// then the skip, then the epoch against the step): the fewest live registers, at the price of
/// dependent trips to memory. The single-tensor stepped entries take it: their data loads wait
/// for the verdict whatever its form, and with [`verdict_in_one_trip`] ptxas gives them 3 to 5
/// more registers (`curiosity_adam_step_stepped` then needs 68, past the 64 of full
/// occupancy). The schedules take it too (one thread per record).
#[inline(always)]
pub fn verdict(record: &StepRecord) -> Verdict {
    let g = &record.guard;
    Verdict {
        skip: g.mode != 0 && (g.skip != 0 || g.epoch != record.state.step),
        grad_coef: if g.mode != 0 { g.clip_coef } else { 1.0 },
    }
}

/// [`verdict`], with every word read unconditionally and combined without a branch: the
/// guard's first 16 bytes and the step number are independent loads, issued together with the
/// record's other loads and the block's first chunk, so a block pays one trip to memory for
/// them rather than a chain of three. The multi-tensor stepped entries take it: a set of many
/// small tensors is many short blocks, each paying the record's trips before its first chunk
/// (the chain cost the RL set's six launches about 9 µs on an H100).
#[inline(always)]
pub fn verdict_in_one_trip(record: &StepRecord) -> Verdict {
    let g = &record.guard;
    let (mode, clip_coef, skip, epoch) = (g.mode, g.clip_coef, g.skip, g.epoch);
    let step = record.state.step;
    let guarded = mode != 0;
    Verdict {
        skip: guarded & ((skip != 0) | (epoch != step)),
        grad_coef: if guarded { clip_coef } else { 1.0 },
    }
}

/// The f64 square root, correctly rounded (`sqrt.rn.f64` on the device).
#[inline(always)]
fn sqrt_f64(x: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::sqrtf64(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.sqrt()
    }
}

/// Threads per block of `grad_guard_kernel` (a power of two: its reductions halve it).
pub const GUARD_THREADS: u32 = 256;
/// The most blocks `grad_guard_kernel` runs with. Its 62 registers per thread (ptxas 13.0) leave room for
/// four blocks of [`GUARD_THREADS`] on a multiprocessor, so 512 is one wave on an H100 or H200
/// (132 multiprocessors).
pub const GUARD_MAX_BLOCKS: u32 = 512;
/// Dynamic shared memory of `grad_guard_kernel`, in `u64`s: each thread's sum and first index,
/// and the word by which the block's thread 0 tells the others that the block arrived last.
pub const GUARD_SHARED_WORDS: u32 = 2 * GUARD_THREADS + 1;
/// The smallest chunk of the guard's chunk table, in elements: a multiple of four quads per
/// thread (16-byte loads, four in flight), so a chunk of a 16-byte aligned gradient stays
/// aligned. The runtime makes chunks larger (in multiples of this) when a guard's gradients
/// would need more than [`GUARD_MAX_BLOCKS`] chunks: each block then reads one long chunk, with
/// no table read between its loads.
pub const GUARD_CHUNK_QUANTUM: usize = 4 * 4 * GUARD_THREADS as usize;

/// One record a guard pass judges: the chunks of its tensors' gradients (`first_chunk` to
/// `end_chunk`, exclusive, in the chunk table) and the record's index from the record the pass
/// is given.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GuardGroup {
    /// The first chunk of the record's gradients.
    pub first_chunk: u32,
    /// One past its last chunk.
    pub end_chunk: u32,
    /// The record, counted from the one the pass is given.
    pub record: u32,
    /// Zero (keeps the group 16 bytes).
    pub reserved: u32,
}

/// `u32`s per [`GuardGroup`] (the runtime uploads the table as `u32`s).
pub const GUARD_GROUP_WORDS: usize = 4;

impl GuardGroup {
    /// The group as the words the runtime uploads: its memory, word by word.
    pub fn words(&self) -> [u32; GUARD_GROUP_WORDS] {
        [self.first_chunk, self.end_chunk, self.record, self.reserved]
    }
}

/// One chunk of a guard's work: `len` gradient values at device address `data`, the first of
/// them element `origin` of its record's tensors counted one after another. The address is in
/// the chunk itself, so a block reaches its data with one table read.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GuardChunk {
    /// The chunk's first value (of the type `storage` says).
    pub data: u64,
    /// Its index among the record's gradient values.
    pub origin: u64,
    /// How many values.
    pub len: u32,
    /// How the values are stored: [`GUARD_F32`], [`GUARD_BF16`] or [`GUARD_F16`] (a 16-bit
    /// value is widened exactly before it is squared).
    pub storage: u32,
}

/// [`GuardChunk::storage`]: `f32` gradients.
pub const GUARD_F32: u32 = 0;
/// [`GuardChunk::storage`]: bf16 gradients.
pub const GUARD_BF16: u32 = 1;
/// [`GuardChunk::storage`]: f16 gradients (fp16 training with loss scaling).
pub const GUARD_F16: u32 = 2;

/// `u64`s per [`GuardChunk`] (the runtime uploads the table as `u64`s, [`GuardChunk::words`]).
pub const GUARD_CHUNK_WORDS: usize = 3;

impl GuardChunk {
    /// The chunk as the words the runtime uploads: its memory, word by word (`len` in the low
    /// half of the third word, both sides being little-endian).
    pub fn words(&self) -> [u64; GUARD_CHUNK_WORDS] {
        [
            self.data,
            self.origin,
            u64::from(self.len) | (u64::from(self.storage) << 32),
        ]
    }

    /// The 16-bit type of the chunk's values, or None for `f32` (any other code is read as
    /// f16: the runtime writes only the three).
    pub fn half(&self) -> Option<crate::storage::Half> {
        match self.storage {
            GUARD_F32 => None,
            GUARD_BF16 => Some(crate::storage::Half::Bf16),
            _ => Some(crate::storage::Half::F16),
        }
    }
}

/// The exponent bits of an `f32`: all set for NaN and the infinities, and only for them.
const EXPONENT: u32 = 0x7f80_0000;

/// Whether any of `q`'s four values is NaN or infinite (integer tests, no branch per value).
#[inline(always)]
pub fn any_non_finite(q: crate::vector::F4) -> bool {
    let [a, b, c, d] = q.0.map(|x| x.to_bits() & EXPONENT);
    (a == EXPONENT) | (b == EXPONENT) | (c == EXPONENT) | (d == EXPONENT)
}

/// One thread's running verdict: its sum of squares (f64, in the order it reads) and its first
/// non-finite element's index. Ungated: the host tests it against an f64 reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seen {
    /// The sum of the squares seen so far.
    pub sum: f64,
    /// The smallest index of a non-finite value seen so far, or [`NO_NON_FINITE`].
    pub first: u64,
}

impl Seen {
    /// Nothing seen.
    pub const EMPTY: Seen = Seen {
        sum: 0.0,
        first: NO_NON_FINITE,
    };

    /// One element, at index `at`.
    #[inline(always)]
    pub fn add(&mut self, x: f32, at: u64) {
        if x.to_bits() & EXPONENT == EXPONENT && at < self.first {
            self.first = at;
        }
        let x = x as f64;
        self.sum += x * x;
    }

    /// Four consecutive elements, the first at `at`. The index search runs only for a quad
    /// that holds a non-finite value.
    #[inline(always)]
    pub fn add4(&mut self, q: crate::vector::F4, at: u64) {
        if any_non_finite(q) {
            let mut k = 0;
            while k < 4 {
                self.add(q.0[k], at + k as u64);
                k += 1;
            }
            return;
        }
        self.add_finite(q);
    }

    /// Four values known to be finite: their squares, in order.
    #[inline(always)]
    pub fn add_finite(&mut self, q: crate::vector::F4) {
        let [a, b, c, d] = q.0.map(|x| x as f64);
        self.sum += a * a;
        self.sum += b * b;
        self.sum += c * c;
        self.sum += d * d;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::StepState;

    fn guarded(mode: u32, max_norm: f32, step: u32) -> StepRecord {
        let mut record = StepRecord::default();
        record.guard.mode = mode;
        record.guard.max_norm = max_norm;
        record.state.step = step;
        record
    }

    /// The quad path (an integer test per quad, the index search only for a quad holding a
    /// non-finite value) equals the element path and an f64 reference.
    #[test]
    fn quads_see_what_elements_see() {
        use crate::vector::F4;
        let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
        for bad_at in [None, Some(0usize), Some(3), Some(5), Some(13)] {
            let mut xs: Vec<f32> = (0..16).map(|i| (i as f32 - 7.5) * 0.37).collect();
            xs[9] = f32::MAX; // finite: counted, never "non-finite"
            if let Some(at) = bad_at {
                xs[at] = specials[at % 3];
                xs[15] = f32::NAN; // a later one does not move the first
            }
            let (mut quads, mut elements) = (Seen::EMPTY, Seen::EMPTY);
            for (q, four) in xs.chunks(4).enumerate() {
                quads.add4(F4([four[0], four[1], four[2], four[3]]), 100 + 4 * q as u64);
            }
            for (i, &x) in xs.iter().enumerate() {
                elements.add(x, 100 + i as u64);
            }
            let reference: f64 = xs.iter().map(|&x| (x as f64) * (x as f64)).sum();
            let first = bad_at.map_or(NO_NON_FINITE, |at| 100 + at as u64);
            assert_eq!(quads.first, first, "{bad_at:?}");
            assert_eq!(elements.first, first);
            if bad_at.is_some() {
                assert!(!quads.sum.is_finite() && !elements.sum.is_finite());
            } else {
                assert_eq!(quads.sum.to_bits(), elements.sum.to_bits());
                assert!((quads.sum - reference).abs() <= 1e-12 * reference);
            }
        }
    }

    /// The host uploads both tables as `words()`: they are the structs' memory, word by word,
    /// so the device reads what the host meant.
    #[test]
    fn the_tables_words_are_their_memory() {
        let chunk = GuardChunk {
            data: 0x1122_3344_5566_7788,
            origin: 0x99,
            len: 0xdead_beef,
            storage: 7,
        };
        // SAFETY: both are plain data of the same size (checked by the transmute).
        let memory: [u64; GUARD_CHUNK_WORDS] = unsafe { core::mem::transmute(chunk) };
        assert_eq!(chunk.words(), memory);
        let group = GuardGroup {
            first_chunk: 3,
            end_chunk: 9,
            record: 2,
            reserved: 5,
        };
        // SAFETY: as above.
        let memory: [u32; GUARD_GROUP_WORDS] = unsafe { core::mem::transmute(group) };
        assert_eq!(group.words(), memory);
    }

    /// Dynamic loss scaling against a model of PyTorch's `GradScaler` written from its
    /// documented rule (`_amp_update_scale_`): an overflow skips the step, halves the scale and
    /// resets the count of clean steps; `growth_interval` clean steps in a row double it (kept
    /// where doubling overflows). The gradients' multiplier unscales and clips, the reported
    /// norm is unscaled, and `t` is not advanced past a skip (the skip count and flag say so).
    #[test]
    fn loss_scaling_follows_the_grad_scaler_rule() {
        let mode = GUARD_LOSS_SCALE | GUARD_CLIP;
        let (interval, max_norm) = (3u32, 0.5f32);
        let mut r = guarded(mode, max_norm, 0);
        r.guard.loss_scale = 2f32.powi(124);
        r.guard.growth_interval = interval;
        // The model.
        let (mut scale, mut tracker, mut skipped) = (2f64.powi(124), 0u32, 0u32);
        let overflows = [2usize, 3, 9, 20];
        for step in 0..40usize {
            // Unscaled gradient norm 0.3 or 2.0 (clipped), scaled by the current scale.
            let true_norm = if step % 5 == 0 { 2.0f64 } else { 0.3 };
            let sum = if overflows.contains(&step) {
                f64::INFINITY
            } else {
                (true_norm * scale).powi(2)
            };
            r.state.step = step as u32 - skipped.min(step as u32);
            finish(&mut r, sum, NO_NON_FINITE);
            if overflows.contains(&step) {
                assert_eq!(r.guard.skip, 1, "step {step}");
                scale *= 0.5;
                tracker = 0;
                skipped += 1;
            } else {
                assert_eq!(r.guard.skip, 0, "step {step}");
                let clip = (max_norm as f64 / (true_norm + 1e-6)).min(1.0);
                assert_eq!(r.guard.norm, true_norm as f32, "step {step}");
                let want = clip as f32 / scale as f32;
                let rel = ((r.guard.clip_coef - want) / want).abs();
                assert!(rel < 1e-6, "step {step}: {} vs {want}", r.guard.clip_coef);
                tracker += 1;
                if tracker == interval {
                    if (scale * 2.0) < f32::MAX as f64 {
                        scale *= 2.0;
                    }
                    tracker = 0;
                }
            }
            assert_eq!(r.guard.loss_scale as f64, scale, "step {step}");
            assert_eq!(r.guard.clean_steps, tracker, "step {step}");
        }
        assert_eq!(r.guard.scale_backoffs, overflows.len() as u32);
        assert_eq!(r.guard.skipped_steps, overflows.len() as u32);
        // Started at 2^124, the scale reached the top power of two and stayed there (2^128
        // overflows f32).
        assert_eq!(r.guard.loss_scale, 2f32.powi(127));
    }

    /// Loss scaling skips an overflow even when the record does not ask for the skip itself:
    /// a step from overflowed gradients is never taken.
    #[test]
    fn loss_scaling_always_skips_an_overflow() {
        let mut r = guarded(GUARD_LOSS_SCALE, 0.0, 4);
        r.guard.loss_scale = 1024.0;
        r.guard.growth_interval = 10;
        finish(&mut r, f64::NAN, 17);
        assert_eq!(
            (r.guard.skip, r.guard.loss_scale, r.guard.first_non_finite),
            (1, 512.0, 17)
        );
        finish(&mut r, 4.0 * 512.0 * 512.0, NO_NON_FINITE);
        assert_eq!(
            (r.guard.skip, r.guard.norm, r.guard.clip_coef),
            (0, 2.0, 1.0 / 512.0)
        );
    }

    #[test]
    fn the_guard_is_64_bytes() {
        assert_eq!(core::mem::size_of::<StepGuard>(), 64);
    }

    #[test]
    fn a_finite_sum_sets_torchs_clip_coefficient() {
        let both = GUARD_SKIP_NON_FINITE | GUARD_CLIP;
        for (sum, max_norm) in [(16.0f64, 1.0f32), (16.0, 10.0), (0.0, 1.0), (1e-20, 0.5)] {
            let mut r = guarded(both, max_norm, 7);
            finish(&mut r, sum, NO_NON_FINITE);
            let norm = sum.sqrt() as f32;
            let want = (max_norm / (norm + 1e-6)).min(1.0);
            assert_eq!(
                (r.guard.norm, r.guard.clip_coef),
                (norm, want),
                "{sum} {max_norm}"
            );
            assert_eq!(
                (r.guard.skip, r.guard.epoch, r.guard.skipped_steps),
                (0, 8, 0)
            );
            // The f64 reference: clipped iff norm > max_norm (up to the epsilon).
            let reference = (max_norm as f64 / (sum.sqrt() + 1e-6)).min(1.0);
            assert!((r.guard.clip_coef as f64 - reference).abs() <= 2e-7 * reference);
        }
        // Without clipping the coefficient is 1 whatever the norm.
        let mut r = guarded(GUARD_SKIP_NON_FINITE, 0.0, 3);
        finish(&mut r, 1e30, NO_NON_FINITE);
        assert_eq!(r.guard.clip_coef, 1.0);
    }

    #[test]
    fn a_non_finite_gradient_skips_the_step_and_counts_it() {
        for sum in [f64::NAN, f64::INFINITY] {
            let mut r = guarded(GUARD_SKIP_NON_FINITE | GUARD_CLIP, 1.0, 499);
            finish(&mut r, sum, 42);
            assert_eq!(r.guard.skip, 1);
            assert_eq!(r.guard.first_non_finite, 42);
            assert_eq!((r.guard.skipped_steps, r.guard.last_skipped_step), (1, 500));
            assert_eq!(r.state.flags & FLAG_SKIPPED_STEP, FLAG_SKIPPED_STEP);
            // The advance does not take the step, and the entries see it skipped.
            assert!(advance_skips(&mut r));
            assert!(verdict(&r).skip);
            assert_eq!(r.state.step, 499);
        }
        // Clipping alone (no skip): the NaN reaches the update, not hidden by a coefficient.
        let mut r = guarded(GUARD_CLIP, 1.0, 0);
        finish(&mut r, f64::NAN, 3);
        assert_eq!((r.guard.skip, r.guard.clip_coef), (0, 1.0));
    }

    #[test]
    fn a_step_without_its_guard_run_is_skipped_and_flagged() {
        let mut r = guarded(GUARD_SKIP_NON_FINITE, 0.0, 10);
        finish(&mut r, 1.0, NO_NON_FINITE);
        assert!(!advance_skips(&mut r));
        r.state.step += 1; // the advance took step 11
        assert!(!verdict(&r).skip);
        // Step 12 without a guard run: the advance refuses it, the entries skip.
        assert!(advance_skips(&mut r));
        assert_eq!(r.state.flags & FLAG_UNGUARDED_STEP, FLAG_UNGUARDED_STEP);
        assert_eq!((r.guard.skipped_steps, r.guard.last_skipped_step), (1, 12));
        assert_eq!(r.state.step, 11);
        assert!(verdict(&r).skip, "the entries leave everything as it was");
        // The next guard run clears the verdict for its own step.
        finish(&mut r, 4.0, NO_NON_FINITE);
        assert!(!advance_skips(&mut r));
        r.state.step += 1;
        assert!(!verdict(&r).skip);
    }

    #[test]
    fn an_unguarded_record_is_untouched() {
        let mut r = guarded(0, 0.0, 5);
        r.guard.skip = 1; // whatever the guard words hold
        finish(&mut r, f64::NAN, 3);
        assert_eq!(r.guard.epoch, 0);
        assert!(!advance_skips(&mut r));
        assert!(!verdict(&r).skip);
        assert_eq!(verdict(&r).grad_coef, 1.0);
    }

    #[test]
    fn the_verdict_is_the_guards_rule_for_every_combination() {
        // The rule as the first version wrote it, with branches.
        let rule = |r: &StepRecord| {
            r.guard.mode != 0 && (r.guard.skip != 0 || r.guard.epoch != r.state.step)
        };
        for mode in [
            0,
            GUARD_SKIP_NON_FINITE,
            GUARD_CLIP,
            GUARD_SKIP_NON_FINITE | GUARD_CLIP,
        ] {
            for skip in [0, 1, 7] {
                for epoch in [4, 5, 6] {
                    let mut r = guarded(mode, 1.0, 5);
                    (r.guard.skip, r.guard.epoch, r.guard.clip_coef) = (skip, epoch, 0.25);
                    for v in [verdict(&r), verdict_in_one_trip(&r)] {
                        assert_eq!(v.skip, rule(&r), "mode {mode} skip {skip} epoch {epoch}");
                        let coef = if mode == 0 { 1.0 } else { 0.25 };
                        assert_eq!(v.grad_coef, coef, "mode {mode}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_words_an_entry_reads_share_one_16_byte_group() {
        use core::mem::offset_of;
        let guard = offset_of!(StepRecord, guard);
        assert_eq!(guard % 16, 0);
        for word in [
            offset_of!(StepGuard, mode),
            offset_of!(StepGuard, clip_coef),
            offset_of!(StepGuard, skip),
            offset_of!(StepGuard, epoch),
        ] {
            assert!(word < 16, "{word}");
        }
        // The step number shares the group of the betas the Adam entries read.
        let step = offset_of!(StepRecord, state) + offset_of!(StepState, step);
        assert_eq!(
            step / 16,
            (offset_of!(StepRecord, state) + offset_of!(StepState, beta1)) / 16
        );
    }
}
