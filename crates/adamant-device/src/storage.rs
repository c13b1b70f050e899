//! 16-bit storage of a value (issue 26): f32 to bf16 or f16, rounded to nearest even or
//! stochastically, and the rule that keeps the clamp true of what is stored.
//!
//! The clamp of an f32 update and a rounding after it do not compose: a bound that the storage
//! type cannot represent (0.08 in bf16) lies between two of its values, and rounding a clamped
//! value to the nearer or a random one of them may store the one past the bound; in f16 anything
//! from 65,520 up rounds to infinity. [`store_bf16`] and [`store_f16`] clamp, round, and then, if
//! the rounded value is past the bound, take the neighbour toward zero: the largest value of the
//! storage type within the bound. So every value they return satisfies `|stored| <= bound` or is
//! NaN (kept visible, as [`weight_clamp`] keeps it).
//!
//! Stochastic rounding is counter-based ([`stochastic_word`]): the random word is a hash of the
//! seed, the step, the tensor ([`rounding_key`]) and the element, so an eager step and its replay round alike, a
//! resumed run rounds as the uninterrupted one, and no generator state lives on the device.
//!
//! Everything is integer arithmetic on the bit patterns, the same source on the host (where the
//! CPU tests check it against the `half` crate and against an independent model) and on the
//! device.
use crate::clamp::weight_clamp;

/// How a value is rounded to its 16-bit storage type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounding {
    /// To the nearest value, ties to even (IEEE round-to-nearest-even).
    Nearest,
    /// Down or up in magnitude with probabilities proportional to the distances, decided by
    /// the low 16 bits of this random word ([`stochastic_word`]): the resolution of the
    /// probability is 2^-16 of a step.
    Stochastic(u32),
}

/// A 16-bit storage type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Half {
    /// bfloat16: f32's sign and exponent, 7 mantissa bits.
    Bf16,
    /// IEEE binary16: 5 exponent bits (largest finite 65,504), 10 mantissa bits.
    F16,
}

impl Half {
    /// `x` clamped to `bound` (as [`weight_clamp`]: `bound <= 0` disables it), stored in this
    /// type with `rounding`: `|self.to_f32(result)| <= bound` whenever `bound > 0` and `x` is not
    /// NaN (a rounded value past the bound is replaced by its neighbour toward zero).
    ///
    /// Computed as `min(round(|x|), limit)` with [`Self::limit`], the sign put back and a NaN
    /// kept: the same bits as clamping in f32, rounding, and stepping back a rounding past the
    /// bound (the module's comment says why), in fewer instructions per element, since the
    /// limit depends on the bound alone. Both roundings are monotone in `|x|` (a stochastic one
    /// for a fixed word too) and leave a value of the type unchanged, so with `L` the largest
    /// value within the bound: a `|x|` past the bound rounds to `L` or above, and one within it
    /// rounds to at most the value of the type just above it, which the hold takes back to
    /// `L` when it is past the bound.
    #[inline(always)]
    pub fn store(self, x: f32, bound: f32, rounding: Rounding) -> u16 {
        let bits = x.to_bits();
        let sign = ((bits >> 16) as u16) & SIGN_16;
        let magnitude = self.round(f32::from_bits(bits & 0x7FFF_FFFF), rounding);
        // A NaN rounds to the quiet NaN, which the limit must not take away.
        let held = if x.is_nan() {
            magnitude
        } else {
            core::cmp::min(magnitude, self.limit(bound))
        };
        sign | held
    }

