//! An independent f64 reference for the five optimizer kernels, the soft update of a target
//! network ([`soft_update`]) and the weight clamp, written from the formulas (PyTorch's
//! `Adam`/`AdamW`, `τ·online + (1 − τ)·target`), not from `adamant-kernels`: it is the oracle that
//! the CPU tests (`tests/cpu/kernels.rs`, `tests/cpu/clamp.rs`) and the GPU tests check the f32
//! kernels against, so it must not share their code.
//!
//! # The rule
//!
//! For step `t >= 1`, with `bc1 = 1 - β1^t`, `bc2 = 1 - β2^t` ([`bias_corrections`]):
//!
//! ```text
//! m  = β1·m + (1 - β1)·g
//! v  = β2·v + (1 - β2)·g²
//! p  = p - (lr / bc1) · m / (sqrt(v̂) / sqrt(bc2) + eps)        v̂ = v, or v_max for AMSGrad
//! p  = clamp(p, bound)                                          (see [`clamp`])
//! ```
//!
//! and per kernel ([`KernelRef`]):
//!
//! | kernel                   | before the rule                                  |
//! |--------------------------|--------------------------------------------------|
//! | `dqn_adam_update_kernel` | `g *= grad_scale`; `p *= 1 - lr·wd` (AdamW)      |
//! | `iqn_adam_kernel`        | `g += wd·p` (L2)                                 |
//! | `iql_adam_kernel`        | `g = clamp(g, ±grad_clip)` (0 = off), `g += wd·p`|
//! | `attn_adam_kernel`       | `p *= 1 - lr·wd` (AdamW)                         |
//! | `curiosity_adam_step`    | none; AMSGrad: `v_max = max(v_max, v)`, `v̂ = v_max` |
//!
//! # What is modelled of f32
//!
//! Everything is computed in f64 from the f32 inputs, with two deliberate exceptions, both
//! properties of the f32 buffers rather than of the arithmetic:
//! - [`Hyper::new`] takes the hyperparameters as the f32 values the kernel receives, so the
//!   reference and the kernel start from identical numbers (`0.9f32` is not `0.9`). The bias
//!   corrections stay f64 (the kernel gets them rounded to f32; the tolerance covers that).
//! - A new `p`, `m`, `v` or `v_max` too large for f32 becomes `±inf`, as it does in the f32
//!   buffer ([`fit_f32`]). Without this a huge gradient (`|g| ≳ 6e20` with β2 = 0.999) would give
//!   a finite f64 `v` while the kernel's `v` (and PyTorch's, in f32) is `inf`.
//!
//! # Tolerance
//!
//! Every reference value comes with an error *scale* ([`step_with_scale`]): a running bound of the
//! magnitudes an f32 evaluation of the same formula rounds, with cancellation accounted for. It is
//! what the result would be if every sum were a sum of absolute values (`|p| + |update|` for
//! `p - update`, `β1·|m| + (1-β1)·(|g| + |wd·p|)` for `m`, ...), with the denominator's own error
//! propagated through the division, plus `f32::MIN_POSITIVE` per rounded quantity for the
//! absolute rounding of subnormals. An f32 result passes if
//!
//! ```text
//! |actual - expected| <= TOLERANCE · f32::EPSILON · scale        (NaN == NaN, ±inf == ±inf)
//! ```
//!
//! The longest f32 path is about 13 correctly rounded operations (each at most `EPSILON/2` of the
//! magnitude it rounds), so [`TOLERANCE`] = 16 is a bound with headroom, not a fudge: a wrong
//! formula shows up as errors of order `1/EPSILON` times bigger wherever the update is not
//! negligible next to `|p|`. Because the scale includes `|p|`, an update smaller than a rounding
//! of `p` cannot be checked through `p`; the moments are compared separately for that reason.
//! A non-finite scale (non-finite inputs) accepts only exact equality.
//!
//! # Slices
//!
//! [`RefState`] and [`step_slices`] apply one launch to whole buffers. The error scales carried in
//! a `RefState` grow with every step (input errors are propagated linearly through the next step),
//! so the same [`RefState::max_errors`] check works after many free-running steps; a tight check
//! of many steps instead rebuilds the `RefState` from the device's buffers before each step.

