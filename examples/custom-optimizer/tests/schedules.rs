//! The downstream example's per-step optimizers on the CPU: centered RMSprop and NAdam against
//! f64 references written from the formulas, NAdam's schedule (`μ_t`, `μ_{t+1}`, `Π_t`) against
//! the f64 schedule for every step from 1 to 10,000, and the record layout the macro generated
//! from the kernels' declared lifetimes.
use adamant_device::abi::{ArgValue, Domain, Lifetime, OptimizerEntry, ParamType};
use adamant_device::step::RECORD_SCALARS;
use custom_optimizer::reference::{self, NadamHyper};
use custom_optimizer::{nadam_kernel, rmsprop_centered_kernel};

/// `|a - b|` within `units` f32 epsilons of `scale`.
fn close(a: f32, b: f64, scale: f64, units: f64) -> bool {
    (a as f64 - b).abs() <= units * f32::EPSILON as f64 * scale.max(f64::MIN_POSITIVE)
}

const NADAM: nadam_kernel::Hyper = nadam_kernel::Hyper {
    beta1: 0.9,
    eps: 1e-8,
    weight_decay: 0.01,
    momentum_decay: 4e-3,
};

#[test]
fn nadams_schedule_matches_the_f64_schedule_for_ten_thousand_steps() {
    let (beta1, psi) = (NADAM.beta1 as f64, NADAM.momentum_decay as f64);
    let mut derived = nadam_kernel::Derived::INITIAL;
    let mut product = 1.0f64;
    for t in 1..=10_000u32 {
        derived = nadam_kernel::Derived::next(t, &NADAM, &derived);
        let mu = reference::nadam_mu(t, beta1, psi);
        let mu_next = reference::nadam_mu(t + 1, beta1, psi);
        product *= mu;
        // μ: a few roundings of values near β1.
        assert!(
            close(derived.mu, mu, mu, 4.0),
            "t {t}: μ {} vs {mu}",
            derived.mu
        );
        assert!(
            close(derived.mu_next, mu_next, mu_next, 4.0),
            "t {t}: μ_next {} vs {mu_next}",
            derived.mu_next
        );
        // Π: one rounding per step (and μ's own error) accumulates linearly; below f32's
        // normal range it is a subnormal, whose absolute error is what the update sees
        // through 1 - Π.
        let allowed = 6.0 * t as f64 * f32::EPSILON as f64 * product + t as f64 * 1.5e-45;
        assert!(
            (derived.mu_product as f64 - product).abs() <= allowed,
            "t {t}: Π {} vs {product}",
            derived.mu_product
        );
        if t % 997 == 0 {
            // The host's starting point for a record resumed at step t is the same bits.
            assert_eq!(nadam_kernel::derived_at(t, &NADAM), derived, "t {t}");
        }
    }
    assert_eq!(
        nadam_kernel::derived_at(0, &NADAM),
        nadam_kernel::Derived::INITIAL
    );
}

#[test]
fn the_record_layout_follows_the_declared_lifetimes() {
    let layout = <nadam_kernel::Entry as OptimizerEntry>::STEPPED_DESCRIPTOR.record;
    let summary: Vec<(&str, Option<usize>)> = layout.iter().map(|r| (r.name, r.slot())).collect();
    assert_eq!(
        summary,
        [
            ("lr", None),
            ("beta2", None),
            ("bias_correction2", None),
            ("beta1", Some(0)),
            ("eps", Some(1)),
            ("weight_decay", Some(2)),
            ("momentum_decay", Some(3)),
            ("mu", Some(4)),
            ("mu_next", Some(5)),
            ("mu_product", Some(6)),
        ]
    );
    assert!(layout.iter().all(|r| r.ty == ParamType::F32));
    assert!(matches!(
        layout[4].lifetime,
        Lifetime::Hyper {
            domain: Domain { .. },
            ..
        }
    ));
    for derived in &layout[7..] {
        assert_eq!(
            derived.lifetime,
            Lifetime::Derived {
                slot: derived.slot().unwrap() as u32,
                initial_bits: 1.0f32.to_bits()
            }
        );
    }
    // The multi-tensor stepped entry reads the same record.
    assert_eq!(
        <nadam_kernel::Entry as OptimizerEntry>::MULTI_STEPPED_DESCRIPTOR.record,
        layout
    );
    // A kernel without per-step scalars of its own has only hyperparameters, from word 0.
    let rms = <rmsprop_centered_kernel::Entry as OptimizerEntry>::STEPPED_DESCRIPTOR.record;
    let slots: Vec<Option<usize>> = rms.iter().map(|r| r.slot()).collect();
    assert_eq!(slots, [None, Some(0), Some(1), Some(2), Some(3)]);
    assert!(<rmsprop_centered_kernel::Entry as OptimizerEntry>::SCHEDULE.is_none());
    assert_eq!(
        <nadam_kernel::Entry as OptimizerEntry>::SCHEDULE.map(|d| d.name),
        Some("nadam_kernel_schedule")
    );
}

