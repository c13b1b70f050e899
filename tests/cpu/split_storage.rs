//! bf16 weights made exact by a 16-bit remainder (`adamant_device::storage::split_store`,
//! `split_join`: issue 26's 26 B path) and by an f32 master (`adamw_bf16_master`: the 28 B path),
//! against references written here from the definitions:
//!
//! - the high half is the clamped master rounded to nearest with ties away from zero (chosen
//!   in f64 between the two bf16 neighbours), the pair joins back to the master bit for bit, and
//!   when the high half would pass the bound the master is held at the largest value below the
//!   midpoint under it, so both the weight and the master stay within the bound;
//! - the kernels' elements against the f64 AdamW reference (`adamant::reference`), stored as
//!   the definitions say, over 10^5 random elements and bounds that bf16 represents and does not.
use adamant_device::clamp::weight_clamp;
use adamant_device::storage::{split_join, split_store};
use half::bf16;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[path = "../support/mod.rs"]
mod support;

use support::split::{contract, split_reference as reference};

fn values(rng: &mut SmallRng, n: usize) -> Vec<f32> {
    let mut out = vec![
        0.0,
        -0.0,
        1.0,
        f32::from_bits(0x3F80_8000),
        -f32::from_bits(0x3F80_8000),
        f32::from_bits(0x3F80_7FFF),
        f32::from_bits(0x3F81_8000),
        0.08,
        -0.08,
        f32::MAX,
        -f32::MAX,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7F80_0001),
    ];
    for _ in 0..n {
        out.push(f32::from_bits(rng.gen::<u32>()));
        out.push(rng.gen_range(-0.2f32..0.2));
    }
    out
}

fn bounds() -> Vec<f32> {
    vec![
        0.0,
        -1.0,
        f32::NAN,
        1.0,
        0.08,
        0.1,
        // Just past a bf16 value, and at a midpoint between two.
        f32::from_bits(0x3F80_0001),
        f32::from_bits(0x3F80_8000),
        65504.0,
        f32::MAX,
    ]
}

#[test]
fn the_halves_are_the_master_rounded_ties_away_and_join_back_exactly() {
    let mut rng = SmallRng::seed_from_u64(26);
    let (mut held, mut ties) = (0, 0);
    for x in values(&mut rng, 20_000) {
        for bound in bounds() {
            let (high, low) = split_store(x, bound);
            let weight = bf16::from_bits(high).to_f32();
            let master = split_join(high, low);
            let (want_weight, want_master) = reference(x, bound);
            if want_master.is_nan() {
                assert!(weight.is_nan() && master.is_nan(), "{x} {bound}");
                continue;
            }
            assert_eq!(
                weight.to_bits(),
                want_weight.to_bits(),
                "weight of {x:e}, {bound}"
            );
            assert_eq!(
                master.to_bits(),
                want_master.to_bits(),
                "master of {x:e}, {bound}"
            );
            held += (want_master != contract(x, bound)) as usize;
            ties += (contract(x, bound).to_bits() & 0xFFFF == 0x8000) as usize;
            if bound > 0.0 {
                assert!(
                    weight.abs() <= bound,
                    "{x:e}: weight {weight:e} past {bound}"
                );
                assert!(
                    master.abs() <= bound,
                    "{x:e}: master {master:e} past {bound}"
                );
            }
        }
    }
    assert!(held > 100, "the hold was exercised {held} times");
    assert!(ties > 10, "ties were exercised {ties} times");
}

#[test]
fn without_a_bound_every_f32_is_split_and_joined_exactly() {
    let mut rng = SmallRng::seed_from_u64(27);
    for _ in 0..1_000_000 {
        let x = f32::from_bits(rng.gen::<u32>());
        let (high, low) = split_store(x, 0.0);
        let joined = split_join(high, low);
        if x.is_nan() {
            assert!(joined.is_nan() && bf16::from_bits(high).is_nan(), "{x:?}");
        } else {
            assert_eq!(joined.to_bits(), x.to_bits(), "{x:e}");
            // The weight is the master rounded to nearest, ties away.
            let w = bf16::from_bits(high).to_f32();
            assert_eq!(w.to_bits(), reference(x, 0.0).0.to_bits(), "{x:e}");
        }
    }
}

/// AdamW's f64 reference step for one element (`adamant::reference`, AdamW as
/// `attn_adam_kernel` computes it), clamped.
fn adamw_reference(p: f32, g: f32, m: f32, v: f32, step: u32, bound: f32) -> f64 {
    use adamant::reference::{self, Elem, Hyper, KernelRef};
    let hp = Hyper::new(3e-3, 0.9, 0.999, 1e-8, 0.01, step as u64);
    let e = reference::step(
        KernelRef::Attn,
        Elem::new(p as f64, m as f64, v as f64, 0.0),
        g as f64,
        &hp,
        bound as f64,
    );
    e.p
}