    /// The largest magnitude (bits) of this type within `bound`: `bound` rounded to nearest,
    /// then its neighbour toward zero if that is past the bound (in f16, 65,504 for any bound
    /// from there up). Every magnitude (`0x7FFF`) while the clamp is off (`bound <= 0` or NaN,
    /// as [`weight_clamp`] decides).
    #[inline(always)]
    pub fn limit(self, bound: f32) -> u16 {
        // `!(bound > 0.0)`: a NaN bound disables the clamp, as in `weight_clamp`.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(bound > 0.0) {
            return 0x7FFF;
        }
        within(self.round(bound, Rounding::Nearest), bound, |b| {
            self.to_f32(b)
        })
    }

    /// `x` rounded to this type ([`bf16_round`], [`f16_round`]), without a clamp.
    #[inline(always)]
    pub fn round(self, x: f32, rounding: Rounding) -> u16 {
        match self {
            Half::Bf16 => bf16_round(x, rounding),
            Half::F16 => f16_round(x, rounding),
        }
    }

    /// The bits of `x`, a value of this type (one [`Self::to_f32`] gave: exact, NaN included).
    #[inline(always)]
    pub fn bits_of(self, x: f32) -> u16 {
        match self {
            Half::Bf16 => (x.to_bits() >> 16) as u16,
            Half::F16 => f16_nearest(x),
        }
    }

    /// The f32 value of `bits` of this type (exact).
    #[inline(always)]
    pub fn to_f32(self, bits: u16) -> f32 {
        match self {
            Half::Bf16 => bf16_to_f32(bits),
            Half::F16 => f16_to_f32(bits),
        }
    }
}

const SIGN_16: u16 = 0x8000;

/// [`Half::store`] in bf16.
#[inline(always)]
pub fn store_bf16(x: f32, bound: f32, rounding: Rounding) -> u16 {
    Half::Bf16.store(x, bound, rounding)
}

/// [`Half::store`] in f16: a bound of 65,504 or more stores 65,504 where rounding would give
/// infinity.
#[inline(always)]
pub fn store_f16(x: f32, bound: f32, rounding: Rounding) -> u16 {
    Half::F16.store(x, bound, rounding)
}

/// `bits` if its value is within `bound` (or the clamp is off, or it is NaN), else its neighbour
/// toward zero. The operand was clamped before it was rounded and a rounding moves it by less
/// than one step of the storage type, so one step back is within the bound; magnitudes are
/// ordered like their bit patterns, and the value past the bound is not zero, so the step is a
/// decrement of the magnitude bits.
#[inline(always)]
fn within(bits: u16, bound: f32, decode: impl Fn(u16) -> f32) -> u16 {
    // Branch-free (`&` of the two tests, the step as a subtraction of 0 or 1): the PTX audit
    // proves a stored value from one definition per register, which a branch would break.
    // Never wraps (the magnitude past a bound is not zero); `wrapping_sub` keeps a device build
    // free of an overflow check the compiler cannot remove.
    let past = (bound > 0.0) & (decode(bits).abs() > bound);
    bits.wrapping_sub(past as u16)
}

/// `x` rounded to bf16. Branch-free, in 32-bit integer arithmetic, so the PTX audit can run it.
#[inline(always)]
pub fn bf16_round(x: f32, rounding: Rounding) -> u16 {
    let bits = x.to_bits();
    // bf16 is f32 without its low 16 bits, at every exponent (subnormals included), so those
    // bits are exactly the fraction of a step that rounding decides on. A carry out of the
    // mantissa moves to the next binade, and out of the largest one to infinity, as IEEE does;
    // infinity itself has no low bits, so `up < 2^16` leaves it infinite.
    let up = match rounding {
        Rounding::Nearest => 0x7FFF + ((bits >> 16) & 1),
        Rounding::Stochastic(r) => r & 0xFFFF,
    };
    // Added to the whole pattern, sign included: f32 is sign and magnitude, and below NaN the
    // magnitude plus `up` stays under 2^31, so the sum's high half is the sign and the rounded
    // magnitude (one addition and one shift, no separate sign to put back).
    let rounded = (bits.wrapping_add(up) >> 16) as u16;
    // NaN: quiet, sign kept (a select, not a branch).
    let nan = ((bits >> 16) as u16 & SIGN_16) | 0x7FC0;
    if x.is_nan() {
        nan
    } else {
        rounded
    }
}

