//! `RootDivisor::root_over(v)` against the host's own correctly rounded `sqrt(v) / sqrt(d)`, bit
//! for bit: the special values, random `v` for many divisors across the domain, and (ignored by
//! default, minutes on one core) every `f32` `v` for a set of divisors:
//! `cargo test --release -p adamant-device --test root_divisor -- --ignored --nocapture`.
use adamant_device::math::{RootDivisor, MIN_DIVISOR};

/// What the kernels computed before `RootDivisor`: two correctly rounded IEEE operations.
fn divided(v: f32, d: f32) -> f32 {
    v.sqrt() / d.sqrt()
}

/// Equal bits, or both NaN (the GPU may return its canonical NaN, the host another payload).
fn same(got: f32, want: f32) -> bool {
    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan())
}

/// A small deterministic generator (SplitMix64), so a failure names a reproducible case.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Divisors across the whole domain `[2^-126, 1]`: its ends, the bias corrections of the betas
/// people use at their first steps and late, values next to powers of two (where `1/sqrt(d)`
/// has a mantissa of all ones or none), and random bit patterns.
fn divisors(random: usize) -> Vec<f32> {
    let mut d = vec![
        MIN_DIVISOR,
        f32::from_bits(MIN_DIVISOR.to_bits() + 1),
        1.0,
        f32::from_bits(1.0f32.to_bits() - 1),
        0.5,
        0.25,
        f32::from_bits(0.5f32.to_bits() - 1),
        f32::from_bits(0.25f32.to_bits() + 1),
        2f32.powi(-24),
    ];
    for beta in [0.9f64, 0.99, 0.999, 0.9999, 0.999_999] {
        for t in [1, 2, 3, 10, 1000, 100_000] {
            d.push((1.0 - beta.powi(t)) as f32);
        }
    }
    let mut rng = Rng(0x5EED);
    let lo = MIN_DIVISOR.to_bits() as u64;
    let hi = 1.0f32.to_bits() as u64;
    d.extend((0..random).map(|_| f32::from_bits((lo + rng.next() % (hi - lo + 1)) as u32)));
    d
}

#[test]
fn the_special_values_are_the_divisions() {
    let specials = [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -1.0,
        f32::from_bits(1),
        f32::from_bits(0x007F_FFFF),
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::from_bits(0x7F7F_FFFE),
        1.0,
    ];
    for d in divisors(200) {
        let divisor = RootDivisor::new(d);
        for v in specials {
            let (got, want) = (divisor.root_over(v), divided(v, d));
            assert!(
                same(got, want),
                "v = {v:e}, d = {d:e}: {got:e} against {want:e}"
            );
        }
    }
    // The sign of a zero survives, which the correction steps alone would lose.
    assert!(RootDivisor::new(0.3).root_over(-0.0).is_sign_negative());
}

#[test]
fn random_values_are_the_divisions_for_many_divisors() {
    let mut rng = Rng(0xD1D);
    let mut checked = 0u64;
    for d in divisors(400) {
        let divisor = RootDivisor::new(d);
        for _ in 0..4096 {
            // Every positive finite pattern is as likely, subnormals and the largest included.
            let v = f32::from_bits((rng.next() % 0x7F80_0000) as u32);
            let (got, want) = (divisor.root_over(v), divided(v, d));
            assert!(
                same(got, want),
                "v = {v:e}, d = {d:e}: {got:e} against {want:e}"
            );
            checked += 1;
        }
    }
    assert!(checked > 1_000_000);
}

/// One step of the correction chain is not enough in general (the first product may be 1.5
/// ulps off): a chain of one step disagrees with the division somewhere, which the two-step
/// chain does not. Shows that the test above can fail and why the second step is there.
#[test]
fn one_correction_step_alone_is_sometimes_wrong() {
    let mut rng = Rng(0x0E);
    let (mut wrong, mut product_wrong) = (0u64, 0u64);
    for d in divisors(64) {
        let c = d.sqrt();
        let y = 1.0 / c;
        for _ in 0..20_000 {
            let v = f32::from_bits((rng.next() % 0x7F80_0000) as u32 | 0x0080_0000);
            let x = v.sqrt();
            let q0 = x * y;
            let q1 = (-q0).mul_add(c, x).mul_add(y, q0);
            wrong += (q1.to_bits() != (x / c).to_bits()) as u64;
            product_wrong += (q0.to_bits() != (x / c).to_bits()) as u64;
        }
    }
    // The product alone, with no correction, is wrong far more often than one step.
    assert!(
        product_wrong > 10 * wrong,
        "{product_wrong} products against {wrong} one-step quotients off the division"
    );
    assert!(
        wrong > 0,
        "one step matched every division: the test set is too weak"
    );
}

#[test]
#[ignore = "every f32 for 24 divisors: about 25 minutes on one core; run with --release --ignored"]
fn every_value_is_the_division_for_a_set_of_divisors() {
    let mut set = divisors(4);
    set.sort_by(f32::total_cmp);
    set.dedup();
    // 24 of them, spread over the sorted list (both ends included).
    let step = (set.len() - 1) as f64 / 23.0;
    let picked: Vec<f32> = (0..24)
        .map(|i| set[(i as f64 * step).round() as usize])
        .collect();
    for d in picked {
        let divisor = RootDivisor::new(d);
        let mut wrong = 0u64;
        for bits in 0..=u32::MAX {
            let v = f32::from_bits(bits);
            wrong += !same(divisor.root_over(v), divided(v, d)) as u64;
        }
        println!("d = {d:e}: {wrong} of 2^32 differ");
        assert_eq!(wrong, 0, "d = {d:e}");
    }
}

/// Below the domain (`d` subnormal, `c < 2^-63`) the quotient can overflow; the module's comment
/// says that only a quotient within an ulp of `f32::MAX` may then differ (`+inf` for `MAX`).
/// Every other value, overflowing ones included, is still the division.
#[test]
fn below_the_domain_only_the_edge_of_overflow_differs() {
    let mut rng = Rng(0xB10);
    let mut overflowing = 0u64;
    for d in [
        f32::from_bits(1),
        f32::from_bits(0x0000_1234),
        f32::from_bits(0x007F_FFFF),
    ] {
        let divisor = RootDivisor::new(d);
        for _ in 0..200_000 {
            // Large values, where quotients reach and pass the overflow.
            let v = f32::from_bits(0x6000_0000 + (rng.next() % 0x1F80_0000) as u32);
            let (got, want) = (divisor.root_over(v), divided(v, d));
            overflowing += want.is_infinite() as u64;
            let edge = want == f32::MAX && got == f32::INFINITY;
            assert!(
                same(got, want) || edge,
                "v = {v:e}, d = {d:e}: {got:e} against {want:e}"
            );
        }
    }
    assert!(
        overflowing > 0,
        "no quotient overflowed: the case is not exercised"
    );
}