/// The optimizer kernels, by the name of their entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelRef {
    /// `dqn_adam_update_kernel`: AdamW, gradient times `grad_scale`.
    Dqn,
    /// `iqn_adam_kernel`: Adam with L2 decay.
    Iqn,
    /// `iql_adam_kernel`: gradient clip, then Adam with L2 decay.
    Iql,
    /// `attn_adam_kernel`: AdamW.
    Attn,
    /// `curiosity_adam_step`: AMSGrad, no decay.
    Curiosity,
}

impl KernelRef {
    pub const ALL: [KernelRef; 5] = [
        KernelRef::Dqn,
        KernelRef::Iqn,
        KernelRef::Iql,
        KernelRef::Attn,
        KernelRef::Curiosity,
    ];

    /// The kernel's entry name (as in the PTX and `adamant_kernels::optimizers`).
    pub fn name(self) -> &'static str {
        match self {
            KernelRef::Dqn => "dqn_adam_update_kernel",
            KernelRef::Iqn => "iqn_adam_kernel",
            KernelRef::Iql => "iql_adam_kernel",
            KernelRef::Attn => "attn_adam_kernel",
            KernelRef::Curiosity => "curiosity_adam_step",
        }
    }

    pub fn from_name(name: &str) -> Option<KernelRef> {
        KernelRef::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the kernel keeps `v_max` (AMSGrad).
    pub fn amsgrad(self) -> bool {
        self == KernelRef::Curiosity
    }

    /// Decoupled decay `p *= 1 - lr·wd` (AdamW).
    fn decoupled_decay(self) -> bool {
        matches!(self, KernelRef::Dqn | KernelRef::Attn)
    }

    /// L2 decay `g += wd·p` (Adam).
    fn l2_decay(self) -> bool {
        matches!(self, KernelRef::Iqn | KernelRef::Iql)
    }
}

/// `(1 - β1^t, 1 - β2^t)` for step `t >= 1`, in f64 (what the host computes once per launch).
pub fn bias_corrections(beta1: f64, beta2: f64, step: u64) -> (f64, f64) {
    assert!(step >= 1, "Adam steps count from 1");
    let t = step as f64;
    (1.0 - beta1.powf(t), 1.0 - beta2.powf(t))
}

/// The hyperparameters of one launch, in f64. Fields the kernel at hand does not take are ignored
/// (`weight_decay` by curiosity, `grad_scale` by all but dqn, `grad_clip` by all but iql).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hyper {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    /// dqn's gradient multiplier (the device-resident value; a null pointer means 1.0).
    pub grad_scale: f64,
    /// iql's element-wise gradient clip; `<= 0` is off.
    pub grad_clip: f64,
    pub step: u64,
    /// `1 - β1^step`, kept in sync with `beta1`/`step` by the constructors.
    pub bias_correction1: f64,
    /// `1 - β2^step`.
    pub bias_correction2: f64,
}

impl Hyper {
    /// From the f32 values the kernel receives (so both sides start from the same numbers);
    /// `grad_scale = 1`, `grad_clip = 0` (off).
    pub fn new(lr: f32, beta1: f32, beta2: f32, eps: f32, weight_decay: f32, step: u64) -> Hyper {
        let (bias_correction1, bias_correction2) =
            bias_corrections(beta1 as f64, beta2 as f64, step);
        Hyper {
            lr: lr as f64,
            beta1: beta1 as f64,
            beta2: beta2 as f64,
            eps: eps as f64,
            weight_decay: weight_decay as f64,
            grad_scale: 1.0,
            grad_clip: 0.0,
            step,
            bias_correction1,
            bias_correction2,
        }
    }

    /// PyTorch's defaults (`lr = 1e-3`, `β = (0.9, 0.999)`, `eps = 1e-8`) with `weight_decay`.
    pub fn torch_default(weight_decay: f32, step: u64) -> Hyper {
        Hyper::new(1e-3, 0.9, 0.999, 1e-8, weight_decay, step)
    }

    pub fn with_grad_scale(self, grad_scale: f32) -> Hyper {
        Hyper {
            grad_scale: grad_scale as f64,
            ..self
        }
    }

    pub fn with_grad_clip(self, grad_clip: f32) -> Hyper {
        Hyper {
            grad_clip: grad_clip as f64,
            ..self
        }
    }

    /// The same hyperparameters at another step (bias corrections recomputed).
    pub fn with_step(self, step: u64) -> Hyper {
        let (bias_correction1, bias_correction2) = bias_corrections(self.beta1, self.beta2, step);
        Hyper {
            step,
            bias_correction1,
            bias_correction2,
            ..self
        }
    }

