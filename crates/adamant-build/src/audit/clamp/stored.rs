//! The contract of a parameter stored in 16 bits (issue 26), written from its definition and
//! independently of the device code (`adamant_device::storage`), and the cases around a bound
//! in the storage type.
//!
//! A bf16 parameter store holds `stored = hold(rne(contract(x, b)), b)`: the f32 clamp, then
//! IEEE round-to-nearest-even to bf16 (a NaN becomes the quiet NaN `sign | 0x7fc0`), then, when
//! the clamp is on (`b > 0`) and the rounded value's magnitude is past `b`, the bf16 value next
//! to it toward zero. So `|stored| <= b` (or NaN) holds of the stored bits themselves, also for
//! a bound no bf16 value equals.
use adamant_abi::{Rounding, Storage};

/// The bf16 rounding to nearest, ties to even, from IEEE 754's definition: the value's 16
/// dropped bits against half a step, the kept bits' parity breaking a tie. Written on the
/// magnitude so the sign cannot take part in the decision.
fn bf16_nearest(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = (bits >> 31) as u16;
    let magnitude = bits & 0x7fff_ffff;
    if x.is_nan() {
        return (sign << 15) | 0x7fc0;
    }
    let kept = magnitude >> 16;
    let dropped = magnitude & 0xffff;
    let half = 0x8000;
    let up = dropped > half || (dropped == half && kept % 2 == 1);
    // A carry out of the largest finite value reaches infinity's pattern, as IEEE rounds.
    ((sign << 15) as u32 | (kept + up as u32)) as u16
}

fn bf16_value(bits: u16) -> f32 {
    f32::from_bits((bits as u32) << 16)
}

/// The f16 rounding to nearest, ties to even, in f64 from the definition: the value's binade
/// `e` (at least -14, where the subnormals' fixed step begins), its step `2^(e-10)`, the quotient
/// by the step rounded half to even; the pattern is `(e + 15) << 10` plus the quotient's part
/// past the implicit bit, which also carries into the next binade and, past 65,504, to
/// infinity's pattern. A NaN becomes the quiet NaN `sign | 0x7e00`.
fn f16_nearest(x: f32) -> u16 {
    let sign = ((x.to_bits() >> 31) as u16) << 15;
    if x.is_nan() {
        return sign | 0x7e00;
    }
    let v = (x as f64).abs();
    if v >= 65520.0 {
        return sign | 0x7c00;
    }
    let binade = if v == 0.0 {
        -14
    } else {
        (((v.to_bits() >> 52) & 0x7ff) as i64 - 1023).max(-14)
    };
    let q = v / 2f64.powi(binade as i32 - 10);
    let n = q.round_ties_even() as i64;
    sign | ((((binade + 15) << 10) + n - 1024) as u16)
}

/// The value of f16 bits (exact), from the definition.
fn f16_value(bits: u16) -> f32 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let (e, m) = ((bits >> 10) & 0x1f, (bits & 0x3ff) as f64);
    let v = match e {
        0 => m * 2f64.powi(-24),
        0x1f if m == 0.0 => f64::INFINITY,
        0x1f => f64::NAN,
        _ => (1.0 + m / 1024.0) * 2f64.powi(e as i32 - 15),
    };
    (sign * v) as f32
}

/// bf16 stochastic rounding with the random word `word`, as `adamant_abi::Rounding::Stochastic`
/// defines it: up in magnitude when the 16 dropped bits plus the word's low 16 bits reach
/// `2^16` (so with probability `dropped / 2^16` over uniform words); a NaN becomes the quiet NaN.
fn bf16_stochastic(x: f32, word: u32) -> u16 {
    let bits = x.to_bits();
    let sign = (bits >> 31) as u16;
    let magnitude = bits & 0x7fff_ffff;
    if x.is_nan() {
        return (sign << 15) | 0x7fc0;
    }
    let (kept, dropped) = (magnitude >> 16, magnitude & 0xffff);
    let up = dropped + (word & 0xffff) >= 0x1_0000;
    ((sign << 15) as u32 | (kept + up as u32)) as u16
}