#[test]
fn the_record_words_round_trip_the_values_at_their_slots() {
    let mut words = [0u32; RECORD_SCALARS];
    let hyper = <nadam_kernel::Entry as OptimizerEntry>::hyper_values(&NADAM);
    let derived = <nadam_kernel::Entry as OptimizerEntry>::derived_values(7, &NADAM);
    let layout = <nadam_kernel::Entry as OptimizerEntry>::STEPPED_DESCRIPTOR.record;
    let mut values = hyper.iter().chain(&derived);
    for scalar in layout.iter().filter(|r| r.slot().is_some()) {
        let ArgValue::F32(v) = values.next().unwrap() else {
            panic!("f32 scalars")
        };
        words[scalar.slot().unwrap()] = v.to_bits();
    }
    assert_eq!(nadam_kernel::Hyper::from_words(&words), NADAM);
    let at_7 = nadam_kernel::derived_at(7, &NADAM);
    assert_eq!(nadam_kernel::Derived::from_words(&words), at_7);
    // The schedule entry writes the derived words and no other.
    let mut written = [0xDEAD_BEEFu32; RECORD_SCALARS];
    at_7.write_words(&mut written);
    for (slot, word) in written.iter().enumerate() {
        if (4..7).contains(&slot) {
            assert_eq!(*word, words[slot]);
        } else {
            assert_eq!(*word, 0xDEAD_BEEF, "word {slot} was written");
        }
    }
}

/// A deterministic stream of test values (signs, magnitudes from 1e-4 to 10).
fn values() -> Vec<f32> {
    let mut v = vec![0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.0];
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for _ in 0..40 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let unit = (x >> 40) as f32 / (1u64 << 24) as f32;
        let magnitude = 10f32.powf(unit * 5.0 - 4.0);
        v.push(if x & 1 == 0 { magnitude } else { -magnitude });
    }
    v
}