    /// The f32 arguments a launch passes (bias corrections rounded from f64, as the host does).
    pub fn scalars(&self) -> Scalars32 {
        Scalars32 {
            lr: self.lr as f32,
            beta1: self.beta1 as f32,
            beta2: self.beta2 as f32,
            eps: self.eps as f32,
            weight_decay: self.weight_decay as f32,
            grad_scale: self.grad_scale as f32,
            grad_clip: self.grad_clip as f32,
            bias_correction1: self.bias_correction1 as f32,
            bias_correction2: self.bias_correction2 as f32,
        }
    }
}

/// [`Hyper`] as the f32 kernel arguments.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scalars32 {
    pub lr: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub eps: f32,
    pub weight_decay: f32,
    pub grad_scale: f32,
    pub grad_clip: f32,
    pub bias_correction1: f32,
    pub bias_correction2: f32,
}

/// One element's optimizer state (`v_max` only meaningful for AMSGrad), or its error scale.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Elem {
    pub p: f64,
    pub m: f64,
    pub v: f64,
    pub v_max: f64,
}

impl Elem {
    pub fn new(p: f64, m: f64, v: f64, v_max: f64) -> Elem {
        Elem { p, m, v, v_max }
    }

    /// From f32 values (exact).
    pub fn from_f32(p: f32, m: f32, v: f32, v_max: f32) -> Elem {
        Elem::new(p as f64, m as f64, v as f64, v_max as f64)
    }
}

/// The weight clamp: with `bound > 0`, a `p` beyond `±bound` (including `±inf`) becomes the bound
/// on its side; NaN stays NaN; `bound <= 0` or NaN disables it.
pub fn clamp(p: f64, bound: f64) -> f64 {
    let enabled = bound > 0.0;
    if !enabled || p.is_nan() {
        p
    } else if p > bound {
        bound
    } else if p < -bound {
        -bound
    } else {
        p
    }
}

/// iql's gradient clip to `±clip`; `clip <= 0` (or NaN) is off; NaN stays NaN.
pub fn clip_gradient(g: f64, clip: f64) -> f64 {
    let enabled = clip > 0.0;
    if enabled && g > clip {
        clip
    } else if enabled && g < -clip {
        -clip
    } else {
        g
    }
}

/// `x` as it ends up in an f32 buffer, range-wise: `±inf` if it overflows f32, else unchanged
/// (its f64 precision is kept; see the module docs).
pub fn fit_f32(x: f64) -> f64 {
    if x.is_finite() && (x as f32).is_infinite() {
        f64::INFINITY.copysign(x)
    } else {
        x
    }
}