/// The bias corrections the kernels take, as the reference computes them.
fn corrections(step: u32) -> (f32, f32) {
    let hp = adamant::reference::Hyper::new(3e-3, 0.9, 0.999, 1e-8, 0.01, step as u64);
    (hp.bias_correction1 as f32, hp.bias_correction2 as f32)
}

/// One random element: a master, a bf16 gradient, moments, a step and a bound.
struct Case {
    p: f32,
    g: f32,
    m: f32,
    v: f32,
    step: u32,
    bound: f32,
}

fn cases(seed: u64) -> impl Iterator<Item = Case> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..100_000).map(move |i| Case {
        p: rng.gen_range(-0.2f32..0.2),
        g: bf16::from_f32(rng.gen_range(-1.0f32..1.0)).to_f32(),
        m: rng.gen_range(-0.1f32..0.1),
        v: rng.gen_range(0.0f32..0.01),
        step: 1 + (i % 50) as u32,
        bound: [0.08f32, 1.0, 0.0][i % 3],
    })
}

/// The remainder kernel's element reads the exact master its halves hold and stores the split
/// of the clamped update: its weight is the reference rounded ties away and held (equal in at
/// least 99.9 % of elements, within one bf16 step always: the f32 and f64 updates may fall
/// either side of a midpoint), never past the bound.
#[test]
fn the_remainder_kernel_stores_the_split_reference() {
    use adamant_kernels::half_weights::adamw_bf16_remainder;
    let (mut n, mut exact) = (0, 0);
    for c in cases(31) {
        let (high, low) = split_store(c.p, 0.0);
        let master = split_join(high, low);
        assert_eq!(master, c.p, "an f32 master is held exactly");
        let (bc1, bc2) = corrections(c.step);
        let (mut m, mut v) = (c.m, c.v);
        let got = adamw_bf16_remainder::element(
            master, c.g, &mut m, &mut v, 3e-3, 0.9, 0.999, 1e-8, 0.01, bc1, bc2, c.bound,
        );
        let want = reference(
            adamw_reference(c.p, c.g, c.m, c.v, c.step, c.bound) as f32,
            c.bound,
        )
        .0;
        let steps =
            (bf16::from_f32(got).to_bits() as i32 - bf16::from_f32(want).to_bits() as i32).abs();
        assert!(steps <= 1, "{got:e} against {want:e}");
        assert!(
            c.bound == 0.0 || got.abs() <= c.bound,
            "{got:e} past {}",
            c.bound
        );
        exact += (steps == 0) as usize;
        n += 1;
    }
    assert!(exact * 1000 >= n * 999, "{exact} of {n} exact");
}

/// The master kernel's element stores the bf16 copy of the clamped master, rounded to nearest
/// even and held: against the reference rounded by the `half` crate (to nearest even) and taken
/// one step toward zero past the bound; the master it keeps is the f32 clamp of its update.
#[test]
fn the_master_kernel_stores_the_rounded_reference() {
    use adamant_kernels::half_weights::adamw_bf16_master;
    let (mut n, mut exact) = (0, 0);
    for c in cases(32) {
        let (bc1, bc2) = corrections(c.step);
        let (mut m, mut v) = (c.m, c.v);
        let args = (3e-3, 0.9, 0.999, 1e-8, 0.01, bc1, bc2);
        let got = adamw_bf16_master::element(
            c.p, c.g, &mut m, &mut v, args.0, args.1, args.2, args.3, args.4, args.5, args.6,
            c.bound,
        );
        let (mut m2, mut v2) = (c.m, c.v);
        let raw = adamw_bf16_master::update(
            c.p, c.g, &mut m2, &mut v2, args.0, args.1, args.2, args.3, args.4, args.5, args.6,
        );
        let master = weight_clamp(raw, c.bound);
        assert_eq!(master.to_bits(), contract(raw, c.bound).to_bits());
        let reference = adamw_reference(c.p, c.g, c.m, c.v, c.step, c.bound) as f32;
        let mut want = bf16::from_f32(reference);
        if c.bound > 0.0 && want.to_f32().abs() > c.bound {
            want = bf16::from_bits(want.to_bits() - 1);
        }
        let steps = (bf16::from_f32(got).to_bits() as i32 - want.to_bits() as i32).abs();
        assert!(steps <= 1, "{got:e} against {want}");
        assert!(
            c.bound == 0.0 || got.abs() <= c.bound,
            "{got:e} past {}",
            c.bound
        );
        // The copy is the master's own rounding: the two buffers never disagree.
        let mut copy = bf16::from_f32(master);
        if c.bound > 0.0 && copy.to_f32().abs() > c.bound {
            copy = bf16::from_bits(copy.to_bits() - 1);
        }
        assert_eq!(got.to_bits(), copy.to_f32().to_bits(), "copy of {master:e}");
        exact += (steps == 0) as usize;
        n += 1;
    }
    assert!(exact * 1000 >= n * 999, "{exact} of {n} exact");
}
