//! `adamant_device::clamp::weight_clamp`, the epilogue of every optimizer kernel, against its
//! specification (a truth table written from it) and the independent reference
//! `adamant::reference::clamp`; and why the seed's `fminf(fmaxf(p, -b), b)` was replaced.
use adamant::device::clamp::weight_clamp;
use adamant::reference;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The seed's clamp, `fminf(fmaxf(p, -b), b)`: Rust's `f32::max`/`min` are `fmaxf`/`fminf`
/// (IEEE 754 maxNum/minNum: a NaN operand is dropped in favour of the other one), as are PTX's
/// `max.f32`/`min.f32`.
fn seed_clamp(p: f32, b: f32) -> f32 {
    p.max(-b).min(b)
}

/// The same thing in the other order of operands, as in the brief: `(-b).max(p).min(b)`.
fn seed_clamp_swapped(p: f32, b: f32) -> f32 {
    (-b).max(p).min(b)
}

/// Bit-level equality, with every NaN equal to every NaN.
fn same(a: f32, b: f32) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

const MIN_SUB: f32 = f32::from_bits(1); // smallest positive subnormal
const MAX_SUB: f32 = f32::from_bits(0x007f_ffff); // largest subnormal

fn next_up(x: f32) -> f32 {
    assert!(x > 0.0 && x.is_finite());
    f32::from_bits(x.to_bits() + 1)
}

fn next_down(x: f32) -> f32 {
    assert!(x > 0.0 && x.is_finite());
    f32::from_bits(x.to_bits() - 1)
}

/// `(p, bound, expected)`, from the specification in `crates/adamant-device/src/clamp.rs` and the brief.
fn truth_table() -> Vec<(f32, f32, f32)> {
    let b = 0.5f32;
    let nan = f32::NAN;
    let inf = f32::INFINITY;
    vec![
        // Inside: unchanged.
        (0.25, b, 0.25),
        (-0.25, b, -0.25),
        (0.0, b, 0.0),
        (-0.0, b, -0.0),
        // Exactly at the bound: unchanged.
        (b, b, b),
        (-b, b, -b),
        // One ulp inside / outside.
        (next_down(b), b, next_down(b)),
        (-next_down(b), b, -next_down(b)),
        (next_up(b), b, b),
        (-next_up(b), b, -b),
        // Far outside, and the extremes.
        (1e30, b, b),
        (-1e30, b, -b),
        (f32::MAX, b, b),
        (f32::MIN, b, -b),
        (inf, b, b),
        (-inf, b, -b),
        // NaN stays NaN, whatever its sign.
        (nan, b, nan),
        (-nan, b, nan),
        // Bound 0 (and any bound <= 0, or NaN): disabled.
        (1e30, 0.0, 1e30),
        (-1e30, 0.0, -1e30),
        (inf, 0.0, inf),
        (-inf, 0.0, -inf),
        (nan, 0.0, nan),
        (0.25, -0.0, 0.25),
        (0.25, -1.0, 0.25),
        (0.25, nan, 0.25),
        // An infinite bound clamps nothing.
        (f32::MAX, inf, f32::MAX),
        (inf, inf, inf),
        // Subnormals: as values and as bounds.
        (MIN_SUB, b, MIN_SUB),
        (-MIN_SUB, b, -MIN_SUB),
        (MAX_SUB, b, MAX_SUB),
        (MIN_SUB, MIN_SUB, MIN_SUB),
        (next_up(MIN_SUB), MIN_SUB, MIN_SUB),
        (-next_up(MIN_SUB), MIN_SUB, -MIN_SUB),
        (f32::MIN_POSITIVE, MAX_SUB, MAX_SUB),
        (-f32::MIN_POSITIVE, MAX_SUB, -MAX_SUB),
        (1.0, MIN_SUB, MIN_SUB),
        (-0.0, MIN_SUB, -0.0),
        (0.0, MIN_SUB, 0.0),
        // Large bounds.
        (f32::MAX, f32::MAX, f32::MAX),
        (inf, f32::MAX, f32::MAX),
        (-inf, f32::MAX, f32::MIN),
    ]
}

#[test]
fn truth_table_weight_clamp() {
    for (p, bound, want) in truth_table() {
        let got = weight_clamp(p, bound);
        assert!(
            same(got, want),
            "weight_clamp({p:e}, {bound:e}) = {got:e}, want {want:e}"
        );
    }
}

/// The reference agrees with the same table (so the kernels are checked against a reference
/// that is itself right).
#[test]
fn truth_table_reference() {
    for (p, bound, want) in truth_table() {
        let got = reference::clamp(p as f64, bound as f64);
        assert!(
            (got.is_nan() && want.is_nan()) || got == want as f64,
            "reference::clamp({p:e}, {bound:e}) = {got:e}, want {want:e}"
        );
    }
}

