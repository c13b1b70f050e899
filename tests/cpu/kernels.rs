//! Every optimizer kernel's host build (`<kernel>::element`, what the entry stores, and
//! `<kernel>::update`, the math before the clamp) against the independent f64 reference in
//! `adamant::reference`: random draws over wide ranges of magnitudes, the edge cases, many steps
//! with the state carried over, and proof that the clamp comes from `element` and not `update`.
//!
//! Every expectation comes from the reference (or from the specification, e.g. "a clamped value
//! is exactly the bound"), never from outputs of the code under test.
//!
//! Run with `-- --nocapture` to see the largest errors observed.
use adamant::kernels::optimizers as k;
use adamant::reference::{self as r, Elem, Hyper, KernelRef, RefState, TOLERANCE};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// One element's f32 state as the kernel sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct E32 {
    p: f32,
    m: f32,
    v: f32,
    v_max: f32,
}

impl E32 {
    fn new(p: f32, m: f32, v: f32, v_max: f32) -> E32 {
        E32 { p, m, v, v_max }
    }

    fn widen(self) -> Elem {
        Elem::from_f32(self.p, self.m, self.v, self.v_max)
    }
}

/// Runs the host build of `kernel` on one element: `element` (with the clamp) when `clamp`, else
/// `update`. `bound` is ignored by `update`.
fn run(kernel: KernelRef, clamp: bool, e: E32, g: f32, hp: &Hyper, bound: f32) -> E32 {
    let s = hp.scalars();
    let E32 {
        p,
        mut m,
        mut v,
        mut v_max,
    } = e;
    let (lr, b1, b2, eps, wd) = (s.lr, s.beta1, s.beta2, s.eps, s.weight_decay);
    let (bc1, bc2) = (s.bias_correction1, s.bias_correction2);
    // `element` and `update` of one kernel, with the same leading arguments.
    macro_rules! call {
        ($kernel:ident, $($arg:expr),*) => {
            if clamp {
                k::$kernel::element($($arg,)* bound)
            } else {
                k::$kernel::update($($arg),*)
            }
        };
    }
    let p = match kernel {
        KernelRef::Dqn => call!(
            dqn_adam_update_kernel,
            p,
            g,
            &mut m,
            &mut v,
            s.grad_scale,
            lr,
            b1,
            b2,
            eps,
            wd,
            bc1,
            bc2
        ),
        KernelRef::Iqn => call!(
            iqn_adam_kernel,
            p,
            g,
            &mut m,
            &mut v,
            lr,
            b1,
            b2,
            eps,
            wd,
            bc1,
            bc2
        ),
        KernelRef::Iql => call!(
            iql_adam_kernel,
            p,
            g,
            &mut m,
            &mut v,
            lr,
            b1,
            b2,
            eps,
            wd,
            s.grad_clip,
            bc1,
            bc2
        ),
        KernelRef::Attn => {
            call!(
                attn_adam_kernel,
                p,
                g,
                &mut m,
                &mut v,
                lr,
                b1,
                b2,
                eps,
                wd,
                bc1,
                bc2
            )
        }
        KernelRef::Curiosity => call!(
            curiosity_adam_step,
            p,
            g,
            &mut m,
            &mut v,
            &mut v_max,
            lr,
            b1,
            b2,
            eps,
            bc1,
            bc2
        ),
    };
    E32 { p, m, v, v_max }
}

/// Errors of one element (in units of `EPSILON·scale`, see `reference::error`).
#[derive(Clone, Copy, Debug, Default)]
struct Errors {
    p: f64,
    m: f64,
    v: f64,
    v_max: f64,
}

impl Errors {
    fn max(self, o: Errors) -> Errors {
        Errors {
            p: self.p.max(o.p),
            m: self.m.max(o.m),
            v: self.v.max(o.v),
            v_max: self.v_max.max(o.v_max),
        }
    }

    fn worst(self) -> f64 {
        self.p.max(self.m).max(self.v).max(self.v_max)
    }
}

/// Compares the f32 result `got` with the reference step from `e` (bound 0 for `update`).
fn errors(kernel: KernelRef, clamp: bool, e: E32, g: f32, hp: &Hyper, bound: f32) -> Errors {
    let got = run(kernel, clamp, e, g, hp, bound);
    let ref_bound = if clamp { bound as f64 } else { 0.0 };
    let (want, scale) =
        r::step_with_scale(kernel, e.widen(), Elem::default(), g as f64, hp, ref_bound);
    Errors {
        p: r::error(want.p, scale.p, got.p),
        m: r::error(want.m, scale.m, got.m),
        v: r::error(want.v, scale.v, got.v),
        v_max: if kernel.amsgrad() {
            r::error(want.v_max, scale.v_max, got.v_max)
        } else {
            // Untouched by the other kernels: bit for bit.
            if got.v_max.to_bits() == e.v_max.to_bits() {
                0.0
            } else {
                f64::INFINITY
            }
        },
    }
}

/// Asserts the kernel agrees with the reference on this input; returns the errors.
#[track_caller]
fn check(kernel: KernelRef, clamp: bool, e: E32, g: f32, hp: &Hyper, bound: f32) -> Errors {
    let err = errors(kernel, clamp, e, g, hp, bound);
    if err.worst() > TOLERANCE {
        let got = run(kernel, clamp, e, g, hp, bound);
        let ref_bound = if clamp { bound as f64 } else { 0.0 };
        let (want, scale) =
            r::step_with_scale(kernel, e.widen(), Elem::default(), g as f64, hp, ref_bound);
        panic!(
            "{} ({}) disagrees with the reference\n input {e:?}, g = {g:e}, bound = {bound:e}\n \
             {hp:?}\n got       {got:?}\n reference {want:?}\n scale     {scale:?}\n errors    \
             {err:?} (tolerance {TOLERANCE})",
            kernel.name(),
            if clamp { "element" } else { "update" },
        );
    }
    err
}

fn check_both(kernel: KernelRef, e: E32, g: f32, hp: &Hyper, bound: f32) -> Errors {
    check(kernel, true, e, g, hp, bound).max(check(kernel, false, e, g, hp, bound))
}

// ---------------------------------------------------------------------------------------------
// Random inputs.

/// `±10^x`, `x` uniform in `[lo, hi)`.
fn log_uniform(rng: &mut SmallRng, lo: f64, hi: f64) -> f32 {
    let x = 10f64.powf(rng.gen_range(lo..hi)) as f32;
    if rng.gen_bool(0.5) {
        x
    } else {
        -x
    }
}

