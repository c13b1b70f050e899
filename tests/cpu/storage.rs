//! 16-bit storage (`adamant_device::storage`, issue 26) against independent references:
//!
//! - round-to-nearest-even against the `half` crate, for bf16 and f16, over every exponent of
//!   f32 (subnormals, ties, overflow, NaN and infinities);
//! - stochastic rounding against a model written here from the definition (the two neighbours
//!   of `x` and the probability of the upper one, in f64): always one of the two neighbours, the
//!   upper one exactly when the random word falls below its probability, unbiased over 10^6
//!   draws, different at different steps;
//! - the clamp on the stored bits: for bounds that each storage type represents and that it does
//!   not (0.08 in bf16, the neighbours of representable values, f16's 65,504 and beyond), every
//!   stored value lies within the bound, and a value at or past the bound stores the largest
//!   value of the type within it, for both roundings.
use adamant_device::storage::{
    bf16_round, bf16_to_f32, f16_to_f32, rounding_key, stochastic_lane_word, stochastic_pair_word,
    stochastic_word, Half, Rounding,
};
use half::{bf16, f16};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[path = "../support/mod.rs"]
mod support;

use support::stochastic::{reference_store, reference_word};

/// f32 values over every binade and the edges: zeros, subnormals, ties of both types, the
/// largest values, infinities and NaNs.
fn samples(rng: &mut SmallRng, n: usize) -> Vec<f32> {
    let mut out = vec![
        0.0,
        -0.0,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::from_bits(0x007F_FFFF),
        f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        65504.0,
        65519.99,
        65520.0,
        65536.0,
        6.0e-8,
        2.98e-8,
        0.08,
        1.0 + f32::EPSILON,
    ];
    // Exact ties of bf16 (low 16 bits 0x8000) and of f16 (low 13 bits 0x1000), both parities.
    for &b in &[
        0x3F80_8000u32,
        0x3F81_8000,
        0x3F80_1000,
        0x3F80_3000,
        0x0000_8000,
    ] {
        out.push(f32::from_bits(b));
        out.push(-f32::from_bits(b));
    }
    for _ in 0..n {
        out.push(f32::from_bits(rng.gen::<u32>()));
        // Magnitudes where f16 is normal or subnormal.
        let e: i32 = rng.gen_range(-30..17);
        out.push(rng.gen_range(-1.0f32..1.0) * 2f32.powi(e));
    }
    out
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// The `half` crate's round-to-nearest of `x` in `ty`, as f32: the independent reference.
fn reference(ty: Half, x: f32) -> f32 {
    match ty {
        Half::Bf16 => bf16::from_f32(x).to_f32(),
        Half::F16 => f16::from_f32(x).to_f32(),
    }
}

/// `x` rounded to nearest in `ty` is the `half` crate's rounding (NaN for NaN).
fn assert_nearest(ty: Half, x: f32) {
    let ours = ty.to_f32(ty.round(x, Rounding::Nearest));
    let theirs = reference(ty, x);
    assert!(
        same(ours, theirs),
        "{ty:?} of {x:e} ({:#x}): {ours:e} against {theirs:e}",
        x.to_bits()
    );
}

#[test]
fn nearest_matches_the_half_crate_for_bf16_and_f16() {
    let mut rng = SmallRng::seed_from_u64(26);
    let xs = samples(&mut rng, 200_000);
    for ty in [Half::Bf16, Half::F16] {
        for &x in &xs {
            assert_nearest(ty, x);
        }
    }
}

/// Every 4,099th f32 bit pattern (both signs, every binade) and every pattern near the edges
/// where the rounding changes form: f16's smallest normal (2^-14), the overflow to infinity
/// (65,520) and 2^16, and bf16's largest finite value.
#[test]
fn nearest_matches_the_half_crate_over_the_whole_f32_range() {
    let edges = [2f32.powi(-14), 2f32.powi(-24), 65520.0, 65536.0, f32::MAX];
    let near = edges
        .iter()
        .flat_map(|e| e.to_bits().saturating_sub(3000)..e.to_bits().saturating_add(3000));
    let patterns = (0..=u32::MAX).step_by(4099).chain(near);
    for pattern in patterns {
        for x in [f32::from_bits(pattern), -f32::from_bits(pattern)] {
            for ty in [Half::Bf16, Half::F16] {
                assert_nearest(ty, x);
            }
        }
    }
}

#[test]
fn decoding_matches_the_half_crate_for_every_pattern() {
    for bits in 0..=u16::MAX {
        assert!(
            same(bf16_to_f32(bits), bf16::from_bits(bits).to_f32()),
            "bf16 {bits:#x}"
        );
        assert!(
            same(f16_to_f32(bits), f16::from_bits(bits).to_f32()),
            "f16 {bits:#x}"
        );
    }
}

/// The model: the neighbours of finite `x` in the type (toward zero and away, from the exact
/// values of every pattern of the type) and the probability of the one away from zero.
fn neighbours(ty: Half, x: f32) -> (f32, f32, f64) {
    let decode = |b: u16| ty.to_f32(b) as f64;
    let target = (x as f64).abs();
    // The magnitudes are ordered like their patterns: the last finite pattern not above |x|.
    let finite_max = match ty {
        Half::Bf16 => 0x7F7F,
        Half::F16 => 0x7BFF,
    };
    let mut lo = 0u16;
    let (mut a, mut b) = (0u16, finite_max);
    while a <= b {
        let mid = a + (b - a) / 2;
        if decode(mid) <= target {
            lo = mid;
            a = mid + 1;
        } else if mid == 0 {
            break;
        } else {
            b = mid - 1;
        }
    }
    let hi = lo + 1; // the infinity pattern past the largest finite
    let (l, h) = (decode(lo), decode(hi));
    let p = if target == l {
        0.0
    } else {
        (target - l) / (h - l)
    };
    let s = if x.is_sign_negative() { -1.0 } else { 1.0 };
    ((s * l) as f32, (s * h) as f32, p)
}

#[test]
fn stochastic_rounding_picks_a_neighbour_with_its_probability() {
    let mut rng = SmallRng::seed_from_u64(27);
    let xs: Vec<f32> = samples(&mut rng, 20_000)
        .into_iter()
        .filter(|x| x.is_finite() && x.abs() < 65504.0)
        .collect();
    for ty in [Half::Bf16, Half::F16] {
        for &x in &xs {
            let (lo, hi, p) = neighbours(ty, x);
            for r in [0u32, 1, 0x7FFF_FFFF, 0x8000_0000, u32::MAX, rng.gen()] {
                let got = ty.to_f32(ty.round(x, Rounding::Stochastic(r)));
                assert!(
                    same(got, lo) || same(got, hi),
                    "{ty:?} {x:e} r {r:#x}: {got:e} not {lo:e} or {hi:e}"
                );
                // The draw of `r` as a fraction of one step, at the resolution of the bits the
                // type drops (bf16: 16; a normal f16: 13): up exactly when the draw reaches
                // 1 - p, so with probability p.
                let bits_dropped = match ty {
                    Half::Bf16 => Some(16),
                    Half::F16 if x.abs() >= 2f32.powi(-14) => Some(13),
                    Half::F16 => None, // subnormal: a resolution of its own
                };
                if let Some(k) = bits_dropped {
                    let draw = (r & ((1u32 << k) - 1)) as f64 / (1u64 << k) as f64;
                    let up = p > 0.0 && draw >= 1.0 - p;
                    let want = if up { hi } else { lo };
                    assert!(
                        same(got, want),
                        "{ty:?} {x:e} r {r:#x} p {p}: {got:e}, want {want:e}"
                    );
                }
                if p == 0.0 {
                    assert!(same(got, lo), "{ty:?} {x:e}: a representable value moved");
                }
            }
        }
    }
}

/// Over 10^6 roundings of values strictly between two neighbours (random words from the
/// counter hash, as a run would draw them), the mean error is within 4 standard errors of zero;
/// the standard error from the two-point distribution itself.
#[test]
fn stochastic_rounding_is_unbiased() {
    let cases: [(Half, f32); 6] = [
        (Half::Bf16, 1.0 + 3.0 * f32::EPSILON),
        (Half::Bf16, 0.08),
        (Half::Bf16, -2.71),
        (Half::F16, 1.0 + 0.3 / 1024.0),
        (Half::F16, 3.0e-6), // an f16 subnormal
        (Half::F16, -1234.567),
    ];
    for (ty, x) in cases {
        let (lo, hi, p) = neighbours(ty, x);
        assert!(p > 0.0 && p < 1.0, "{x} lies between two values");
        let n = 1_000_000u64;
        let mut sum = 0.0f64;
        for i in 0..n {
            let r = stochastic_word(rounding_key(2026, 7, 3), 0, i);
            let got = ty.to_f32(ty.store(x, 0.0, Rounding::Stochastic(r))) as f64;
            sum += got - x as f64;
        }
        let mean = sum / n as f64;
        let step = (hi as f64 - lo as f64).abs();
        let se = step * (p * (1.0 - p) / n as f64).sqrt();
        assert!(
            mean.abs() <= 4.0 * se,
            "{ty:?} {x}: mean error {mean:e}, standard error {se:e}"
        );
    }
}

/// The word of element `e` of tensor `t` at step `s` of a run with seed `seed`.
fn word(seed: u32, s: u32, t: u32, e: u64) -> u32 {
    stochastic_word(rounding_key(seed, s, t), 0, e)
}

#[test]
fn the_random_word_is_the_counter_hash_bit_for_bit() {
    let mut rng = SmallRng::seed_from_u64(29);
    let mut counters: Vec<(u32, u32, u32, u32, u64)> = vec![
        (0, 0, 0, 0, 0),
        (u32::MAX, u32::MAX, u32::MAX, 7, (1 << 48) - 1),
        (1, 1, 0, 1, 1 << 32),
        (2026, 1500, 7, 2, (1 << 30) - 1),
    ];
    for _ in 0..100_000 {
        counters.push((
            rng.gen(),
            rng.gen(),
            rng.gen_range(0..256),
            rng.gen_range(0..8),
            rng.gen_range(0..1u64 << 48),
        ));
    }
    for (seed, step, tensor, buffer, element) in counters {
        assert_eq!(
            stochastic_word(rounding_key(seed, step, tensor), buffer, element),
            reference_word(seed, step, tensor, buffer, element),
            "seed {seed} step {step} tensor {tensor} buffer {buffer} element {element}"
        );
    }
}

/// The buffers of one element draw apart, and so do the two elements of a pair (the halves of
/// one word): over 10^5 elements, the rounding directions of the weight and a moment, of
/// the weight and `v`, and of an element and its pair's other one agree about half the time
/// (independent), not always.
#[test]
fn each_buffer_of_an_element_draws_its_own_word() {
    let key = rounding_key(11, 4, 2);
    let n = 100_000u64;
    let up = |ordinal, e| stochastic_word(key, ordinal, e) >= 0x8000;
    let pairs: [(u32, u64, u32, u64); 3] = [(0, 0, 1, 0), (0, 0, 2, 0), (0, 0, 0, 1)];
    for (a, da, b, db) in pairs {
        let agree = (0..n)
            .filter(|&i| up(a, 2 * i + da) == up(b, 2 * i + db))
            .count() as u64;
        assert!(
            (n * 48 / 100..n * 52 / 100).contains(&agree),
            "ordinal {a} (+{da}) and {b} (+{db}): {agree} of {n} agree"
        );
    }
}

#[test]
fn one_tensor_and_step_give_every_element_its_own_word() {
    // The chain's first word is a bijection of the pair's low half, and its two halves are the
    // draws of the pair's two elements: 2^20 elements, 2^19 different words, and each 16-bit
    // draw value about equally often (16 times each, uniform).
    let key = rounding_key(3, 9, 1);
    let mut words: Vec<u32> = (0..1u64 << 19)
        .map(|pair| stochastic_word(key, 0, 2 * pair) | stochastic_word(key, 0, 2 * pair + 1) << 16)
        .collect();
    assert!(words
        .iter()
        .enumerate()
        .all(|(pair, &w)| w == stochastic_pair_word(key, 0, pair as u64)));
    let mut counts = vec![0u32; 1 << 16];
    for w in &words {
        counts[(w & 0xffff) as usize] += 1;
        counts[(w >> 16) as usize] += 1;
    }
    words.sort_unstable();
    words.dedup();
    assert_eq!(words.len(), 1 << 19);
    let (low, high) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
    assert!(*low >= 1 && *high <= 40, "draw counts from {low} to {high}");
    // A draw holds 16 bits, the resolution of a bf16 rounding.
    assert!((0..1000u64).all(|e| stochastic_word(key, 3, e) < 1 << 16));
}

#[test]
fn the_random_word_is_a_function_of_its_counters_and_changes_with_each() {
    let base = word(1, 10, 2, 3);
    assert_eq!(base, word(1, 10, 2, 3), "the same counters, the same word");
    for other in [
        word(2, 10, 2, 3),
        word(1, 11, 2, 3),
        word(1, 10, 3, 3),
        word(1, 10, 2, 4),
    ] {
        assert_ne!(base, other);
    }
    // With the seed fixed, consecutive steps of one element round differently: of 10^4 steps,
    // about half round up (a constant word would round every step the same way).
    let x = 1.0 + 0.5 / 128.0; // halfway between two bf16 values
    let ups = (0..10_000u64)
        .filter(|&t| {
            let r = stochastic_word(rounding_key(5, t as u32, 0), 0, 42);
            bf16_to_f32(bf16_round(x, Rounding::Stochastic(r))) > x
        })
        .count();
    assert!(
        (4_600..=5_400).contains(&ups),
        "{ups} of 10000 steps rounded up"
    );
}

/// The largest value of the type within `bound`, from the model.
fn largest_within(ty: Half, bound: f32) -> f32 {
    let (lo, _, _) = neighbours(ty, bound);
    lo
}

#[test]
fn the_stored_value_never_exceeds_the_bound() {
    let mut rng = SmallRng::seed_from_u64(28);
    // Bounds each type represents and bounds it does not, their f32 neighbours, and f16's edge.
    let mut bounds = vec![
        0.08f32, 1.0, 100.0, 0.1, 3.0e-5, 65504.0, 65519.0, 65520.0, 1.0e5, 3.0e38,
    ];
    for b in bounds.clone() {
        bounds.push(f32::from_bits(b.to_bits() + 1));
        bounds.push(f32::from_bits(b.to_bits() - 1));
    }
    for ty in [Half::Bf16, Half::F16] {
        for &bound in &bounds {
            let top = largest_within(ty, bound);
            let mut xs = vec![
                bound,
                -bound,
                2.0 * bound,
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::MAX,
            ];
            for _ in 0..2_000 {
                xs.push(rng.gen_range(-2.0..2.0) * bound);
            }
            for &x in &xs {
                for rounding in [
                    Rounding::Nearest,
                    Rounding::Stochastic(rng.gen()),
                    Rounding::Stochastic(u32::MAX),
                ] {
                    let stored = ty.to_f32(ty.store(x, bound, rounding));
                    assert!(
                        stored.abs() <= bound,
                        "{ty:?} bound {bound:e} x {x:e} {rounding:?}: stored {stored:e}"
                    );
                    if x.abs() >= bound {
                        assert!(
                            same(stored.abs(), top),
                            "{ty:?} bound {bound:e} x {x:e}: stored {stored:e}, largest within {top:e}"
                        );
                    }
                }
            }
            // NaN stays NaN, whatever the bound.
            assert!(ty
                .to_f32(ty.store(f32::NAN, bound, Rounding::Nearest))
                .is_nan());
        }
    }
}

#[test]
fn without_a_bound_the_store_is_the_plain_rounding() {
    for x in [0.08f32, 70000.0, -1.0e30, 1.0e-9] {
        assert_eq!(
            Half::Bf16.store(x, 0.0, Rounding::Nearest),
            bf16::from_f32(x).to_bits()
        );
        assert_eq!(
            Half::F16.store(x, 0.0, Rounding::Nearest),
            f16::from_f32(x).to_bits()
        );
    }
    // f16's overflow with the clamp off is infinity, as IEEE rounds it.
    assert_eq!(
        f16_to_f32(Half::F16.store(70000.0, 0.0, Rounding::Nearest)),
        f32::INFINITY
    );
    // With it on, at a bound past 65,504: the largest finite.
    assert_eq!(
        f16_to_f32(Half::F16.store(70000.0, 1.0e5, Rounding::Nearest)),
        65504.0
    );
}

/// `adamw_bf16_sr`'s per-element store (`element`, the code its entries run) against the f64
/// AdamW reference (`adamant::reference`), clamped, taken to f32 and rounded stochastically from
/// the definition with the hash of `support::stochastic`, then held within the bound: within one
/// bf16 step always (the f32 update and the f64 one may fall either side of a draw), equal in at
/// least 99.9 % of 10^5 random elements, and never past the bound.
#[test]
fn the_stochastic_kernel_stores_the_reference_rounded_with_its_word() {
    use adamant::reference::{self, Elem, Hyper, KernelRef};
    use adamant_kernels::half_weights::adamw_bf16_sr;
    let mut rng = SmallRng::seed_from_u64(30);
    let n = 100_000;
    let mut exact = 0;
    for i in 0..n {
        let bf = |x: f32| bf16::from_f32(x).to_f32();
        let (p, g) = (bf(rng.gen_range(-0.2..0.2)), bf(rng.gen_range(-1.0..1.0)));
        let (m0, v0) = (rng.gen_range(-0.1f32..0.1), rng.gen_range(0.0f32..0.01));
        let bound = [0.08f32, 1.0, 0.0][i % 3];
        let (lr, wd, step, seed) = (3e-3f32, 0.01f32, 1 + (i % 50) as u32, 2026u32);
        let hp = Hyper::new(lr, 0.9, 0.999, 1e-8, wd, step as u64);
        let e = reference::step(
            KernelRef::Attn,
            Elem::new(p as f64, m0 as f64, v0 as f64, 0.0),
            g as f64,
            &hp,
            bound as f64,
        );
        let word = reference_word(seed, step, 0, 0, i as u64);
        let want = reference_store(e.p as f32, word, bound);
        let (mut m, mut v) = (m0, v0);
        let got = adamw_bf16_sr::element(
            p,
            g,
            &mut m,
            &mut v,
            lr,
            0.9,
            0.999,
            1e-8,
            wd,
            hp.bias_correction1 as f32,
            hp.bias_correction2 as f32,
            step,
            seed,
            bound,
            stochastic_word(rounding_key(seed, step, 0), 0, i as u64),
        );
        let got_bits = bf16::from_f32(got).to_bits();
        assert_eq!(got, bf16::from_bits(got_bits).to_f32(), "a bf16 value");
        assert!(
            bound == 0.0 || got.abs() <= bound,
            "{i}: {got} past {bound}"
        );
        let steps = (got_bits as i32 - want as i32).abs();
        assert!(
            steps <= 1,
            "{i}: 0x{got_bits:04x} against 0x{want:04x} ({})",
            e.p
        );
        exact += (steps == 0) as usize;
    }
    assert!(exact * 1000 >= n * 999, "{exact} of {n} exact");
}

/// The vector loop's word of a lane is the element's own word, for every group start that is a
/// multiple of 4 (past 2^32 too: the pair's high half enters the hash).
#[test]
fn a_lanes_word_is_its_elements_word() {
    let key = rounding_key(17, 3, 5);
    for group in [0u64, 4, 4096, (1 << 32) - 4, 1 << 32, (1 << 40) + 12] {
        for ordinal in 0..3 {
            for lane in 0..4u32 {
                assert_eq!(
                    stochastic_lane_word(key, ordinal, group, lane),
                    stochastic_word(key, ordinal, group + lane as u64),
                    "group {group}, ordinal {ordinal}, lane {lane}"
                );
            }
        }
    }
}