/// `torch.maximum`: the larger of two, NaN if either is NaN.
fn max_nan(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// The f32 error scale floor of one rounded quantity: an f32 rounding is within
/// `EPSILON/2 · max(|x|, MIN_POSITIVE)` (the second term for subnormals).
const FLOOR: f64 = f32::MIN_POSITIVE as f64;

/// [`step`], plus the error scale of each output (see the module docs), given the error scale
/// `carried` already in the inputs (`Elem::default()` for exact f32 inputs).
pub fn step_with_scale(
    kernel: KernelRef,
    e: Elem,
    carried: Elem,
    g: f64,
    hp: &Hyper,
    bound: f64,
) -> (Elem, Elem) {
    let (b1, b2, wd) = (hp.beta1, hp.beta2, hp.weight_decay);

    // Decay and the effective gradient, with their magnitudes.
    let p0 = if kernel.decoupled_decay() {
        e.p * (1.0 - hp.lr * wd)
    } else {
        e.p
    };
    let g1 = match kernel {
        KernelRef::Dqn => g * hp.grad_scale,
        KernelRef::Iql => clip_gradient(g, hp.grad_clip),
        _ => g,
    };
    // Like torch.optim.Adam, L2 decay is only added when wd != 0 (so an infinite weight is not
    // turned into NaN by 0·inf when decay is off).
    let (g_eff, g_mag, g_carried) = if kernel.l2_decay() && wd != 0.0 {
        (
            g1 + wd * e.p,
            g1.abs() + (wd * e.p).abs() + FLOOR,
            wd.abs() * carried.p,
        )
    } else {
        (g1, g1.abs() + FLOOR, 0.0)
    };

    // Moments.
    let m = fit_f32(b1 * e.m + (1.0 - b1) * g_eff);
    let v = fit_f32(b2 * e.v + (1.0 - b2) * g_eff * g_eff);
    let m_scale = b1 * (e.m.abs() + carried.m) + (1.0 - b1) * (g_mag + g_carried) + m.abs() + FLOOR;
    let v_scale = b2 * (e.v.abs() + carried.v)
        + (1.0 - b2) * (g_eff * g_eff + 2.0 * g_eff.abs() * (g_mag + g_carried))
        + v.abs()
        + FLOOR;
    let (v_max, v_max_scale) = if kernel.amsgrad() {
        (max_nan(e.v_max, v), carried.v_max.max(v_scale))
    } else {
        (e.v_max, carried.v_max)
    };
    let (v_hat, v_hat_scale) = if kernel.amsgrad() {
        (v_max, v_max_scale)
    } else {
        (v, v_scale)
    };

    // Update.
    let step_size = hp.lr / hp.bias_correction1;
    let sqrt_bc2 = hp.bias_correction2.sqrt();
    let denom = v_hat.sqrt() / sqrt_bc2 + hp.eps;
    let update = step_size * (m / denom);
    let p = clamp(fit_f32(p0 - update), bound);

    // Error scale of the update: the numerator's, plus the denominator's through the division.
    // sqrt is linearised at max(v̂, TOLERANCE·EPSILON·scale): below that, |sqrt(a) - sqrt(b)| <=
    // sqrt(|a - b|) is the better bound.
    let update_scale = if denom.is_infinite() && m.is_finite() {
        0.0 // m / inf is exactly 0 in f32 as well
    } else {
        let knee = v_hat.max(TOLERANCE * f32::EPSILON as f64 * v_hat_scale);
        let sqrt_scale = if knee > 0.0 {
            v_hat_scale / (2.0 * knee.sqrt())
        } else {
            0.0
        };
        let denom_scale = (v_hat.sqrt() + sqrt_scale) / sqrt_bc2 + hp.eps;
        step_size * (m_scale + m.abs() * denom_scale / denom) / denom + FLOOR
    };
    let p_scale = e.p.abs() + carried.p + update_scale + FLOOR;

    (
        Elem { p, m, v, v_max },
        Elem {
            p: p_scale,
            m: m_scale,
            v: v_scale,
            v_max: v_max_scale,
        },
    )
}

/// One step of `kernel` on one element, then the clamp (`bound == 0` disables it: the unclamped
/// `update`).
pub fn step(kernel: KernelRef, e: Elem, g: f64, hp: &Hyper, bound: f64) -> Elem {
    step_with_scale(kernel, e, Elem::default(), g, hp, bound).0
}

/// `dqn_adam_update_kernel` on one element: `(p, m, v)`. Uses `hp.grad_scale`.
pub fn dqn(p: f64, g: f64, m: f64, v: f64, hp: &Hyper, bound: f64) -> (f64, f64, f64) {
    let e = step(KernelRef::Dqn, Elem::new(p, m, v, 0.0), g, hp, bound);
    (e.p, e.m, e.v)
}

/// `iqn_adam_kernel` on one element: `(p, m, v)`.
pub fn iqn(p: f64, g: f64, m: f64, v: f64, hp: &Hyper, bound: f64) -> (f64, f64, f64) {
    let e = step(KernelRef::Iqn, Elem::new(p, m, v, 0.0), g, hp, bound);
    (e.p, e.m, e.v)
}

/// `iql_adam_kernel` on one element: `(p, m, v)`. Uses `hp.grad_clip`.
pub fn iql(p: f64, g: f64, m: f64, v: f64, hp: &Hyper, bound: f64) -> (f64, f64, f64) {
    let e = step(KernelRef::Iql, Elem::new(p, m, v, 0.0), g, hp, bound);
    (e.p, e.m, e.v)
}

/// `attn_adam_kernel` on one element: `(p, m, v)`.
pub fn attn(p: f64, g: f64, m: f64, v: f64, hp: &Hyper, bound: f64) -> (f64, f64, f64) {
    let e = step(KernelRef::Attn, Elem::new(p, m, v, 0.0), g, hp, bound);
    (e.p, e.m, e.v)
}

/// `curiosity_adam_step` on one element: `(p, m, v, v_max)`.
pub fn curiosity(
    p: f64,
    g: f64,
    m: f64,
    v: f64,
    v_max: f64,
    hp: &Hyper,
    bound: f64,
) -> (f64, f64, f64, f64) {
    let e = step(
        KernelRef::Curiosity,
        Elem::new(p, m, v, v_max),
        g,
        hp,
        bound,
    );
    (e.p, e.m, e.v, e.v_max)
}

/// The pass threshold of [`error`], in units of `f32::EPSILON · scale` (see the module docs).
pub const TOLERANCE: f64 = 16.0;

/// How far an f32 result is from the reference, in units of `f32::EPSILON · scale`: 0 when equal
/// (NaN == NaN, `±inf == ±inf`, `-0 == +0`), infinite when one is NaN and the other not, or when
/// they differ and `scale` is not finite and positive. Passes if `<= TOLERANCE`.
pub fn error(expected: f64, scale: f64, actual: f32) -> f64 {
    let actual = actual as f64;
    if expected.is_nan() || actual.is_nan() {
        return if expected.is_nan() && actual.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if expected == actual {
        return 0.0;
    }
    if !(scale.is_finite() && scale > 0.0) {
        return f64::INFINITY;
    }
    (actual - expected).abs() / (f32::EPSILON as f64 * scale)
}

/// The largest [`error`] over a slice, and where.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MaxError {
    pub error: f64,
    pub index: usize,
}

impl MaxError {
    pub fn passes(&self) -> bool {
        self.error <= TOLERANCE
    }

    fn merge(self, other: MaxError) -> MaxError {
        // `>` and not `max`, so that the first infinite error keeps its index.
        if other.error > self.error {
            other
        } else {
            self
        }
    }
}

/// The largest [`error`] of `actual` against `expected` (with its `scale`), element-wise.
pub fn max_error(expected: &[f64], scale: &[f64], actual: &[f32]) -> MaxError {
    assert_eq!(expected.len(), actual.len(), "length mismatch");
    assert_eq!(scale.len(), actual.len(), "length mismatch");
    (0..actual.len())
        .map(|index| MaxError {
            error: error(expected[index], scale[index], actual[index]),
            index,
        })
        .fold(MaxError::default(), MaxError::merge)
}

/// Panics (naming `what` and the worst element) unless every element passes.
pub fn assert_close(what: &str, expected: &[f64], scale: &[f64], actual: &[f32]) {
    let worst = max_error(expected, scale, actual);
    let i = worst.index;
    assert!(
        worst.passes(),
        "{what}[{i}]: got {:e}, reference {:e} (scale {:e}): error {:.3e} > {TOLERANCE} EPSILON·scale",
        actual[i],
        expected[i],
        scale[i],
        worst.error,
    );
}

/// Whole buffers in f64, struct of arrays (`v_max` all zero unless AMSGrad).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Slices {
    pub p: Vec<f64>,
    pub m: Vec<f64>,
    pub v: Vec<f64>,
    pub v_max: Vec<f64>,
}