#[test]
fn centered_rmsprop_matches_the_f64_reference() {
    let (lr, alpha, eps, wd) = (1e-2f32, 0.99f32, 1e-8f32, 0.01f32);
    let mut checked = 0;
    for momentum in [0.0f32, 0.9] {
        for &p in &values() {
            for &g in &values()[..20] {
                for &(sq0, ga0, b0) in
                    &[(0.0f32, 0.0f32, 0.0f32), (0.5, 0.1, -0.2), (4.0, -1.5, 1.0)]
                {
                    for bound in [0.0f32, 1.0] {
                        let (mut sq, mut ga, mut b) = (sq0, ga0, b0);
                        let stored = rmsprop_centered_kernel::element(
                            p, g, &mut sq, &mut ga, &mut b, lr, alpha, eps, wd, momentum, bound,
                        );
                        let (rp, rsq, rga, rb) = reference::rmsprop_centered(
                            p as f64,
                            g as f64,
                            (sq0 as f64, ga0 as f64, b0 as f64),
                            lr as f64,
                            alpha as f64,
                            eps as f64,
                            wd as f64,
                            momentum as f64,
                            bound as f64,
                        );
                        let d = g.abs() as f64 + wd as f64 * p.abs() as f64;
                        assert!(close(sq, rsq, sq0 as f64 + d * d, 4.0), "sq {sq} vs {rsq}");
                        assert!(
                            close(ga, rga, ga0.abs() as f64 + d, 4.0),
                            "ga {ga} vs {rga}"
                        );
                        // 1/avg amplifies the error of square_avg - grad_avg² where they
                        // nearly cancel: judge the buffer by that cancellation's size.
                        let avg = (rsq - rga * rga).sqrt() + eps as f64;
                        let cancel = (rsq + rga * rga) / (avg * avg);
                        let bscale = b0.abs() as f64 + d / avg * (1.0 + cancel);
                        assert!(close(b, rb, bscale, 8.0), "buf {b} vs {rb} (p {p} g {g})");
                        let scale = p.abs() as f64 + lr as f64 * bscale;
                        assert!(
                            close(stored, rp, scale, 8.0),
                            "p {p} g {g} m {momentum} bound {bound}: {stored} vs {rp}"
                        );
                        if bound > 0.0 {
                            assert!(stored.abs() <= bound);
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 5_000, "{checked}");
}

#[test]
fn nadam_matches_the_f64_reference_at_every_step_tried() {
    // The f64 reference takes the f32 values the kernel gets (1 - β2 differs by 1.3e-5
    // relative between 0.999 and 0.999f32).
    let h = NadamHyper {
        lr: 2e-3f32 as f64,
        beta1: NADAM.beta1 as f64,
        beta2: 0.999f32 as f64,
        eps: NADAM.eps as f64,
        weight_decay: NADAM.weight_decay as f64,
        momentum_decay: NADAM.momentum_decay as f64,
    };
    let mut checked = 0;
    for t in [1u32, 2, 3, 10, 100, 1000, 5000] {
        let derived = nadam_kernel::derived_at(t, &NADAM);
        let r_derived = reference::nadam_derived(t, h.beta1, h.momentum_decay);
        let bc2 = adamant_device::step::bias_correction(h.beta2 as f32, t);
        for &p in &values() {
            for &g in &values()[..20] {
                for &(m0, v0) in &[(0.0f32, 0.0f32), (0.1, 0.02), (-1.0, 3.0)] {
                    let (mut m, mut v) = (m0, v0);
                    let stored = nadam_kernel::element(
                        p,
                        g,
                        &mut m,
                        &mut v,
                        h.lr as f32,
                        h.beta2 as f32,
                        bc2,
                        NADAM.beta1,
                        NADAM.eps,
                        NADAM.weight_decay,
                        NADAM.momentum_decay,
                        derived.mu,
                        derived.mu_next,
                        derived.mu_product,
                        1.0,
                    );
                    let (rp, rm, rv) = reference::nadam(
                        p as f64,
                        g as f64,
                        (m0 as f64, v0 as f64),
                        t,
                        &h,
                        r_derived,
                        1.0,
                    );
                    let d = g.abs() as f64 + h.weight_decay * p.abs() as f64;
                    assert!(
                        close(m, rm, m0.abs() as f64 + d, 4.0),
                        "t {t}: m {m} vs {rm}"
                    );
                    assert!(close(v, rv, v0 as f64 + d * d, 4.0), "t {t}: v {v} vs {rv}");
                    // The two step sizes divide by 1 - Π, which loses digits at small t (Π
                    // near 1 - μ): judge the update by the size of its terms, in units of
                    // that conditioning.
                    let denom = (rv / (1.0 - h.beta2.powi(t as i32))).sqrt() + h.eps;
                    let (mu, mu_next, prod) = r_derived;
                    let terms = h.lr * (1.0 - mu) / (1.0 - prod) * d / denom
                        + h.lr * mu_next / (1.0 - prod * mu_next) * rm.abs() / denom;
                    let conditioning = 1.0 / (1.0 - prod) + 1.0 / (1.0 - prod * mu_next);
                    let scale = p.abs() as f64 + terms * conditioning;
                    assert!(
                        close(stored, rp, scale, 16.0),
                        "t {t} p {p} g {g}: {stored} vs {rp}"
                    );
                    assert!(stored.is_nan() || stored.abs() <= 1.0);
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 10_000, "{checked}");
}