fn pick<T: Copy>(rng: &mut SmallRng, choices: &[T]) -> T {
    choices[rng.gen_range(0..choices.len())]
}

fn random_hyper(rng: &mut SmallRng) -> Hyper {
    let lr = log_uniform(rng, -6.0, -0.5).abs();
    let beta1 = if rng.gen_bool(0.7) {
        pick(rng, &[0.9, 0.95, 0.99, 0.5, 0.0])
    } else {
        rng.gen_range(0.0..0.999)
    };
    let beta2 = if rng.gen_bool(0.7) {
        pick(rng, &[0.999, 0.99, 0.9999, 0.95])
    } else {
        rng.gen_range(0.9..0.99999)
    };
    let eps = log_uniform(rng, -12.0, -3.0).abs();
    let wd = if rng.gen_bool(0.2) {
        0.0
    } else {
        log_uniform(rng, -6.0, -0.5).abs()
    };
    let step = if rng.gen_bool(0.5) {
        pick(rng, &[1, 2, 3, 10, 100, 1_000_000])
    } else {
        10f64.powf(rng.gen_range(0.0..7.0)) as u64
    };
    let grad_scale = if rng.gen_bool(0.5) {
        pick(rng, &[1.0, 0.5])
    } else {
        rng.gen_range(0.0..2.0)
    };
    let grad_clip = if rng.gen_bool(0.3) {
        0.0
    } else {
        log_uniform(rng, -10.0, 10.0).abs()
    };
    Hyper::new(lr, beta1, beta2, eps, wd, step)
        .with_grad_scale(grad_scale)
        .with_grad_clip(grad_clip)
}

/// A random element, gradient and bound. Half the draws have moments of the gradient's size
/// (what training produces), half independent magnitudes (any m/sqrt(v) ratio).
fn random_input(rng: &mut SmallRng) -> (E32, f32, f32) {
    let zero_or = |rng: &mut SmallRng, x: f32| if rng.gen_bool(0.05) { 0.0 } else { x };
    let p = log_uniform(rng, -8.0, 3.0);
    let p = zero_or(rng, p);
    let g = log_uniform(rng, -20.0, 20.0);
    let g = zero_or(rng, g);
    let (m, v, v_max) = if rng.gen_bool(0.5) {
        let sigma = log_uniform(rng, -20.0, 20.0).abs();
        let m = sigma * rng.gen_range(-1.0..1.0);
        let v = sigma * sigma * rng.gen_range(0.0..2.0);
        (m, v, v * rng.gen_range(0.0..2.0))
    } else {
        let m = log_uniform(rng, -20.0, 20.0);
        let v = log_uniform(rng, -40.0, 38.0).abs();
        let v_max = log_uniform(rng, -40.0, 38.0).abs();
        (zero_or(rng, m), zero_or(rng, v), zero_or(rng, v_max))
    };
    let bound = if rng.gen_bool(0.3) {
        0.0
    } else {
        log_uniform(rng, -4.0, 3.0).abs()
    };
    (E32::new(p, m, v, v_max), g, bound)
}

const DRAWS: usize = 100_000;

fn random_draws(kernel: KernelRef, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut worst = Errors::default();
    // How many draws actually test the update through p (update not lost in p's rounding).
    let mut informative = 0usize;
    for _ in 0..DRAWS {
        let hp = random_hyper(&mut rng);
        let (e, g, bound) = random_input(&mut rng);
        worst = worst.max(check_both(kernel, e, g, &hp, bound));
        let unclamped = r::step(kernel, e.widen(), g as f64, &hp, 0.0);
        if (unclamped.p - e.p as f64).abs() > 1e-3 * (e.p as f64).abs() {
            informative += 1;
        }
    }
    eprintln!(
        "{:24} random: max errors (EPSILON·scale) p {:.3} m {:.3} v {:.3} v_max {:.3}; \
         {informative}/{DRAWS} draws move p by > 1e-3 relative",
        kernel.name(),
        worst.p,
        worst.m,
        worst.v,
        worst.v_max
    );
    assert!(informative > DRAWS / 5, "too few draws test the update");
}

#[test]
fn random_dqn() {
    random_draws(KernelRef::Dqn, 1);
}

#[test]
fn random_iqn() {
    random_draws(KernelRef::Iqn, 2);
}

#[test]
fn random_iql() {
    random_draws(KernelRef::Iql, 3);
}

#[test]
fn random_attn() {
    random_draws(KernelRef::Attn, 4);
}

#[test]
fn random_curiosity() {
    random_draws(KernelRef::Curiosity, 5);
}

/// Realistic magnitudes only (PyTorch defaults, weights ~1, gradients 1e-6..1): the errors here
/// are what GPU tests should expect to see.
#[test]
fn random_realistic_all_kernels() {
    let mut rng = SmallRng::seed_from_u64(6);
    for kernel in KernelRef::ALL {
        let mut worst = Errors::default();
        for _ in 0..DRAWS / 5 {
            let step = rng.gen_range(1..10_000);
            let hp = Hyper::torch_default(0.01, step).with_grad_scale(rng.gen_range(0.1..1.0));
            let hp = hp.with_grad_clip(pick(&mut rng, &[0.0, 1e-3]));
            let p: f32 = rng.gen_range(-1.0..1.0);
            let g = log_uniform(&mut rng, -6.0, 0.0);
            let v = g * g * rng.gen_range(0.1f32..10.0);
            let e = E32::new(
                p,
                g * rng.gen_range(-1.0..1.0),
                v,
                v * rng.gen_range(0.5..2.0),
            );
            worst = worst.max(check_both(kernel, e, g, &hp, 0.5));
        }
        eprintln!(
            "{:24} realistic: max errors p {:.3} m {:.3} v {:.3} v_max {:.3}",
            kernel.name(),
            worst.p,
            worst.m,
            worst.v,
            worst.v_max
        );
    }
}