/// An f32 master split into a bf16 high half and a 16-bit remainder (`Rounding::TiesAway`,
/// `Storage::Bf16Remainder`), from the definition: the high half is the master rounded to
/// nearest with ties away from zero (the 16 dropped bits against half a step, a tie up in
/// magnitude), the remainder the master's low 16 bits. When the clamp is on and the high half's
/// value is past the bound, the master becomes the largest value whose high half is the bf16
/// value below (dropped bits `0x7fff`): high half toward zero, remainder `0x7fff`. A NaN's high
/// half is the quiet NaN, its remainder its low bits.
fn split(master: f32, bound: f32) -> (u16, u16) {
    let bits = master.to_bits();
    let sign = ((bits >> 31) as u16) << 15;
    let (kept, dropped) = ((bits & 0x7fff_ffff) >> 16, bits & 0xffff);
    if master.is_nan() {
        return (sign | 0x7fc0, dropped as u16);
    }
    let high = kept + u32::from(dropped >= 0x8000);
    if bound > 0.0 && bf16_value(high as u16).abs() > bound {
        return (sign | kept as u16, 0x7fff);
    }
    (sign | high as u16, dropped as u16)
}

/// What a parameter buffer of `storage` must hold after a store of the clamped `clamped`
/// (already `contract(x, bound)`) with `bound`, as the bits of the storage type (in the low bits
/// of the word), rounded as `rounding` says. `word`: the random word of a stochastic store
/// (`None`: to nearest).
pub fn stored_contract(
    storage: Storage,
    rounding: Rounding,
    word: Option<u32>,
    clamped: f32,
    bound: f32,
) -> u32 {
    match storage {
        Storage::F32 => clamped.to_bits(),
        Storage::Bf16 if rounding == Rounding::TiesAway => split(clamped, bound).0 as u32,
        Storage::Bf16Remainder => split(clamped, bound).1 as u32,
        Storage::Bf16 => {
            let rounded = match word {
                Some(w) => bf16_stochastic(clamped, w),
                None => bf16_nearest(clamped),
            };
            let past = bound > 0.0 && bf16_value(rounded).abs() > bound;
            // Past the bound only by rounding, so never zero: one step toward zero is the
            // magnitude's pattern minus one.
            (if past { rounded - 1 } else { rounded }) as u32
        }
        Storage::F16 => {
            let rounded = f16_nearest(clamped);
            let past = bound > 0.0 && f16_value(rounded).abs() > bound;
            (if past { rounded - 1 } else { rounded }) as u32
        }
    }
}

/// A rounding to a 16-bit type, and its widening back.
type Round = fn(f32) -> u16;
type Widen = fn(u16) -> f32;

