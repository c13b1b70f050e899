//! The kernel-author prelude's float functions against f64 references written from their
//! definitions: the largest error each one's docs state (in ulps of the exact result), on dense
//! samples of every input range, and their NaN / ±inf / ±0 / subnormal cases, bit for bit.
//!
//! The figures in the docs and the README come from the exhaustive test at the end (every `f32`
//! for the one-argument functions; `cargo test --release -p adamant-device --test math_prelude
//! -- --ignored --nocapture`, a few minutes). The functions are exact IEEE operations only,
//! so these host figures are the device's too.
use adamant_device::prelude::{abs, exp, fma, ln, max, min, pow, rsqrt, sign, sqrt};

/// The stated bounds, in ulps of the exact result (docs of `adamant_device::math`, README).
/// exp, ln and rsqrt: the largest error over every f32 (0.52074, 0.50039, 0.50000002), rounded
/// up.
const EXP_ULPS: f64 = 0.5208;
const LN_ULPS: f64 = 0.5004;
const RSQRT_ULPS: f64 = 0.500_000_1;
/// pow: 0.5258 measured on 7.5·10^7 pairs (exp's 0.5207 and the exponent's error, which grows
/// with `|y·ln x|` up to about 0.02 ulp by analysis; see `adamant_device::math::pow`), so a
/// bound with some margin.
const POW_ULPS: f64 = 0.53;

/// The error of `got` in units in the last place of the exact value `want`, as f32 has them:
/// the ulp of `want`'s binade, 2^-149 below the normal range. An infinity counts as 2^128, the
/// first value past `f32::MAX` (and a larger `want` as 2^128 too), so overflowing too early or
/// too late is an error in ulps like any other. NaN against NaN is no error, NaN against a
/// number an infinite one.
fn ulps(got: f32, want: f64) -> f64 {
    if got.is_nan() || want.is_nan() {
        return if got.is_nan() && want.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let past_max = 2f64.powi(128);
    let got = if got.is_infinite() {
        past_max.copysign(got as f64)
    } else {
        got as f64
    };
    let want = want.clamp(-past_max, past_max);
    let binade = ((want.to_bits() >> 52) & 0x7FF) as i32 - 1023;
    (got - want).abs() / 2f64.powi(binade.clamp(-126, 127) - 23)
}

#[test]
fn the_ulp_measure_is_the_usual_one() {
    assert_eq!(ulps(1.0 + f32::EPSILON, 1.0), 1.0);
    assert_eq!(ulps(1.0, 1.0 + 2f64.powi(-24)), 0.5);
    assert_eq!(ulps(f32::from_bits(3), 2f64.powi(-149)), 2.0);
    assert_eq!(ulps(f32::INFINITY, f64::INFINITY), 0.0);
    assert_eq!(ulps(f32::MAX, 2f64.powi(128)), 1.0);
    assert_eq!(ulps(0.0, -0.0), 0.0);
    assert!(ulps(1.0, f64::NAN).is_infinite());
}

/// Every 4093rd bit pattern: a prime stride, so every significand bit varies; 1,049,345 floats
/// of both signs, NaNs, infinities and subnormals included.
fn bit_samples() -> impl Iterator<Item = f32> {
    (0..=u32::MAX).step_by(4093).map(f32::from_bits)
}

/// Values at the edges of every function's range, with their neighbours.
fn edges() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        f32::from_bits(1),
        f32::from_bits(0x007F_FFFF),
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1.0,
        2.0,
        0.5,
        core::f32::consts::LN_2,
        core::f32::consts::SQRT_2,
        core::f32::consts::FRAC_1_SQRT_2,
        88.722_84,   // ln(f32::MAX)
        -87.336_55,  // ln(f32::MIN_POSITIVE)
        -103.972_08, // ln(2^-150)
        -104.0,
        89.0,
        0.346_573_6, // ln(2)/2
        1e-8,
    ];
    for x in v.clone() {
        if x.is_finite() {
            for n in [x.next_up(), x.next_down()] {
                v.extend([n, -n]);
            }
            v.push(-x);
        }
    }
    v
}

/// The largest [`ulps`] of `f` against `reference` over `inputs`, and where.
fn worst(
    inputs: impl Iterator<Item = f32>,
    f: impl Fn(f32) -> f32,
    reference: impl Fn(f64) -> f64,
) -> (f64, f32) {
    inputs
        .map(|x| (ulps(f(x), reference(x as f64)), x))
        .fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
}