type Mutation = (&'static str, fn(Hyper) -> Hyper);

/// The comparison must be able to fail: kernels fed wrong scalars (a missing bias correction,
/// eps ten times bigger, another β2) are caught on most realistic draws, and an AdamW kernel is
/// told apart from the L2-decay and no-decay references.
#[test]
fn comparison_catches_wrong_math() {
    let mut rng = SmallRng::seed_from_u64(7);
    let mutations: [Mutation; 4] = [
        ("bias_correction2 = 1", |h| Hyper {
            bias_correction2: 1.0,
            ..h
        }),
        ("bias_correction1 = 1", |h| Hyper {
            bias_correction1: 1.0,
            ..h
        }),
        ("eps x 10", |h| Hyper {
            eps: h.eps * 10.0,
            ..h
        }),
        ("beta2 = 0.99", |h| Hyper { beta2: 0.99, ..h }),
    ];
    for kernel in KernelRef::ALL {
        for (name, mutate) in mutations {
            let mut caught = 0;
            let n = 1000;
            for _ in 0..n {
                let hp = Hyper::new(1e-3, 0.9, 0.999, 1e-4, 0.01, rng.gen_range(1..20));
                let g = log_uniform(&mut rng, -4.0, 0.0);
                let e = E32::new(
                    rng.gen_range(-0.01..0.01),
                    g * 0.5,
                    g * g * 0.3,
                    g * g * 1.5,
                );
                let got = run(kernel, true, e, g, &mutate(hp), 0.0);
                let (want, scale) =
                    r::step_with_scale(kernel, e.widen(), Elem::default(), g as f64, &hp, 0.0);
                let err = r::error(want.p, scale.p, got.p)
                    .max(r::error(want.v, scale.v, got.v))
                    .max(r::error(want.m, scale.m, got.m));
                if err > TOLERANCE {
                    caught += 1;
                }
            }
            assert!(
                caught > n / 2,
                "{}: mutation `{name}` caught on only {caught}/{n} draws",
                kernel.name()
            );
        }
    }
    // And the decay kinds are told apart: L2 where AdamW belongs, and no decay at all.
    let mut caught = [0; 2];
    for _ in 0..1000 {
        let hp = Hyper::new(1e-3, 0.9, 0.999, 1e-8, 0.1, rng.gen_range(1..20));
        let g = log_uniform(&mut rng, -4.0, 0.0);
        let e = E32::new(rng.gen_range(-1.0..1.0), g * 0.5, g * g, 0.0);
        let attn = run(KernelRef::Attn, true, e, g, &hp, 0.0);
        for (i, wrong) in [KernelRef::Iqn, KernelRef::Curiosity]
            .into_iter()
            .enumerate()
        {
            let (want, scale) =
                r::step_with_scale(wrong, e.widen(), Elem::default(), g as f64, &hp, 0.0);
            if r::error(want.p, scale.p, attn.p).max(r::error(want.m, scale.m, attn.m)) > TOLERANCE
            {
                caught[i] += 1;
            }
        }
    }
    assert!(caught.iter().all(|&c| c > 900), "{caught:?}");
}

// ---------------------------------------------------------------------------------------------
// Edge cases, every kernel.

/// Hyperparameters for the edge cases: PyTorch's defaults with decay, at several steps.
fn edge_hypers() -> Vec<Hyper> {
    [1, 2, 1000, 1_000_000]
        .into_iter()
        .flat_map(|t| {
            [
                Hyper::torch_default(0.01, t),
                Hyper::torch_default(0.0, t),
                Hyper::new(0.1, 0.5, 0.9, 1e-6, 0.1, t)
                    .with_grad_scale(0.5)
                    .with_grad_clip(1e-2),
            ]
        })
        .collect()
}

fn for_all_edges(name: &str, cases: &[(E32, f32)], bounds: &[f32]) {
    for kernel in KernelRef::ALL {
        let mut worst = Errors::default();
        for hp in edge_hypers() {
            for &(e, g) in cases {
                for &bound in bounds {
                    worst = worst.max(check_both(kernel, e, g, &hp, bound));
                }
            }
        }
        eprintln!(
            "{:24} {name}: max errors p {:.3} m {:.3} v {:.3} v_max {:.3}",
            kernel.name(),
            worst.p,
            worst.m,
            worst.v,
            worst.v_max
        );
    }
}

const BOUNDS: [f32; 4] = [0.0, 1e-3, 0.5, 1e6];

#[test]
fn zero_gradient() {
    let cases = [
        (E32::new(0.3, 0.0, 0.0, 0.0), 0.0),
        (E32::new(-0.3, 0.0, 0.0, 0.0), -0.0),
        (E32::new(0.3, 1e-3, 1e-6, 2e-6), 0.0),
        (E32::new(0.0, 0.0, 0.0, 0.0), 0.0),
        (E32::new(-0.0, 0.0, 0.0, 0.0), 0.0),
    ];
    for_all_edges("g = 0", &cases, &BOUNDS);
}

/// With no gradient, no moments and no decay, the update is exactly zero: p is returned as is
/// (from the formula: p - s·0/(0 + eps) = p).
#[test]
fn zero_gradient_no_decay_leaves_p_bit_for_bit() {
    for kernel in KernelRef::ALL {
        for t in [1, 1_000_000] {
            let hp = Hyper::torch_default(0.0, t);
            for p in [
                0.25f32,
                -0.25,
                0.0,
                -0.0,
                1e-40,
                f32::MAX,
                f32::MIN_POSITIVE,
            ] {
                for clamp in [false, true] {
                    let e = E32::new(p, 0.0, 0.0, 0.0);
                    let got = run(kernel, clamp, e, 0.0, &hp, 0.0);
                    assert_eq!(got.p.to_bits(), p.to_bits(), "{} p = {p:e}", kernel.name());
                    let want = r::step(kernel, e.widen(), 0.0, &hp, 0.0);
                    assert_eq!(want.p, p as f64);
                }
            }
        }
    }
}

/// |g| = 1e30: g² overflows f32, so v (and v_max) become inf in the kernel as in f32 PyTorch,
/// the step is m/inf = 0 and p only decays. The reference models the overflow (`fit_f32`).
#[test]
fn huge_gradient() {
    let cases = [
        (E32::new(0.3, 0.0, 0.0, 0.0), 1e30),
        (E32::new(0.3, 0.0, 0.0, 0.0), -1e30),
        (E32::new(-0.3, 1.0, 1.0, 1.0), 1e30),
        (E32::new(0.3, 0.0, 0.0, 0.0), 1e19),
        (E32::new(0.3, 0.0, 0.0, 0.0), f32::MAX),
    ];
    for_all_edges("huge g", &cases, &BOUNDS);
    // Spelled out once: the state the reference says, and p finite.
    for kernel in KernelRef::ALL {
        let hp = Hyper::torch_default(0.0, 1);
        let e = E32::new(0.3, 0.0, 0.0, 0.0);
        let got = run(kernel, true, e, 1e30, &hp, 0.0);
        assert!(got.p.is_finite(), "{}: {got:?}", kernel.name());
        assert!(got.v.is_infinite(), "{}: {got:?}", kernel.name());
        let want = r::step(kernel, e.widen(), 1e30, &hp, 0.0);
        assert_eq!(want.v, f64::INFINITY);
        assert_eq!(got.p as f64, want.p);
    }
}

/// sqrt(v̂)/sqrt(bc2) ≈ eps: the two terms of the denominator are comparable.
#[test]
fn sqrt_v_near_eps() {
    for kernel in KernelRef::ALL {
        let mut worst = Errors::default();
        for t in [1, 10, 1_000_000] {
            let hp = Hyper::torch_default(0.01, t);
            let (eps, b2, bc2) = (hp.eps, hp.beta2, hp.bias_correction2);
            // v = 0 going in: v_new = (1-β2)g², so sqrt(v_new/bc2) = eps at g = eps·sqrt(bc2/(1-β2)).
            let g0 = eps * (bc2 / (1.0 - b2)).sqrt();
            for factor in [0.5, 0.9, 1.0, 1.1, 2.0] {
                let g = (g0 * factor) as f32;
                for m in [0.0, g, -g] {
                    let e = E32::new(0.1, m, 0.0, 0.0);
                    worst = worst.max(check_both(kernel, e, g, &hp, 0.5));
                    worst = worst.max(check_both(kernel, e, -g, &hp, 0.5));
                }
            }
            // v itself at eps² (times bc2), zero gradient.
            let v = (eps * eps * bc2) as f32;
            let e = E32::new(0.1, 1e-9, v / b2 as f32, v);
            worst = worst.max(check_both(kernel, e, 0.0, &hp, 0.5));
        }
        eprintln!(
            "{:24} sqrt(v) ~ eps: max errors p {:.3} m {:.3} v {:.3} v_max {:.3}",
            kernel.name(),
            worst.p,
            worst.m,
            worst.v,
            worst.v_max
        );
    }
}

/// NaN and ±inf parameters, with the clamp on and off: whatever the reference says (NaN stays
/// NaN under the clamp; AdamW keeps ±inf, which the clamp brings to ±bound; L2 decay turns an
/// infinite p into NaN through inf/inf).
#[test]
fn non_finite_parameters() {
    let mut cases = vec![];
    for p in [f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        for g in [0.0, 0.1, -1e-3] {
            cases.push((E32::new(p, 0.0, 0.0, 0.0), g));
            cases.push((E32::new(p, 0.01, 1e-4, 2e-4), g));
        }
    }
    for_all_edges("p NaN/inf", &cases, &BOUNDS);
    // The clamp never hides a NaN.
    for kernel in KernelRef::ALL {
        for hp in edge_hypers() {
            let got = run(
                kernel,
                true,
                E32::new(f32::NAN, 0.0, 0.0, 0.0),
                0.1,
                &hp,
                0.5,
            );
            assert!(got.p.is_nan(), "{}: {got:?}", kernel.name());
        }
    }
}

/// NaN/inf gradients and moments propagate the same way as in the reference.
#[test]
fn non_finite_gradients_and_moments() {
    let mut cases = vec![];
    for x in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        cases.push((E32::new(0.3, 0.0, 0.0, 0.0), x));
        cases.push((E32::new(0.3, x, 1e-4, 1e-4), 0.1));
        cases.push((E32::new(0.3, 0.01, x.abs(), 1e-4), 0.1));
        cases.push((E32::new(0.3, 0.01, 1e-4, x.abs()), 0.1));
    }
    for_all_edges("g/m/v NaN/inf", &cases, &BOUNDS);
}