/// Cases around every bound of `bounds` in `storage`: the storage type's values just below, at
/// and just above it, and the f32 values halfway between them (the ties rounding decides), both
/// signs, each paired with the bound. None for f32 (the f32 table has `bound ± 1 ulp`).
pub fn storage_cases(storage: Storage, bounds: &[u32]) -> Vec<(u32, u32)> {
    // The storage type's patterns and values, for its neighbours of a bound.
    let (to_bits, value, top): (Round, Widen, i64) = match storage {
        Storage::F32 => return Vec::new(),
        // A split master's cases are bf16's: its high half rounds at the same neighbours.
        Storage::Bf16 | Storage::Bf16Remainder => (bf16_nearest, bf16_value, 0x7f80),
        Storage::F16 => (f16_nearest, f16_value, 0x7c00),
    };
    let mut out = Vec::new();
    // f16's overflow to infinity and its largest finite value, whatever the bounds.
    let extra = if storage == Storage::F16 {
        vec![65504f32.to_bits(), 65519f32.to_bits(), 65520f32.to_bits()]
    } else {
        Vec::new()
    };
    for &b in bounds.iter().chain(&extra) {
        let bound = f32::from_bits(b);
        if !bound.is_finite() {
            continue;
        }
        let near = to_bits(bound.abs()) as i64;
        for k in -2i64..=3 {
            let pattern = near + k;
            if !(0..=top).contains(&pattern) {
                continue;
            }
            let v = value(pattern as u16);
            let next = value((pattern + 1).min(top) as u16);
            // Halfway to the next value: the tie rounding decides (exact in f64, then its f32
            // neighbours).
            let tie = ((v as f64 + next as f64) / 2.0) as f32;
            for x in [v, tie, tie.next_up(), tie.next_down(), next] {
                for x in [x, -x] {
                    out.push((x.to_bits(), b));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_to_nearest_even_matches_ieee_at_ties_and_carries() {
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: even (1.0) wins.
        assert_eq!(bf16_nearest(1.0 + 2f32.powi(-8)), 0x3f80);
        // 1 + 3·2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: the even one, upward.
        assert_eq!(bf16_nearest(1.0 + 3.0 * 2f32.powi(-8)), 0x3f82);
        assert_eq!(bf16_nearest(-1.0), 0xbf80);
        assert_eq!(bf16_nearest(f32::MAX), 0x7f80, "carries to infinity");
        assert_eq!(bf16_nearest(f32::NAN) & 0x7fff, 0x7fc0);
    }

    #[test]
    fn a_bound_between_two_bf16_values_is_not_exceeded() {
        // 0.08 is not a bf16 value; its nearest is above it.
        let bound = 0.08f32;
        assert!(bf16_value(bf16_nearest(bound)) > bound);
        let stored = stored_contract(Storage::Bf16, Rounding::Nearest, None, bound, bound) as u16;
        assert!(bf16_value(stored) <= bound);
        assert_eq!(stored, bf16_nearest(bound) - 1);
        let stored = stored_contract(Storage::Bf16, Rounding::Nearest, None, -bound, bound) as u16;
        assert!(bf16_value(stored) >= -bound);
    }

    #[test]
    fn f16_rounding_to_nearest_even_at_ties_overflow_and_subnormals() {
        assert_eq!(f16_nearest(1.0), 0x3c00);
        // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even (1.0) wins.
        assert_eq!(f16_nearest(1.0 + 2f32.powi(-11)), 0x3c00);
        assert_eq!(f16_nearest(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
        assert_eq!(f16_nearest(65504.0), 0x7bff);
        assert_eq!(f16_nearest(65519.0), 0x7bff);
        assert_eq!(
            f16_nearest(65520.0),
            0x7c00,
            "the tie past the largest rounds to infinity"
        );
        assert_eq!(f16_nearest(-1e10), 0xfc00);
        assert_eq!(
            f16_nearest(2f32.powi(-24)),
            0x0001,
            "the smallest subnormal"
        );
        assert_eq!(
            f16_nearest(2f32.powi(-25)),
            0x0000,
            "its half, a tie, to even (zero)"
        );
        assert_eq!(f16_nearest(2f32.powi(-14)), 0x0400, "the smallest normal");
        assert_eq!(f16_nearest(f32::NAN) & 0x7fff, 0x7e00);
        for bits in [0x0001u16, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0x8001, 0xfbff] {
            assert_eq!(
                f16_nearest(f16_value(bits)),
                bits,
                "{bits:#06x} round-trips"
            );
        }
    }

    #[test]
    fn an_f16_store_never_passes_the_bound_nor_overflows() {
        // With the bound at f16's largest finite value, an update past it is stored as 65504,
        // never as infinity; with a bound past 65,520 the clamp lets 65,520 through and the hold
        // takes infinity back to 65504.
        for bound in [65504f32, 65519.0, 1e6] {
            let stored = stored_contract(
                Storage::F16,
                Rounding::Nearest,
                None,
                65520f32.min(bound),
                bound,
            ) as u16;
            assert_eq!(stored, 0x7bff, "bound {bound}");
        }
        let stored = stored_contract(Storage::F16, Rounding::Nearest, None, 0.08, 0.08) as u16;
        assert!(f16_value(stored) <= 0.08 && f16_value(stored + 1) > 0.08);
    }

    #[test]
    fn the_cases_straddle_the_bound_in_bf16() {
        let cases = storage_cases(Storage::Bf16, &[0.08f32.to_bits()]);
        let xs: Vec<f32> = cases.iter().map(|&(x, _)| f32::from_bits(x)).collect();
        assert!(xs
            .iter()
            .any(|&x| x > 0.08 && bf16_nearest(x) == bf16_nearest(0.08)));
        assert!(xs.iter().any(|&x| x < -0.08));
        assert!(storage_cases(Storage::F32, &[1.0f32.to_bits()]).is_empty());
    }
}
