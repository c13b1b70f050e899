//! The reference of a bf16 weight made exact by a 16-bit remainder (issue 26's 26 B path),
//! written from the definition in f64, independently of `adamant_device::storage::split_store`.

/// The clamp contract, from its definition.
pub fn contract(x: f32, bound: f32) -> f32 {
    if bound > 0.0 && x.abs() > bound {
        bound.copysign(x)
    } else {
        x
    }
}

/// The bf16 neighbours of finite `m` toward and away from zero, as f64 (equal when `m` is a bf16
/// value). Past the largest bf16 value, the neighbour away from zero is `2^128` (as IEEE rounding
/// sees it: a value that rounds there overflows to infinity).
pub fn neighbours(m: f32) -> (f64, f64) {
    let toward = f32::from_bits(m.to_bits() & 0xFFFF_0000) as f64;
    if toward == m as f64 {
        return (toward, toward);
    }
    // One bf16 step further from zero: the next pattern of the high half.
    let next = (m.to_bits() & 0xFFFF_0000) + 0x1_0000;
    let away = match next & 0x7FFF_FFFF {
        0x7F80_0000 => 2f64.powi(128).copysign(m as f64),
        _ => f32::from_bits(next) as f64,
    };
    (toward, away)
}

/// What storing `x` with `bound` must leave: `(weight, master)`, the bf16 weight as f32 and the
/// f32 master its remainder completes. The weight is the clamped master rounded to nearest, a
/// tie away from zero; when that weight is past the bound, the master is held at the largest
/// value whose weight is the neighbour toward zero (low bits 0x7fff: below the midpoint, which
/// the clamped master was at or above, so within the bound too). NaN: both NaN.
pub fn split_reference(x: f32, bound: f32) -> (f32, f32) {
    let m = contract(x, bound);
    if m.is_nan() {
        return (f32::NAN, f32::NAN);
    }
    let (toward, away) = neighbours(m);
    let v = m as f64;
    let weight = if (away - v).abs() <= (v - toward).abs() {
        away
    } else {
        toward
    };
    if bound > 0.0 && weight.abs() > bound as f64 {
        let held = f32::from_bits((m.to_bits() & 0xFFFF_0000) | 0x7FFF);
        return (toward as f32, held);
    }
    // `2^128` as f32 is infinity.
    (weight as f32, m)
}