impl Slices {
    fn zeros(len: usize) -> Slices {
        Slices {
            p: vec![0.0; len],
            m: vec![0.0; len],
            v: vec![0.0; len],
            v_max: vec![0.0; len],
        }
    }

    fn get(&self, i: usize) -> Elem {
        Elem::new(self.p[i], self.m[i], self.v[i], self.v_max[i])
    }

    fn set(&mut self, i: usize, e: Elem) {
        self.p[i] = e.p;
        self.m[i] = e.m;
        self.v[i] = e.v;
        self.v_max[i] = e.v_max;
    }
}

/// The reference state of whole buffers, and the error scale each value has accumulated.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RefState {
    pub value: Slices,
    pub scale: Slices,
}

/// The worst element of each buffer (see [`RefState::max_errors`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StateErrors {
    pub p: MaxError,
    pub m: MaxError,
    pub v: MaxError,
    pub v_max: MaxError,
}

impl StateErrors {
    pub fn passes(&self) -> bool {
        self.p.passes() && self.m.passes() && self.v.passes() && self.v_max.passes()
    }

    /// The largest of the four errors.
    pub fn worst(&self) -> f64 {
        self.p
            .error
            .max(self.m.error)
            .max(self.v.error)
            .max(self.v_max.error)
    }
}