/// `x` rounded to f16: to nearest even in branch-free 32-bit arithmetic (the PTX audit runs it
/// on a kernel's stores), stochastically with the 64-bit model below.
#[inline(always)]
pub fn f16_round(x: f32, rounding: Rounding) -> u16 {
    match rounding {
        Rounding::Nearest => f16_nearest(x),
        Rounding::Stochastic(r) => f16_stochastic(x, r),
    }
}

/// `x` rounded to the nearest f16, ties to even. Every case is computed and the result selected,
/// so no branch splits the value's definition:
/// - normal (`|x| >= 2^-14`): the exponent rebased from f32's bias (127) to f16's (15) by
///   subtracting `112 << 23`, then the 13 dropped mantissa bits rounded off; a carry moves to the
///   next binade, and past 65,504 to infinity's pattern, as IEEE rounds (`|x| >= 65,520`);
/// - subnormal (`|x| < 2^-14`): the significand with its implicit bit, shifted down by
///   `126 - e` (at least 14; at most 31, past which it rounds to 0 anyway: below 2^-25);
/// - `|x| >= 2^16` (infinity included): infinity; NaN: the quiet NaN, sign kept.
#[inline(always)]
fn f16_nearest(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) as u16) & SIGN_16;
    let a = bits & 0x7FFF_FFFF;
    let rebased = a.wrapping_sub(112 << 23);
    // Wraps (unselected) for a value below the normal range.
    let normal = rebased.wrapping_add(0x0FFF + ((rebased >> 13) & 1)) >> 13;
    let e = a >> 23;
    let shift = 126u32.saturating_sub(e).clamp(14, 31);
    let m = (a & 0x7F_FFFF) | 0x80_0000;
    let kept = m >> shift;
    let rem = m & ((1u32 << shift) - 1);
    let half = 1u32 << (shift - 1);
    let up = (rem > half) | ((rem == half) & (kept & 1 == 1));
    let subnormal = kept + up as u32;
    let magnitude = if a > 0x7F80_0000 {
        0x7E00
    } else if a >= 0x4780_0000 {
        0x7C00
    } else if a >= 0x3880_0000 {
        normal
    } else {
        subnormal
    };
    sign | magnitude as u16
}

/// `x` rounded to f16 stochastically with the random word `r`.
#[inline(always)]
fn f16_stochastic(x: f32, r: u32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) as u16) & SIGN_16;
    let a = bits & 0x7FFF_FFFF;
    if a > 0x7F80_0000 {
        return sign | 0x7E00;
    }
    if a >= 0x4780_0000 {
        // 2^16 and above (infinity included): past every finite f16 and its rounding range.
        return sign | 0x7C00;
    }
    let biased = (a >> 23) as i32;
    // The significand with its implicit bit (f32 subnormals have none, at exponent -126).
    let (e, m) = if biased == 0 {
        (-126, a & 0x7F_FFFF)
    } else {
        (biased - 127, (a & 0x7F_FFFF) | 0x80_0000)
    };
    // f16 keeps 11 significant bits of a normal value (exponent >= -14); below, the subnormals'
    // fixed step 2^-24 keeps fewer. `shift` is how many low bits of `m` are rounded away, and
    // `kept` is the f16 magnitude before rounding: for a normal value its exponent field times
    // 2^10 plus its mantissa, which `(e + 14) << 10` plus `m >> 13` (implicit bit included)
    // gives; a subnormal's is `m >> shift`.
    let (kept, shift) = if e >= -14 {
        ((((e + 14) as u32) << 10) + (m >> 13), 13u32)
    } else {
        let shift = (-e - 1) as u32; // 13 + (-14 - e)
        (if shift < 32 { m >> shift } else { 0 }, shift)
    };
    // What is rounded away, as a fraction `rem / 2^shift` of one step (shift <= 125).
    let rem = m as u64 & mask64(shift);
    // Up with probability rem / 2^shift, to the draw's resolution: compare with the word's 16
    // bits at the top of the `shift` rounded-away bits (all of them when there are fewer).
    let draw = r as u64 & 0xFFFF;
    let draw = if shift <= 16 {
        draw & mask64(shift)
    } else if shift <= 40 {
        draw << (shift - 16)
    } else {
        // rem < 2^24 <= 2^(shift - 16): below the draw's resolution, never up.
        return sign | kept as u16;
    };
    let up = rem + draw >= 1u64 << shift;
    sign | (kept + up as u32) as u16
}