/// Bits equal, or both NaN.
fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// `f(x)` is `want` bit for bit (any NaN for a NaN), for every case.
fn special_cases(name: &str, f: impl Fn(f32) -> f32, cases: &[(f32, f32)]) {
    for &(x, want) in cases {
        assert!(same(f(x), want), "{name}({x:e}) = {:e}, not {want:e}", f(x));
    }
}

#[test]
fn exp_is_within_its_stated_error() {
    let (e, x) = worst(bit_samples().chain(edges()), exp, f64::exp);
    assert!(e <= EXP_ULPS, "exp({x:e}) is {e} ulps off");
    // The whole range that is neither 1 nor overflow nor 0, densely.
    let range = (0..1_000_000).map(|i| -104.0 + 193.0 * i as f32 / 1e6);
    let (e, x) = worst(range, exp, f64::exp);
    assert!(e <= EXP_ULPS, "exp({x:e}) is {e} ulps off");
}

#[test]
fn exp_special_cases() {
    special_cases(
        "exp",
        exp,
        &[
            (0.0, 1.0),
            (-0.0, 1.0),
            (f32::INFINITY, f32::INFINITY),
            (f32::NEG_INFINITY, 0.0),
            (f32::NAN, f32::NAN),
            (88.722_84, f32::INFINITY),
            (-104.0, 0.0),
            (-1e30, 0.0),
            (1e30, f32::INFINITY),
            (1e-30, 1.0),
            (-1e-30, 1.0),
        ],
    );
    // The largest finite result: e^88.72283 = 3.4027985e38, just under f32::MAX.
    assert_eq!(exp(88.722_83), 3.402_798_5e38);
    // Subnormal results: e^-100 = 3.72e-44 is 26.6 times 2^-149.
    assert_eq!(exp(-100.0).to_bits(), 27);
    assert_eq!(exp(-103.9), f32::from_bits(1));
}

#[test]
fn ln_is_within_its_stated_error() {
    let (e, x) = worst(bit_samples().chain(edges()), ln, f64::ln);
    assert!(e <= LN_ULPS, "ln({x:e}) is {e} ulps off");
    // Around 1, where ln x is small and the reduction matters most: every float in [0.5, 2]
    // with a 61st stride.
    let near_one = (0.5f32.to_bits()..2.0f32.to_bits())
        .step_by(61)
        .map(f32::from_bits);
    let (e, x) = worst(near_one, ln, f64::ln);
    assert!(e <= LN_ULPS, "ln({x:e}) is {e} ulps off");
}

#[test]
fn ln_special_cases() {
    special_cases(
        "ln",
        ln,
        &[
            (1.0, 0.0),
            (0.0, f32::NEG_INFINITY),
            (-0.0, f32::NEG_INFINITY),
            (f32::INFINITY, f32::INFINITY),
            (f32::NEG_INFINITY, f32::NAN),
            (-1.0, f32::NAN),
            (-f32::from_bits(1), f32::NAN),
            (f32::NAN, f32::NAN),
        ],
    );
    // Subnormal inputs are exact: ln(2^-149) = -149·ln 2.
    assert_eq!(
        ln(f32::from_bits(1)),
        (-149.0 * core::f64::consts::LN_2) as f32
    );
    assert_eq!(ln(2.0), core::f32::consts::LN_2);
}

#[test]
fn rsqrt_is_within_its_stated_error() {
    let (e, x) = worst(bit_samples().chain(edges()), rsqrt, |x| 1.0 / x.sqrt());
    assert!(e <= RSQRT_ULPS, "rsqrt({x:e}) is {e} ulps off");
    special_cases(
        "rsqrt",
        rsqrt,
        &[
            (0.0, f32::INFINITY),
            (-0.0, f32::NEG_INFINITY),
            (f32::INFINITY, 0.0),
            (-1.0, f32::NAN),
            (f32::NAN, f32::NAN),
            (4.0, 0.5),
        ],
    );
}

