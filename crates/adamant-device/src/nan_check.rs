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
//! No memset or copy around the launch: the block that finishes last (an arrival counter) copies
//! the accumulated words into the report (page-locked host memory mapped into the device's
//! address space, which the host reads after the check's event) and resets the accumulators and
//! the counter for the next launch. A check is one kernel node in a graph.
//!
//! The layout types and flag bits are ungated: the host builds the tables with the same
//! definitions the device reads, and decodes the flags with the same constants.

/// Flag bit: a NaN, `+inf` or `-inf` was seen in the slot.
pub const FLAG_NON_FINITE: u32 = 1 << 0;
/// Flag bit: a finite value with `|x| > threshold` was seen in the slot (non-finite values set
/// only [`FLAG_NON_FINITE`], so this bit means "finite but too large": the early warning).
pub const FLAG_OVER_THRESHOLD: u32 = 1 << 1;
/// Every flag bit the kernel can set.
pub const FLAG_ALL: u32 = FLAG_NON_FINITE | FLAG_OVER_THRESHOLD;
/// The first-bad-index word of a slot where nothing was flagged. The host fills that buffer
/// with `0xFF` bytes once; the kernel only ever lowers it (atomic min), and its last block
/// resets it.
pub const NO_BAD_INDEX: u64 = u64::MAX;
/// Words per slot in the report the last block publishes ([`Partial::to_words`]).
pub const REPORT_WORDS_PER_SLOT: usize = 4;

/// The report's length in `u32` words for `n_slots` slots: every slot's
/// [`REPORT_WORDS_PER_SLOT`] words, then the bits of the `q_abs_ref_eff` the thresholds used.
pub const fn report_words(n_slots: usize) -> usize {
    report_q_word(n_slots) + 1
}

/// Where in the report the bits of `q_abs_ref_eff` are: right after the slots' words.
pub const fn report_q_word(n_slots: usize) -> usize {
    REPORT_WORDS_PER_SLOT * n_slots
}
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
    /// The threshold is `factor × q_abs_ref_eff` (read from device memory, so a new `Q_ABS_REF` needs
    /// no re-upload); [`NON_FINITE_ONLY`] for slots without a max-abs check.
    pub factor: f32,
    /// How the slot's elements are stored: [`SLOT_F32`], [`SLOT_BF16`] or [`SLOT_F16`]
    /// ([`slot_storage`] of the buffer's storage). A 16-bit value is widened to f32 exactly
    /// before it is judged, so its flags, largest `|x|` and first bad index are those of the
    /// stored values, and `len` and the work items count elements of this type.
    pub storage: u32,
}

/// [`SlotMeta::storage`] of a slot of `f32`s.
pub const SLOT_F32: u32 = 0;
/// [`SlotMeta::storage`] of a slot of bf16 bits.
pub const SLOT_BF16: u32 = 1;
/// [`SlotMeta::storage`] of a slot of f16 bits.
pub const SLOT_F16: u32 = 2;

/// The [`SlotMeta::storage`] code of a buffer stored as `storage`; `None` for a storage whose
/// elements are not values by themselves (a bf16 remainder is half of a master), which no slot
/// can watch. The host builds the codes with this and the kernel branches on them:
/// one mapping for both. The kernel reads any code other than [`SLOT_F32`] and [`SLOT_BF16`]
/// as f16, never as f32, so it never reads past a 16-bit slot's `2 × len` bytes. (Host only:
/// the storage types are the host's descriptors'.)
#[cfg(not(target_arch = "nvptx64"))]
pub const fn slot_storage(storage: crate::abi::Storage) -> Option<u32> {
    use crate::abi::Storage;
    match storage {
        Storage::F32 => Some(SLOT_F32),
        Storage::Bf16 => Some(SLOT_BF16),
        Storage::F16 => Some(SLOT_F16),
        Storage::Bf16Remainder => None,
    }
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

/// What a thread, a block or a slot has seen so far: the three output words before they are
/// published. The kernel folds elements into it with [`Partial::visit`] and merges partials with
/// [`Partial::merge`] (the shared-memory reduction); the device atomics apply the same merge to
/// the per-slot words. Ungated so host tests run the very same code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partial {
    pub flags: u32,
    pub max_abs_bits: u32,
    pub first_bad: u64,
}

impl Partial {
    /// Nothing seen: the values the host resets the output words to.
    pub const EMPTY: Partial = Partial {
        flags: 0,
        max_abs_bits: 0,
        first_bad: NO_BAD_INDEX,
    };

    /// Folds in element `index` with value `x`. A thread visits its elements in increasing index
    /// order, so the first one that sets a flag is its first bad index.
    #[inline(always)]
    pub fn visit(&mut self, x: f32, index: u64, threshold: f32) {
        let bits = element_flags(x, threshold);
        if bits != 0 && self.flags == 0 {
            self.first_bad = index;
        }
        self.flags |= bits;
        self.max_abs_bits = core::cmp::max(self.max_abs_bits, abs_bits(x));
    }

    /// The slot's words in the report: flags, max-abs bits, then the first bad index's low and
    /// high words. The kernel writes these and the host reads them back with
    /// [`Partial::from_words`]: one layout for both.
    #[inline(always)]
    pub fn to_words(self) -> [u32; REPORT_WORDS_PER_SLOT] {
        [
            self.flags,
            self.max_abs_bits,
            self.first_bad as u32,
            (self.first_bad >> 32) as u32,
        ]
    }

    /// The partial [`Partial::to_words`] wrote.
    #[inline(always)]
    pub fn from_words(words: [u32; REPORT_WORDS_PER_SLOT]) -> Partial {
        Partial {
            flags: words[0],
            max_abs_bits: words[1],
            first_bad: words[2] as u64 | ((words[3] as u64) << 32),
        }
    }

    /// Combines two partials of disjoint elements (or, max, min: order-independent).
    #[inline(always)]
    pub fn merge(&mut self, other: Partial) {
        self.flags |= other.flags;
        self.max_abs_bits = core::cmp::max(self.max_abs_bits, other.max_abs_bits);
        self.first_bad = core::cmp::min(self.first_bad, other.first_bad);
    }
}