#[inline(always)]
fn mask64(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// The value of bf16 `bits` (exact).
#[inline(always)]
pub fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits((bits as u32) << 16)
}

/// The value of f16 `bits` (exact).
#[inline(always)]
pub fn f16_to_f32(bits: u16) -> f32 {
    // Branch-free, in integer arithmetic and one exact f32 subtraction (the PTX audit runs it in
    // an f16 store's hold within the bound): a subnormal `m · 2^-24` is the normal value of
    // exponent 1 with the same mantissa, `(1 + m/1024) · 2^-14`, less `2^-14`, exact in f32.
    let sign = ((bits & SIGN_16) as u32) << 16;
    let exponent = ((bits >> 10) & 0x1F) as u32;
    let mantissa = (bits & 0x3FF) as u32;
    let subnormal = exponent == 0;
    let as_normal = ((exponent + subnormal as u32 + 112) << 23) | (mantissa << 13);
    let offset = if subnormal {
        f32::from_bits(0x3880_0000)
    } else {
        0.0
    }; // 2^-14
    let finite = (f32::from_bits(as_normal) - offset).to_bits();
    let magnitude = if exponent == 0x1F {
        0x7F80_0000 | (mantissa << 13)
    } else {
        finite
    };
    f32::from_bits(sign | magnitude)
}

/// `x` clamped to `bound` (as [`weight_clamp`]) and split into a bf16 high half and a 16-bit
/// remainder that together hold the clamped f32 exactly (issue 26's 26 B path: the model reads
/// bf16 weights, the update an exact f32 master, in 4 bytes per element instead of 6).
///
/// The high half is the master rounded to nearest with ties away from zero: its top 16 bits,
/// plus one in magnitude when bit 15 is set. The remainder is the master's low 16 bits, read
/// back as a signed offset from the high half ([`split_join`]); rounding to nearest even could
/// not be undone this way (a tie rounded down leaves an offset of +2^15, which 16 signed bits
/// cannot hold).
///
/// The clamp holds of the high half's bf16 value: when it rounds past the bound, the master
/// itself is taken back to the largest value whose high half is the bf16 value below (low bits
/// `0x7FFF`, under the midpoint, which the clamped master was at or above, so the master stays
/// within the bound too). NaN stays NaN in both halves. Branch-free, like [`Half::store`], so
/// the PTX audit can run it.
#[inline(always)]
pub fn split_store(x: f32, bound: f32) -> (u16, u16) {
    let bits = weight_clamp(x, bound).to_bits();
    let sign = ((bits >> 16) as u16) & SIGN_16;
    let a = bits & 0x7FFF_FFFF;
    let nan = a > 0x7F80_0000;
    // Cannot wrap: `a <= 0x7FFF_FFFF`. A NaN's sum is not a value; it is never held.
    let up = ((a + 0x8000) >> 16) as u16;
    let past = (bound > 0.0) & (bf16_to_f32(up).abs() > bound) & !nan;
    let held = if past { (a & 0xFFFF_0000) | 0x7FFF } else { a };
    let high = if nan {
        0x7FC0
    } else {
        ((held + 0x8000) >> 16) as u16
    };
    (sign | high, held as u16)
}

/// The f32 master that [`split_store`]'s `high` and `low` halves hold: `high`'s bits shifted up,
/// plus `low` as a signed offset. Exact for every finite or infinite master; a NaN's halves
/// give a NaN.
#[inline(always)]
pub fn split_join(high: u16, low: u16) -> f32 {
    f32::from_bits(((high as u32) << 16).wrapping_add(low as i16 as i32 as u32))
}