/// The clamp itself, seen through `element`: bound 0 disables it, |p| exactly at the bound is
/// not changed, one ulp above is brought back to exactly the bound.
#[test]
fn clamp_boundaries_through_element() {
    for kernel in KernelRef::ALL {
        // No gradient, moments or decay: the update is exactly 0, so p reaches the clamp as is.
        let hp = Hyper::torch_default(0.0, 1);
        for bound in [1e-3f32, 0.5, 1.0, 3e38] {
            for sign in [1.0f32, -1.0] {
                let at = sign * bound;
                let above = sign * f32::from_bits(bound.to_bits() + 1);
                let below = sign * f32::from_bits(bound.to_bits() - 1);
                for (p, want) in [(at, at), (above, at), (below, below)] {
                    let e = E32::new(p, 0.0, 0.0, 0.0);
                    let got = run(kernel, true, e, 0.0, &hp, bound);
                    assert_eq!(
                        got.p.to_bits(),
                        want.to_bits(),
                        "{} p = {p:e}",
                        kernel.name()
                    );
                    assert_eq!(
                        r::step(kernel, e.widen(), 0.0, &hp, bound as f64).p,
                        want as f64
                    );
                    check_both(kernel, e, 0.0, &hp, bound);
                }
            }
        }
        // Bound 0: nothing is clamped, not even f32::MAX or ±inf. With `hp`'s decay, L2 kernels
        // compute `g + wd·inf = inf` and then `inf/inf`, so an infinite p becomes NaN there;
        // AdamW kernels keep ±inf.
        for p in [1e30f32, -1e30, f32::MAX, f32::INFINITY, f32::NEG_INFINITY] {
            let e = E32::new(p, 0.0, 0.0, 0.0);
            let got = run(kernel, true, e, 0.0, &hp, 0.0);
            let want = r::step(kernel, e.widen(), 0.0, &hp, 0.0).p;
            let l2_with_decay =
                matches!(kernel, KernelRef::Iqn | KernelRef::Iql) && hp.weight_decay != 0.0;
            if p.is_finite() || !l2_with_decay {
                assert_eq!(got.p.to_bits(), p.to_bits(), "{} p = {p:e}", kernel.name());
                assert_eq!(want, p as f64);
            } else {
                assert!(
                    got.p.is_nan() && want.is_nan(),
                    "{} p = {p:e}",
                    kernel.name()
                );
            }
            check_both(kernel, e, 0.0, &hp, 0.0);
        }
    }
}

#[test]
fn first_and_late_steps() {
    let mut rng = SmallRng::seed_from_u64(8);
    for kernel in KernelRef::ALL {
        let mut worst = Errors::default();
        for t in [1u64, 2, 1_000_000, u32::MAX as u64 + 7] {
            for _ in 0..2000 {
                let hp = Hyper::torch_default(0.01, t);
                let (e, g, bound) = random_input(&mut rng);
                worst = worst.max(check_both(kernel, e, g, &hp, bound));
            }
        }
        eprintln!(
            "{:24} t = 1, 2, 1e6, 2^32+6: max errors p {:.3} m {:.3} v {:.3} v_max {:.3}",
            kernel.name(),
            worst.p,
            worst.m,
            worst.v,
            worst.v_max
        );
    }
}

