//! The contract of a parameter stored in 16 bits (issue 26), written from its definition and
//! independently of the device code (`adamant_device::storage`), and the cases around a bound
//! in the storage type.
//!
//! A bf16 parameter store holds `stored = hold(rne(contract(x, b)), b)`: the f32 clamp, then
//! IEEE round-to-nearest-even to bf16 (a NaN becomes the quiet NaN `sign | 0x7fc0`), then, when
//! the clamp is on (`b > 0`) and the rounded value's magnitude is past `b`, the bf16 value next
//! to it toward zero. So `|stored| <= b` (or NaN) holds of the stored bits themselves, also for
//! a bound no bf16 value equals.
use adamant_abi::Storage;

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

/// What a parameter buffer of `storage` must hold after a store of the clamped `clamped`
/// (already `contract(x, bound)`) with `bound`, as the bits of the storage type (in the low bits
/// of the word).
pub fn stored_contract(storage: Storage, clamped: f32, bound: f32) -> u32 {
    match storage {
        Storage::F32 => clamped.to_bits(),
        Storage::Bf16 => {
            let rounded = bf16_nearest(clamped);
            let past = bound > 0.0 && bf16_value(rounded).abs() > bound;
            // Past the bound only by rounding, so never zero: one step toward zero is the
            // magnitude's pattern minus one.
            (if past { rounded - 1 } else { rounded }) as u32
        }
        // The codegen refuses an f16 parameter; a descriptor that claims one is held to nothing
        // the audit can prove.
        Storage::F16 => u32::MAX,
    }
}

/// Cases around every bound of `bounds` in `storage`: the storage type's values just below, at
/// and just above it, and the f32 values halfway between them (the ties rounding decides), both
/// signs, each paired with the bound. None for f32 (the f32 table has `bound ± 1 ulp`).
pub fn storage_cases(storage: Storage, bounds: &[u32]) -> Vec<(u32, u32)> {
    if storage != Storage::Bf16 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for &b in bounds {
        let bound = f32::from_bits(b);
        if !bound.is_finite() {
            continue;
        }
        let below = (bound.abs().to_bits() >> 16) as i64;
        for k in -2i64..=3 {
            let pattern = below + k;
            if !(0..=0x7f80).contains(&pattern) {
                continue;
            }
            let v = bf16_value(pattern as u16);
            let next = bf16_value((pattern + 1).min(0x7f80) as u16);
            let tie = f32::from_bits(v.to_bits() + 0x8000);
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
        let stored = stored_contract(Storage::Bf16, bound, bound) as u16;
        assert!(bf16_value(stored) <= bound);
        assert_eq!(stored, bf16_nearest(bound) - 1);
        let stored = stored_contract(Storage::Bf16, -bound, bound) as u16;
        assert!(bf16_value(stored) >= -bound);
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