/// Pairs `(x, y)` whose `y·ln x` covers the whole range between underflow and overflow, for
/// `x` from every binade (and negative `x` with integer `y`), plus random bit patterns for both;
/// `n` rounds of three from the xorshift stream `seed` starts.
fn pow_samples(seed: u64, n: usize) -> Vec<(f32, f32)> {
    let mut state: u64 = 0x2545_F491_4F6C_DD1D ^ seed;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut pairs = Vec::new();
    for _ in 0..n {
        let x = f32::from_bits(next() as u32 & 0x7FFF_FFFF);
        if !x.is_finite() || x == 0.0 || x == 1.0 {
            continue;
        }
        // t uniform in [-110, 95]: the results span 0, the subnormals, every binade and inf.
        let t = -110.0 + 205.0 * (next() >> 11) as f64 / (1u64 << 53) as f64;
        let y = (t / (x as f64).ln()) as f32;
        pairs.push((x, y));
        // A negative x with an integer y: the sign of the result follows y's parity.
        let yi = y.round();
        if yi != 0.0 && yi.abs() < 1e7 {
            pairs.push((-x, yi));
        }
        let raw = next();
        pairs.push((
            f32::from_bits(raw as u32),
            f32::from_bits((raw >> 32) as u32),
        ));
    }
    pairs
}

#[test]
fn pow_is_within_its_stated_error() {
    let mut worst = (0.0, 0.0, 0.0);
    for (x, y) in pow_samples(0, 400_000) {
        let e = ulps(pow(x, y), (x as f64).powf(y as f64));
        if e > worst.0 {
            worst = (e, x, y);
        }
    }
    let (e, x, y) = worst;
    assert!(e <= POW_ULPS, "pow({x:e}, {y:e}) is {e} ulps off");
}

#[test]
fn pow_special_cases_are_ieee_754s() {
    // C99 Annex F pow (IEEE 754 pow), as the host's libm has it: every pair of these, compared
    // bit for bit where the result is 0, inf, NaN or exact, and within the bound otherwise.
    let odd = 3.0;
    let values = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
        odd,
        -odd,
        1.5,
        -1.5,
        16_777_216.0,  // 2^24: even
        -16_777_215.0, // 2^24 − 1: odd
        8_388_609.0,   // 2^23 + 1: odd
        1e30,
        -1e30,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ];
    for x in values {
        for y in values {
            let got = pow(x, y);
            let want = (x as f64).powf(y as f64);
            let rounded = want as f32;
            let exact = rounded as f64 == want;
            if want.is_nan() || rounded == 0.0 || rounded.is_infinite() || exact {
                assert!(
                    same(got, rounded),
                    "pow({x:e}, {y:e}) = {got:e}, not {rounded:e}"
                );
            } else {
                assert!(ulps(got, want) <= POW_ULPS, "pow({x:e}, {y:e}) = {got:e}");
            }
        }
    }
    // Those that C99 fixes whatever the other operand, NaN included.
    assert_eq!(pow(f32::NAN, 0.0), 1.0);
    assert_eq!(pow(f32::NAN, -0.0), 1.0);
    assert_eq!(pow(1.0, f32::NAN), 1.0);
    assert_eq!(pow(-1.0, f32::INFINITY), 1.0);
    assert!(pow(-8.0, 1.0 / 3.0).is_nan());
    assert_eq!(pow(-2.0, 3.0), -8.0);
    assert_eq!(pow(-2.0, -2.0), 0.25);
    // Integer powers of two are exact.
    for k in -149..=127 {
        assert_eq!(pow(2.0, k as f32), 2f64.powi(k) as f32, "2^{k}");
    }
}

#[test]
fn min_and_max_keep_nan_and_order_zeros() {
    let nan = f32::NAN;
    for (a, b) in [(nan, 1.0), (1.0, nan), (nan, nan), (nan, f32::INFINITY)] {
        assert!(max(a, b).is_nan() && min(a, b).is_nan(), "{a} {b}");
    }
    // The NaN operand itself, so host and device agree on its bits.
    let payload = f32::from_bits(0x7FC0_1234);
    assert_eq!(max(payload, 1.0).to_bits(), payload.to_bits());
    assert_eq!(min(2.0, payload).to_bits(), payload.to_bits());
    // f32::max/min drop it: what the prelude's replace (and the body check rejects).
    assert_eq!(nan.max(1.0), 1.0);
    assert_eq!(nan.min(1.0), 1.0);
    for (a, b) in [(0.0f32, -0.0f32), (-0.0, 0.0)] {
        assert_eq!(max(a, b).to_bits(), 0.0f32.to_bits());
        assert_eq!(min(a, b).to_bits(), (-0.0f32).to_bits());
    }
    for a in bit_samples().step_by(7) {
        for b in [0.0, -1.0, 1e-40, 3.0, f32::NEG_INFINITY, f32::INFINITY] {
            if a.is_nan() {
                continue;
            }
            let (hi, lo) = if a > b { (a, b) } else { (b, a) };
            assert!(same(max(a, b), hi) || a == b, "max({a:e}, {b:e})");
            assert!(same(min(a, b), lo) || a == b, "min({a:e}, {b:e})");
            assert_eq!(max(a, b), max(b, a));
            assert_eq!(min(a, b), min(b, a));
        }
    }
}