impl RefState {
    /// From the device's f32 buffers (exact, so error scales start at zero). `v_max` is `None`
    /// for kernels without one.
    pub fn from_f32(p: &[f32], m: &[f32], v: &[f32], v_max: Option<&[f32]>) -> RefState {
        let len = p.len();
        assert!(m.len() == len && v.len() == len, "length mismatch");
        let widen = |x: &[f32]| x.iter().map(|&x| x as f64).collect::<Vec<f64>>();
        RefState {
            value: Slices {
                p: widen(p),
                m: widen(m),
                v: widen(v),
                v_max: match v_max {
                    Some(v_max) => {
                        assert_eq!(v_max.len(), len, "length mismatch");
                        widen(v_max)
                    }
                    None => vec![0.0; len],
                },
            },
            scale: Slices::zeros(len),
        }
    }

    pub fn len(&self) -> usize {
        self.value.p.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The worst element of each device buffer against this state. `v_max` is skipped when
    /// `None`.
    pub fn max_errors(
        &self,
        p: &[f32],
        m: &[f32],
        v: &[f32],
        v_max: Option<&[f32]>,
    ) -> StateErrors {
        let (x, s) = (&self.value, &self.scale);
        StateErrors {
            p: max_error(&x.p, &s.p, p),
            m: max_error(&x.m, &s.m, m),
            v: max_error(&x.v, &s.v, v),
            v_max: v_max.map_or(MaxError::default(), |v_max| {
                max_error(&x.v_max, &s.v_max, v_max)
            }),
        }
    }

    /// Panics unless every device buffer passes against this state.
    pub fn assert_close(&self, p: &[f32], m: &[f32], v: &[f32], v_max: Option<&[f32]>) {
        let (x, s) = (&self.value, &self.scale);
        assert_close("p", &x.p, &s.p, p);
        assert_close("m", &x.m, &s.m, m);
        assert_close("v", &x.v, &s.v, v);
        if let Some(v_max) = v_max {
            assert_close("v_max", &x.v_max, &s.v_max, v_max);
        }
    }
}

/// One launch of `kernel` over the whole state with gradient `g` (f32, as on the device) and
/// clamp bound `bound` (0 disables it).
pub fn step_slices(kernel: KernelRef, state: &mut RefState, g: &[f32], hp: &Hyper, bound: f32) {
    assert_eq!(g.len(), state.len(), "gradient length mismatch");
    for (i, &g) in g.iter().enumerate() {
        let (value, scale) = step_with_scale(
            kernel,
            state.value.get(i),
            state.scale.get(i),
            g as f64,
            hp,
            bound as f64,
        );
        state.value.set(i, value);
        state.scale.set(i, scale);
    }
}

// ---------------------------------------------------------------------------------------------
// The soft update of a target network (`soft_update_kernel`).

/// The tolerance of [`soft_update_with_scale`], in `f32::EPSILON · scale`: an f32 evaluation of
/// `τ·online + (1 − τ)·target` rounds three times (`1 − τ`, the second product, the sum; the
/// first product too), each within `EPSILON/2` of what it rounds, so it is within
/// `1.5 · EPSILON · scale` of the exact value; 2 leaves headroom for the reference's own f64
/// rounding, and is far below the error of a wrong formula (`τ` and `1 − τ` swapped is off by
/// `|1 − 2τ|·|online − target|`).
pub const SOFT_UPDATE_TOLERANCE: f64 = 2.0;

/// `soft_update_kernel` on one element, from the formula: `target ← τ·online + (1 − τ)·target`,
/// then [`clamp`] (`bound == 0` disables it), in f64 from the f32 inputs (`tau` as the f32 value
/// the kernel receives). Returns the value and its error scale `|τ·online| + |(1 − τ)·target|`
/// (plus the subnormal floor); see [`SOFT_UPDATE_TOLERANCE`]. Non-finite weights follow IEEE
/// arithmetic in the formula: NaN in either gives NaN, `0·inf` is NaN (an infinite `online` at
/// `τ = 0`), and an infinite result is brought to `±bound` by the clamp.
pub fn soft_update_with_scale(target: f64, online: f64, tau: f64, bound: f64) -> (f64, f64) {
    let value = tau * online + (1.0 - tau) * target;
    let scale = (tau * online).abs() + ((1.0 - tau) * target).abs() + FLOOR;
    (clamp(value, bound), scale)
}

/// [`soft_update_with_scale`]'s value.
pub fn soft_update(target: f64, online: f64, tau: f64, bound: f64) -> f64 {
    soft_update_with_scale(target, online, tau, bound).0
}