/// dqn with grad_scale 1 and 0.5 against the reference; and since scaling by 0.5 is exact,
/// (g, 0.5) must give bit for bit what (g/2, 1) gives.
#[test]
fn dqn_grad_scale() {
    let mut rng = SmallRng::seed_from_u64(9);
    for _ in 0..20_000 {
        let hp = random_hyper(&mut rng);
        let (e, g, bound) = random_input(&mut rng);
        for scale in [1.0, 0.5] {
            check_both(KernelRef::Dqn, e, g, &hp.with_grad_scale(scale), bound);
        }
        let half = run(KernelRef::Dqn, true, e, g, &hp.with_grad_scale(0.5), bound);
        let halved = run(
            KernelRef::Dqn,
            true,
            e,
            g / 2.0,
            &hp.with_grad_scale(1.0),
            bound,
        );
        if (g / 2.0) * 2.0 == g {
            // (g/2 not subnormal-rounded)
            assert_eq!(format!("{half:?}"), format!("{halved:?}"));
        }
    }
}

/// iql with the clip off (0) and on, against the reference; clip off is iqn exactly, and a
/// gradient beyond the clip acts as the clip value.
#[test]
fn iql_grad_clip() {
    let mut rng = SmallRng::seed_from_u64(10);
    for _ in 0..20_000 {
        let hp = random_hyper(&mut rng);
        let (e, g, bound) = random_input(&mut rng);
        for clip in [0.0, 1e-3, 1.0, 1e3] {
            check_both(KernelRef::Iql, e, g, &hp.with_grad_clip(clip), bound);
        }
        let off = run(KernelRef::Iql, true, e, g, &hp.with_grad_clip(0.0), bound);
        let iqn = run(KernelRef::Iqn, true, e, g, &hp, bound);
        assert_eq!(format!("{off:?}"), format!("{iqn:?}"));
        let clip = 1e-3f32;
        if g.abs() > clip {
            let clipped = run(KernelRef::Iql, true, e, g, &hp.with_grad_clip(clip), bound);
            let at_clip = run(
                KernelRef::Iql,
                true,
                e,
                clip.copysign(g),
                &hp.with_grad_clip(0.0),
                bound,
            );
            assert_eq!(format!("{clipped:?}"), format!("{at_clip:?}"));
        }
    }
}

/// AMSGrad: v_max above the new v (kept; the denominator uses it) and below it (raised to v).
#[test]
fn curiosity_v_max_above_and_below() {
    let kernel = KernelRef::Curiosity;
    for hp in edge_hypers() {
        for g in [1e-3f32, -0.2] {
            let v = 1e-4f32;
            let v_new = (hp.beta2 * v as f64 + (1.0 - hp.beta2) * (g as f64).powi(2)) as f32;
            for v_max in [0.0, v_new * 0.5, v_new, v_new * 2.0, 100.0] {
                let e = E32::new(0.1, 1e-3, v, v_max);
                check_both(kernel, e, g, &hp, 0.0);
                let got = run(kernel, true, e, g, &hp, 0.0);
                // The spec, directly: v_max = max(v_max, v).
                assert_eq!(got.v_max, got.v.max(v_max), "{e:?} {got:?}");
            }
            // v_max larger makes the step smaller (the denominator uses v_max).
            let small = run(kernel, true, E32::new(0.1, 1e-3, v, 0.0), g, &hp, 0.0);
            let large = run(kernel, true, E32::new(0.1, 1e-3, v, 100.0), g, &hp, 0.0);
            assert!(
                (large.p - 0.1).abs() < (small.p - 0.1).abs(),
                "{small:?} {large:?}"
            );
        }
    }
    // A NaN in v_max or v stays (torch.maximum).
    let hp = Hyper::torch_default(0.0, 3);
    let got = run(
        kernel,
        true,
        E32::new(0.1, 0.0, 0.0, f32::NAN),
        0.1,
        &hp,
        0.0,
    );
    assert!(got.v_max.is_nan() && got.p.is_nan(), "{got:?}");
    let got = run(
        kernel,
        true,
        E32::new(0.1, 0.0, f32::NAN, 1.0),
        0.1,
        &hp,
        0.0,
    );
    assert!(got.v_max.is_nan() && got.p.is_nan(), "{got:?}");
}

/// AdamW kernels agree with each other where their math coincides: attn is dqn with scale 1.
#[test]
fn attn_is_dqn_with_unit_scale() {
    let mut rng = SmallRng::seed_from_u64(11);
    for _ in 0..20_000 {
        let hp = random_hyper(&mut rng).with_grad_scale(1.0);
        let (e, g, bound) = random_input(&mut rng);
        let attn = run(KernelRef::Attn, true, e, g, &hp, bound);
        let dqn = run(KernelRef::Dqn, true, e, g, &hp, bound);
        assert_eq!(format!("{attn:?}"), format!("{dqn:?}"));
    }
}

// ---------------------------------------------------------------------------------------------
// Many steps with the state carried over.

const STEPS: u64 = 50;
const LANES: usize = 256;