/// Negative zero keeps its sign, and a value left alone is returned bit for bit (NaN payloads and
/// signs included).
#[test]
fn unchanged_values_are_bit_exact() {
    assert_eq!(weight_clamp(-0.0, 0.5).to_bits(), (-0.0f32).to_bits());
    assert_eq!(weight_clamp(0.0, 0.5).to_bits(), 0.0f32.to_bits());
    let payload_nan = f32::from_bits(0x7fc0_1234);
    let negative_nan = f32::from_bits(0xffc0_0001);
    for bound in [0.5, 0.0, MIN_SUB, f32::MAX] {
        for p in [payload_nan, negative_nan, -0.0, 0.0, MIN_SUB, -MIN_SUB] {
            if !(p.abs() > bound && bound > 0.0) {
                assert_eq!(
                    weight_clamp(p, bound).to_bits(),
                    p.to_bits(),
                    "{p:e} {bound:e}"
                );
            }
        }
    }
}

/// Random bit patterns for p and bound (every class: NaNs, infinities, subnormals, zeros)
/// against the reference.
#[test]
fn random_bit_patterns_match_reference() {
    let mut rng = SmallRng::seed_from_u64(1);
    let special = [
        0.0,
        -0.0,
        MIN_SUB,
        MAX_SUB,
        f32::MIN_POSITIVE,
        0.5,
        1.0,
        f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ];
    for i in 0..1_000_000 {
        let p = if i % 7 == 0 {
            special[rng.gen_range(0..special.len())]
        } else {
            f32::from_bits(rng.gen())
        };
        let bound = match i % 3 {
            0 => special[rng.gen_range(0..special.len())],
            1 => f32::from_bits(rng.gen::<u32>() & 0x7fff_ffff), // positive (or NaN)
            _ => f32::from_bits(rng.gen()),
        };
        let got = weight_clamp(p, bound);
        let want = reference::clamp(p as f64, bound as f64);
        assert!(
            (got.is_nan() && want.is_nan()) || got as f64 == want,
            "weight_clamp({p:e}, {bound:e}) = {got:e}, reference {want:e}"
        );
        // And the contract, directly: within the bound when enabled, NaN kept, sign kept.
        if bound > 0.0 && !p.is_nan() {
            assert!(got.abs() <= bound);
            assert_eq!(got.is_sign_negative(), p.is_sign_negative());
        }
        assert_eq!(got.is_nan(), p.is_nan());
    }
}

/// Why the seed's clamp was replaced: `fminf(fmaxf(NaN, -b), b)` is `-b`, a plausible weight,
/// so the NaN checker after the optimizer never saw the NaN. `weight_clamp` keeps it.
#[test]
fn seed_clamp_turned_nan_into_minus_bound() {
    for b in [0.5f32, 1.0, 1e-3, MIN_SUB, f32::MAX] {
        for nan in [f32::NAN, -f32::NAN, f32::from_bits(0x7fc0_1234)] {
            assert_eq!(seed_clamp(nan, b), -b, "fminf(fmaxf(NaN, -{b:e}), {b:e})");
            assert_eq!(seed_clamp_swapped(nan, b), -b);
            assert!(weight_clamp(nan, b).is_nan());
            assert!(reference::clamp(nan as f64, b as f64).is_nan());
        }
    }
}

/// Elsewhere, for an enabled bound, the seed's clamp and `weight_clamp` agree (the change is the
/// NaN case only), including ±inf and the bound itself. With bound 0 they differ too: the seed
/// clamped everything to ±0, `weight_clamp` treats 0 as disabled.
#[test]
fn seed_clamp_agrees_except_for_nan_and_disabled() {
    let mut rng = SmallRng::seed_from_u64(2);
    for _ in 0..200_000 {
        let p = f32::from_bits(rng.gen());
        let b = f32::from_bits(rng.gen::<u32>() & 0x7fff_ffff);
        if b.is_nan() || b == 0.0 {
            continue;
        }
        let (seed, new) = (seed_clamp(p, b), weight_clamp(p, b));
        if p.is_nan() {
            assert_eq!(seed, -b);
            assert!(new.is_nan());
        } else {
            // `max`/`min` may return either zero for ±0 inputs; compare as values.
            assert_eq!(seed, new, "p = {p:e}, b = {b:e}");
        }
    }
    for p in [0.25f32, -3.0, f32::INFINITY] {
        assert_eq!(seed_clamp(p, 0.0), 0.0);
        assert!(same(weight_clamp(p, 0.0), p));
    }
}