#[test]
fn abs_clears_the_sign_bit_only() {
    for x in bit_samples().chain(edges()) {
        assert_eq!(abs(x).to_bits(), x.to_bits() & 0x7FFF_FFFF, "{x:e}");
    }
}

#[test]
fn sign_is_zero_at_zero_and_keeps_nan() {
    assert_eq!(sign(3.5), 1.0);
    assert_eq!(sign(-1e-40), -1.0);
    assert_eq!(sign(f32::INFINITY), 1.0);
    assert_eq!(sign(f32::NEG_INFINITY), -1.0);
    assert_eq!(sign(0.0).to_bits(), 0.0f32.to_bits());
    assert_eq!(sign(-0.0).to_bits(), 0.0f32.to_bits());
    assert!(sign(f32::NAN).is_nan());
    // f32::signum differs exactly at zero.
    assert_eq!(0.0f32.signum(), 1.0);
}

#[test]
fn fma_rounds_once() {
    // (1 + 2^-23)(1 - 2^-23) = 1 - 2^-46: one rounding keeps the -2^-46, two lose it.
    let (a, b) = (1.0 + f32::EPSILON, 1.0 - f32::EPSILON);
    assert_eq!(fma(a, b, -1.0), -(2.0f32.powi(-46)));
    assert_eq!(a * b - 1.0, 0.0);
    assert!(fma(f32::NAN, 1.0, 1.0).is_nan());
}

#[test]
fn sqrt_is_correctly_rounded() {
    for x in [0.0f32, 2.0, 1e-40, 1e38, 0.5] {
        assert_eq!(sqrt(x), ((x as f64).sqrt()) as f32, "{x}");
    }
    assert!(sqrt(-1.0).is_nan());
    assert_eq!(sqrt(f32::INFINITY), f32::INFINITY);
}

/// The measurement behind the stated bounds: every `f32` for `exp`, `ln` and `rsqrt`, and about 2^26
/// sampled pairs for `pow` (whose errors are also reported by `|y·ln x|`, to show they do not
/// grow with it). Prints the largest errors; fails if one is past its bound.
#[test]
#[ignore = "measures over every f32: run in release (a few minutes)"]
fn exhaustive_measurement() {
    let all = || (0..=u32::MAX).map(f32::from_bits);
    for (name, f, reference, bound) in [
        (
            "exp",
            exp as fn(f32) -> f32,
            f64::exp as fn(f64) -> f64,
            EXP_ULPS,
        ),
        ("ln", ln, f64::ln, LN_ULPS),
        ("rsqrt", rsqrt, |x: f64| 1.0 / x.sqrt(), RSQRT_ULPS),
    ] {
        let (e, x) = worst(all(), f, reference);
        println!("{name}: max {e:.5} ulp at {x:e} ({:#010x})", x.to_bits());
        assert!(e <= bound, "{name}");
    }
    // pow: by |y·ln x| in [0, 1), [1, 8), [8, 32), [32, 64), [64, 110).
    let edges = [0.0, 1.0, 8.0, 32.0, 64.0, 110.0];
    let mut by_range = [(0.0f64, 0.0f32, 0.0f32, 0usize); 5];
    for round in 1..=32 {
        for (x, y) in pow_samples(round, 1 << 20) {
            let t = (y as f64 * (x.abs() as f64).ln()).abs();
            let Some(i) = edges.windows(2).position(|w| t >= w[0] && t < w[1]) else {
                continue;
            };
            let e = ulps(pow(x, y), (x as f64).powf(y as f64));
            by_range[i].3 += 1;
            if e > by_range[i].0 {
                by_range[i] = (e, x, y, by_range[i].3);
            }
        }
    }
    for (i, (e, x, y, n)) in by_range.iter().enumerate() {
        println!(
            "pow, |y·ln x| in [{}, {}): max {e:.5} ulp over {n} pairs, at ({x:e}, {y:e})",
            edges[i],
            edges[i + 1]
        );
    }
    assert!(by_range.iter().all(|r| r.0 <= POW_ULPS));
}