/// The key of one tensor's random words at one step of a run: a hash of the run's `seed`, the
/// step number `step` and the tensor's index `tensor` in its set (0 for a single-tensor
/// launch). Computed once per tensor by an entry; [`stochastic_word`] derives each element's word
/// from it. `seed` and `step` go in as one 64-bit counter, so two different pairs never share a
/// key before the tensor is mixed in; a seed that never changes still gives every step its own
/// words, and a resumed run (same seed, same step) its uninterrupted words.
#[inline(always)]
pub fn rounding_key(seed: u32, step: u32, tensor: u32) -> u64 {
    let h = fmix64((((seed as u64) << 32) | step as u64) ^ 0x9E37_79B9_7F4A_7C15);
    fmix64(h ^ (tensor as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F))
}

/// The random draw of stochastic rounding for element `element` of a tensor's stochastic buffer
/// `ordinal` (its place among the kernel's stochastically stored buffers, in declared order:
/// Adam's weight, `m` and `v` are 0, 1 and 2) at the step whose key is `key`
/// ([`rounding_key`]): 16 bits, in the low half of the result (a bf16 rounding decides on 16
/// dropped bits, so a wider draw would add nothing). It is half `element % 2` (low, then high)
/// of [`stochastic_pair_word`] of the element's pair, `element / 2`: two elements share one
/// mixer's output.
#[inline(always)]
pub fn stochastic_word(key: u64, ordinal: u32, element: u64) -> u32 {
    (stochastic_pair_word(key, ordinal, element / 2) >> (16 * (element % 2) as u32)) & 0xFFFF
}

/// [`stochastic_word`] of element `group + lane` (`lane < 4`) for a group whose first element
/// `group` is a multiple of 4, as the generated vector loop draws it: lanes 0 and 1 take the
/// halves of the group's first pair word, lanes 2 and 3 of its second, so the four lanes of one
/// buffer compute two mixers (the compiler shares a pair's word between its lanes).
#[inline(always)]
pub fn stochastic_lane_word(key: u64, ordinal: u32, group: u64, lane: u32) -> u32 {
    let pair = stochastic_pair_word(key, ordinal, (group >> 1) + (lane / 2) as u64);
    (pair >> (16 * (lane % 2))) & 0xFFFF
}

/// The 32-bit word of stochastic buffer `ordinal` for the element pair `pair` (elements
/// `2·pair` and `2·pair + 1`), whose halves are the pair's two draws ([`stochastic_word`]).
///
/// The words of a pair form a chain of 32-bit integer mixers (`lowbias32`, from Chris Wellons'
/// hash prospector), 32-bit multiplies only, since they run for every pair: buffer 0's mixes
/// the pair's low half with the key's low half and the pair's high half, and each next buffer's
/// mixes the word before it with the key's high half. An element so pays half a mixer per
/// stochastic buffer (the 14 B path, three buffers: one and a half, where a word per element
/// and buffer would pay three). For one key and buffer, pairs below 2^32 get pairwise
/// different words (the first mixer is a bijection of the pair's low half, and so is each next
/// one of the word before it).
#[inline(always)]
pub fn stochastic_pair_word(key: u64, ordinal: u32, pair: u64) -> u32 {
    let high = (pair >> 32) as u32;
    let mut word = mix32((pair as u32) ^ key as u32 ^ high.wrapping_mul(0x9E37_79B9));
    let mut link = 0;
    // `ordinal` is a constant where the macro calls it: the loop unrolls, and the words the
    // buffers of one pair share are computed once.
    while link < ordinal {
        word = mix32(word ^ (key >> 32) as u32);
        link += 1;
    }
    word
}

/// `lowbias32`: each input bit flips each output bit with probability close to one half.
#[inline(always)]
fn mix32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7FEB_352D);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846C_A68B);
    x ^= x >> 16;
    x
}

/// MurmurHash3's 64-bit finalizer: every input bit changes each output bit with probability
/// about one half.
#[inline(always)]
fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    k ^= k >> 33;
    k = k.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    k ^= k >> 33;
    k
}