/// Runs `STEPS` steps of the kernel on `LANES` elements, carrying its own f32 state from step to
/// step, and checks every step against the reference taken from the kernel's state before it
/// (lockstep, tight), and the end state against a reference that ran freely in f64 all along
/// (error scales accumulated by `RefState`).
fn many_steps(kernel: KernelRef, seed: u64, hp0: Hyper, bound: f32) -> (f64, f64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut state: Vec<E32> = (0..LANES)
        .map(|_| E32::new(rng.gen_range(-1.0..1.0), 0.0, 0.0, 0.0))
        .collect();
    let split = |s: &[E32]| {
        (
            s.iter().map(|e| e.p).collect::<Vec<_>>(),
            s.iter().map(|e| e.m).collect::<Vec<_>>(),
            s.iter().map(|e| e.v).collect::<Vec<_>>(),
            s.iter().map(|e| e.v_max).collect::<Vec<_>>(),
        )
    };
    let (p, m, v, vm) = split(&state);
    let mut free = RefState::from_f32(&p, &m, &v, Some(&vm));
    let mut lockstep_worst = 0f64;
    for t in 1..=STEPS {
        let hp = hp0.with_step(t);
        // Gradients of varying size and sign, drifting with p like a loss would.
        let g: Vec<f32> = state
            .iter()
            .map(|e| 0.1 * e.p + log_uniform(&mut rng, -4.0, 0.0))
            .collect();
        let (p, m, v, vm) = split(&state);
        let mut lock = RefState::from_f32(&p, &m, &v, Some(&vm));
        r::step_slices(kernel, &mut lock, &g, &hp, bound);
        r::step_slices(kernel, &mut free, &g, &hp, bound);
        for (e, &g) in state.iter_mut().zip(&g) {
            *e = run(kernel, true, *e, g, &hp, bound);
        }
        let (p, m, v, vm) = split(&state);
        let vm = kernel.amsgrad().then_some(&vm[..]);
        let errs = lock.max_errors(&p, &m, &v, vm);
        assert!(
            errs.passes(),
            "{} step {t} (lockstep): {errs:?}",
            kernel.name()
        );
        lockstep_worst = lockstep_worst.max(errs.worst());
        if bound > 0.0 {
            assert!(p.iter().all(|p| p.abs() <= bound));
        }
    }
    let (p, m, v, vm) = split(&state);
    let vm = kernel.amsgrad().then_some(&vm[..]);
    let errs = free.max_errors(&p, &m, &v, vm);
    assert!(
        errs.passes(),
        "{} after {STEPS} free steps: {errs:?}",
        kernel.name()
    );
    free.assert_close(&p, &m, &v, vm);
    (lockstep_worst, errs.worst())
}

#[test]
fn fifty_steps_state_carried_over() {
    for kernel in KernelRef::ALL {
        for (i, (hp, bound)) in [
            (Hyper::torch_default(0.01, 1), 0.0),
            (Hyper::torch_default(0.01, 1), 0.5),
            (
                Hyper::new(3e-2, 0.8, 0.99, 1e-6, 0.1, 1)
                    .with_grad_scale(0.5)
                    .with_grad_clip(0.05),
                0.9,
            ),
        ]
        .into_iter()
        .enumerate()
        {
            let (lock, free) = many_steps(kernel, 100 + i as u64, hp, bound);
            eprintln!(
                "{:24} {STEPS} steps, bound {bound}: max error lockstep {lock:.3}, free-running \
                 {free:.3}",
                kernel.name()
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The clamp is applied by `element`, not by `update`.

#[test]
fn clamp_is_in_element_not_in_update() {
    let bound = 0.5f32;
    for kernel in KernelRef::ALL {
        for hp in edge_hypers() {
            for (p, g) in [
                (2.0f32, 1e-3f32),
                (-2.0, -1e-3),
                (0.4999, -1.0),
                (-0.4999, 1.0),
            ] {
                let e = E32::new(p, 0.0, 0.0, 0.0);
                let unclamped = r::step(kernel, e.widen(), g as f64, &hp, 0.0);
                if unclamped.p.abs() <= bound as f64 * 1.0001 {
                    continue; // this step does not leave the bound
                }
                let update = run(kernel, false, e, g, &hp, bound);
                let element = run(kernel, true, e, g, &hp, bound);
                // `update` is the unclamped math and leaves the bound.
                assert!(
                    update.p.abs() > bound,
                    "{} update {update:?}",
                    kernel.name()
                );
                check(kernel, false, e, g, &hp, bound);
                // `element` is the same step, clamped: exactly the bound on the same side.
                assert_eq!(element.p, bound.copysign(update.p), "{}", kernel.name());
                check(kernel, true, e, g, &hp, bound);
                // Same moments either way.
                assert_eq!((element.m, element.v), (update.m, update.v));
            }
        }
        // A NaN weight: `update` and `element` both keep it (no -bound in disguise).
        let hp = Hyper::torch_default(0.0, 1);
        let e = E32::new(f32::NAN, 0.0, 0.0, 0.0);
        assert!(run(kernel, true, e, 0.1, &hp, bound).p.is_nan());
        assert!(run(kernel, false, e, 0.1, &hp, bound).p.is_nan());
        // ±inf weight with decay off (`hp` has wd = 0): every kernel keeps it through the
        // update (L2 decay is skipped at wd = 0, as in torch.optim.Adam), so the clamp returns
        // ±bound through `element` while `update` returns ±inf.
        for inf in [f32::INFINITY, f32::NEG_INFINITY] {
            let e = E32::new(inf, 0.0, 0.0, 0.0);
            assert_eq!(run(kernel, true, e, 0.1, &hp, bound).p, bound.copysign(inf));
            assert_eq!(run(kernel, false, e, 0.1, &hp, bound).p, inf);
        }
    }
}

/// Random draws where the unclamped step leaves the bound: `element` is always within it,
/// `update` never is.
#[test]
fn clamp_is_in_element_random() {
    let mut rng = SmallRng::seed_from_u64(12);
    for kernel in KernelRef::ALL {
        let mut seen = 0;
        for _ in 0..20_000 {
            let hp = random_hyper(&mut rng);
            let (e, g, _) = random_input(&mut rng);
            let bound = log_uniform(&mut rng, -4.0, 1.0).abs();
            let unclamped = r::step(kernel, e.widen(), g as f64, &hp, 0.0);
            if unclamped.p.is_nan() || unclamped.p.abs() <= bound as f64 * 1.001 {
                continue;
            }
            seen += 1;
            let update = run(kernel, false, e, g, &hp, bound);
            let element = run(kernel, true, e, g, &hp, bound);
            assert!(update.p.abs() > bound, "{} {e:?} {update:?}", kernel.name());
            assert!(
                element.p.abs() <= bound,
                "{} {e:?} {element:?}",
                kernel.name()
            );
            check_both(kernel, e, g, &hp, bound);
        }
        assert!(
            seen > 1000,
            "{}: only {seen} draws left the bound",
            kernel.name()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The scalars' domains, as the descriptors carry them to the runtime's launch check.

/// Every scalar of the five kernels has the declared domain (`#[domain]` in
/// `crates/adamant-kernels/src/optimizers.rs`), in both entries: a step of 0 (bias corrections of 0), a β of
/// 1, an eps of 0, a negative lr, decay or clip, and any non-finite value are outside it.
#[test]
fn optimizer_scalars_carry_their_domains() {
    use adamant::device::abi::{self, Domain, Limit, ParamRole};
    let ge0 = Domain {
        lower: Limit::Inclusive(0.0),
        upper: Limit::None,
        finite: true,
    };
    let expected = |name: &str| -> Option<Domain> {
        Some(match name {
            "lr" | "weight_decay" | "grad_clip" => ge0,
            "beta1" | "beta2" => Domain {
                lower: Limit::Inclusive(0.0),
                upper: Limit::Exclusive(1.0),
                finite: true,
            },
            "eps" => Domain {
                lower: Limit::Exclusive(0.0),
                upper: Limit::None,
                finite: true,
            },
            "bias_correction1" => Domain {
                lower: Limit::Exclusive(0.0),
                upper: Limit::Inclusive(1.0),
                finite: true,
            },
            // From the least normal f32 up: where Adam's division by its root is proven exact
            // (`math::RootDivisor`).
            "bias_correction2" => Domain {
                lower: Limit::Inclusive(adamant::device::math::MIN_DIVISOR),
                upper: Limit::Inclusive(1.0),
                finite: true,
            },
            _ => return None,
        })
    };
    for kernel in KernelRef::ALL {
        let multi = format!("{}_multi", kernel.name());
        for name in [kernel.name(), multi.as_str()] {
            let d = abi::kernel(name).unwrap_or_else(|| panic!("{name} is registered"));
            let scalars: Vec<_> = d
                .params
                .iter()
                .filter_map(|p| match p.role {
                    ParamRole::Scalar { domain } => Some((p.name, domain)),
                    _ => None,
                })
                .collect();
            assert!(scalars.len() >= 6, "{name}: {scalars:?}");
            for (param, domain) in scalars {
                let want = expected(param).unwrap_or_else(|| panic!("{name}: scalar {param}"));
                assert_eq!(domain, want, "{name}.{param}");
                for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1e-30] {
                    assert!(!domain.contains(bad), "{name}.{param} accepts {bad}");
                }
            }
        }
    }
    let bc = expected("bias_correction1").expect("a domain");
    // bias_correction = 1 - beta^step: step 0 gives 0, step 1 with beta 0.9 gives 0.1.
    assert!(!bc.contains(0.0) && bc.contains(0.1) && bc.contains(1.0) && !bc.contains(1.5));
    // The second's floor: any `beta2 < 1` gives at least 2^-24; a subnormal is refused.
    let bc2 = expected("bias_correction2").expect("a domain");
    let least = f32::MIN_POSITIVE as f64;
    assert!(bc2.contains(least) && bc2.contains(2f64.powi(-24)) && !bc2.contains(least / 2.0));
    let beta = expected("beta2").expect("a domain");
    assert!(beta.contains(0.0) && beta.contains(0.999) && !beta.contains(1.0));
    let eps = expected("eps").expect("a domain");
    assert!(!eps.contains(0.0) && eps.contains(1e-12));
}

// ---------------------------------------------------------------------------------------------
// The soft update of a target network, `soft_update_kernel`, against `reference::soft_update`.

mod soft_update {
    use super::{log_uniform, pick};
    use adamant::device::abi::{self, Domain, KernelKind, Limit, ParamRole, ParamType};
    use adamant::kernels::soft_update::soft_update_kernel as su;
    use adamant::reference::{self as r, SOFT_UPDATE_TOLERANCE};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    /// The error of `element` (with `bound`) and of `update` (the reference without a clamp)
    /// on one input, in EPSILON·scale; panics beyond the tolerance.
    #[track_caller]
    fn check(target: f32, online: f32, tau: f32, bound: f32) -> f64 {
        let mut worst = 0f64;
        for (what, got, ref_bound) in [
            ("element", su::element(target, online, tau, bound), bound),
            ("update", su::update(target, online, tau), 0.0),
        ] {
            let (want, scale) = r::soft_update_with_scale(
                target as f64,
                online as f64,
                tau as f64,
                ref_bound as f64,
            );
            let err = r::error(want, scale, got);
            assert!(
                err <= SOFT_UPDATE_TOLERANCE,
                "{what}(target {target:e}, online {online:e}, tau {tau}, bound {bound:e}) = \
                 {got:e}, reference {want:e} (scale {scale:e}): error {err} > \
                 {SOFT_UPDATE_TOLERANCE}"
            );
            worst = worst.max(err);
        }
        worst
    }

    fn random_tau(rng: &mut SmallRng) -> f32 {
        if rng.gen_bool(0.4) {
            pick(rng, &[0.0, 1.0, 0.5, 5e-3, 1e-3, 0.995, 0.1, 0.9])
        } else {
            rng.gen_range(0.0..=1.0)
        }
    }

    #[test]
    fn random_draws_against_the_reference() {
        let mut rng = SmallRng::seed_from_u64(20);
        let mut worst = 0f64;
        for _ in 0..200_000 {
            let tau = random_tau(&mut rng);
            let target = log_uniform(&mut rng, -40.0, 37.0);
            // Half the draws: an online network close to the target (what training gives).
            let online = if rng.gen_bool(0.5) {
                target * (1.0 + log_uniform(&mut rng, -8.0, -1.0))
            } else {
                log_uniform(&mut rng, -40.0, 37.0)
            };
            let bound = if rng.gen_bool(0.3) {
                0.0
            } else {
                log_uniform(&mut rng, -4.0, 4.0).abs()
            };
            worst = worst.max(check(target, online, tau, bound));
        }
        eprintln!("soft_update_kernel random: max error {worst:.3} EPSILON·scale");
    }

    /// The ends are exact for finite weights: τ = 1 copies `online`, τ = 0 keeps `target`; the
    /// clamp then applies to what is stored.
    #[test]
    fn hard_update_and_no_update_are_exact() {
        let mut rng = SmallRng::seed_from_u64(21);
        for _ in 0..20_000 {
            let target = log_uniform(&mut rng, -40.0, 38.0);
            let online = log_uniform(&mut rng, -40.0, 38.0);
            assert_eq!(su::update(target, online, 1.0).to_bits(), online.to_bits());
            assert_eq!(su::update(target, online, 0.0).to_bits(), target.to_bits());
            let bound = 0.5f32;
            assert_eq!(
                su::element(target, online, 1.0, bound),
                r::clamp(online as f64, bound as f64) as f32
            );
            check(target, online, 1.0, bound);
            check(target, online, 0.0, bound);
        }
    }

    /// The result lies between the two networks (up to rounding): a convex combination.
    #[test]
    fn result_is_between_target_and_online() {
        let mut rng = SmallRng::seed_from_u64(22);
        for _ in 0..50_000 {
            let tau = random_tau(&mut rng);
            let target = log_uniform(&mut rng, -10.0, 10.0);
            let online = log_uniform(&mut rng, -10.0, 10.0);
            let got = su::update(target, online, tau) as f64;
            let (lo, hi) = (target.min(online) as f64, target.max(online) as f64);
            let slack = 2.0 * f32::EPSILON as f64 * lo.abs().max(hi.abs());
            assert!(
                got >= lo - slack && got <= hi + slack,
                "{target} {online} {tau}: {got}"
            );
        }
    }

    /// The clamp, through `element`: beyond `±bound` (±inf included) the stored value is exactly
    /// the bound on its side; NaN in either network stays NaN for every τ and bound; a bound of
    /// 0 disables it; `update` is never clamped. Every case is checked against the reference too.
    #[test]
    fn clamp_nan_inf_and_bound_zero() {
        let taus = [0.0f32, 5e-3, 0.5, 0.995, 1.0];
        let bounds = [0.0f32, 1e-3, 1.0, 100.0];
        let finite = [0.0f32, -0.0, 0.25, -3.0, 1e30, -1e-30];
        let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
        let mut values: Vec<f32> = finite.to_vec();
        values.extend(specials);
        for &tau in &taus {
            for &bound in &bounds {
                for &target in &values {
                    for &online in &values {
                        check(target, online, tau, bound);
                        let stored = su::element(target, online, tau, bound);
                        let raw = su::update(target, online, tau);
                        if target.is_nan() || online.is_nan() {
                            assert!(stored.is_nan() && raw.is_nan(), "NaN must stay NaN");
                        }
                        if bound > 0.0 && raw.abs() > bound {
                            assert_eq!(stored, bound.copysign(raw));
                        } else {
                            assert_eq!(stored.to_bits(), raw.to_bits());
                        }
                    }
                }
            }
        }
        // The cases spelled out: an infinite online weight is the bound after any τ > 0 ...
        for inf in [f32::INFINITY, f32::NEG_INFINITY] {
            assert_eq!(su::element(0.5, inf, 5e-3, 2.0), 2.0f32.copysign(inf));
            assert_eq!(su::element(inf, 0.5, 0.5, 2.0), 2.0f32.copysign(inf));
            // ... and stays infinite with the clamp off.
            assert_eq!(su::element(0.5, inf, 5e-3, 0.0), inf);
            // 0·inf: the formula's NaN, kept visible.
            assert!(su::element(0.5, inf, 0.0, 2.0).is_nan());
            assert!(su::element(inf, 0.5, 1.0, 2.0).is_nan());
        }
        assert!(su::element(f32::NAN, 0.5, 1.0, 2.0).is_nan());
        assert!(su::element(0.5, f32::NAN, 0.0, 2.0).is_nan());
        // A finite result beyond the bound is exactly the bound; |x| == bound is unchanged.
        assert_eq!(su::element(3.0, 5.0, 0.5, 2.0), 2.0);
        assert_eq!(su::element(-3.0, -5.0, 0.5, 2.0), -2.0);
        assert_eq!(su::element(2.0, 2.0, 1.0, 2.0), 2.0);
        assert_eq!(su::element(3.0, 5.0, 0.5, 0.0), 4.0);
    }

    /// The comparison can fail: τ and 1 − τ swapped, or the update skipped, are caught.
    #[test]
    fn comparison_catches_wrong_math() {
        let mut rng = SmallRng::seed_from_u64(23);
        type Wrong = (&'static str, fn(f32, f32, f32) -> f32);
        let wrong: [Wrong; 2] = [
            ("swapped", |t, o, tau| tau * t + (1.0 - tau) * o),
            ("no update", |t, _, _| t),
        ];
        for (name, f) in wrong {
            let mut caught = 0;
            for _ in 0..1000 {
                let tau = rng.gen_range(0.01..0.4);
                let target: f32 = rng.gen_range(-1.0..1.0);
                let online: f32 = rng.gen_range(-1.0..1.0);
                let (want, scale) =
                    r::soft_update_with_scale(target as f64, online as f64, tau as f64, 0.0);
                if r::error(want, scale, f(target, online, tau)) > SOFT_UPDATE_TOLERANCE {
                    caught += 1;
                }
            }
            assert!(caught > 990, "{name}: caught on {caught}/1000");
        }
    }

    /// Registered like every optimizer: the single entry (`target`, `online`, `len`, `tau`,
    /// the bound last) and the multi-tensor one, both `Optimizer`s with τ in [0, 1].
    #[test]
    fn descriptors() {
        let tau = ParamRole::Scalar {
            domain: Domain {
                lower: Limit::Inclusive(0.0),
                upper: Limit::Inclusive(1.0),
                finite: true,
            },
        };
        let d = abi::kernel("soft_update_kernel").expect("registered");
        assert!(std::ptr::eq(d, &su::DESCRIPTOR));
        assert_eq!(d.kind, KernelKind::Optimizer);
        let params: Vec<_> = d.params.iter().map(|p| (p.name, p.ty, p.role)).collect();
        assert_eq!(
            params,
            [
                ("target", ParamType::Ptr, ParamRole::ParamBuffer),
                ("online", ParamType::Ptr, ParamRole::Input),
                ("len", ParamType::Usize, ParamRole::Len),
                ("tau", ParamType::F32, tau),
                ("records", ParamType::Ptr, ParamRole::Records),
                (
                    "weight_clamp_max_abs",
                    ParamType::F32,
                    ParamRole::ClampBound
                ),
            ]
        );
        let m = abi::kernel("soft_update_kernel_multi").expect("registered");
        assert!(std::ptr::eq(m, &su::MULTI_DESCRIPTOR));
        assert_eq!(m.kind, KernelKind::Optimizer);
        let roles: Vec<_> = m.params.iter().map(|p| (p.name, p.role)).collect();
        assert_eq!(
            roles,
            [
                ("target", ParamRole::ParamTable),
                ("online", ParamRole::InputTable),
                ("chunks", ParamRole::ChunkTable),
                ("n_chunks", ParamRole::ChunkCount),
                ("weight_clamp_scales", ParamRole::ClampScales),
                ("tau", tau),
                ("records", ParamRole::Records),
                ("weight_clamp_max_abs", ParamRole::ClampBound),
            ]
        );
        let ParamRole::Scalar { domain } = tau else {
            unreachable!()
        };
        assert!(domain.contains(0.0) && domain.contains(1.0) && domain.contains(5e-3));
        assert!(
            !domain.contains(-1e-9) && !domain.contains(1.0 + 1e-7) && !domain.contains(f64::NAN)
        );
    }
}
