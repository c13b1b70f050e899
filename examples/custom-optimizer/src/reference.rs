//! f64 references of the two updates, written from their papers' formulas (not from the kernel
//! code), with the clamp as adamant documents it: `|x| > bound > 0` gives `±bound`, else `x`.

/// The clamp, in f64.
pub fn clamp(x: f64, bound: f64) -> f64 {
    if bound > 0.0 && x.abs() > bound {
        bound.copysign(x)
    } else {
        x
    }
}

/// One Lion step of one element: `(p, m)` after it (the kernel's arguments, in its order).
#[allow(clippy::too_many_arguments)]
pub fn lion(
    p: f64,
    g: f64,
    m: f64,
    lr: f64,
    beta1: f64,
    beta2: f64,
    wd: f64,
    bound: f64,
) -> (f64, f64) {
    let c = beta1 * m + (1.0 - beta1) * g;
    let sign = if c > 0.0 {
        1.0
    } else if c < 0.0 {
        -1.0
    } else {
        0.0
    };
    let p = p * (1.0 - lr * wd) - lr * sign;
    (clamp(p, bound), beta2 * m + (1.0 - beta2) * g)
}

/// One step of SGD with momentum (PyTorch's, no dampening) of one element: `(p, buf)` after it.
pub fn sgd_momentum(
    p: f64,
    g: f64,
    buf: f64,
    lr: f64,
    momentum: f64,
    wd: f64,
    bound: f64,
) -> (f64, f64) {
    let d = g + wd * p;
    let buf = momentum * buf + d;
    (clamp(p - lr * buf, bound), buf)
}

/// One step of centered RMSprop (PyTorch's `RMSprop(centered=True)`) of one element:
/// `(p, square_avg, grad_avg, buf)` after it.
#[allow(clippy::too_many_arguments)]
pub fn rmsprop_centered(
    p: f64,
    g: f64,
    state: (f64, f64, f64),
    lr: f64,
    alpha: f64,
    eps: f64,
    wd: f64,
    momentum: f64,
    bound: f64,
) -> (f64, f64, f64, f64) {
    let (square_avg, grad_avg, buf) = state;
    let d = g + wd * p;
    let square_avg = alpha * square_avg + (1.0 - alpha) * d * d;
    let grad_avg = alpha * grad_avg + (1.0 - alpha) * d;
    let avg = (square_avg - grad_avg * grad_avg).sqrt() + eps;
    let buf = momentum * buf + d / avg;
    (clamp(p - lr * buf, bound), square_avg, grad_avg, buf)
}

/// NAdam's momentum schedule in f64, from the paper's formula: `μ_t = β1·(1 − ½·0.96^(t·ψ))`.
pub fn nadam_mu(t: u32, beta1: f64, momentum_decay: f64) -> f64 {
    beta1 * (1.0 - 0.5 * 0.96f64.powf(t as f64 * momentum_decay))
}

/// `(μ_t, μ_{t+1}, Π_t)` of step `t`: the schedule and the product of `μ_1..μ_t`, in f64.
pub fn nadam_derived(t: u32, beta1: f64, momentum_decay: f64) -> (f64, f64, f64) {
    let product: f64 = (1..=t)
        .map(|i| nadam_mu(i, beta1, momentum_decay))
        .product();
    (
        nadam_mu(t, beta1, momentum_decay),
        nadam_mu(t + 1, beta1, momentum_decay),
        product,
    )
}

/// The hyperparameters of one NAdam step, in f64.
#[derive(Clone, Copy, Debug)]
pub struct NadamHyper {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub momentum_decay: f64,
}

/// One NAdam step `t` (PyTorch's `NAdam`, L2 decay) of one element: `(p, m, v)` after it, with
/// the schedule's values `(μ_t, μ_{t+1}, Π_t)` given (from [`nadam_derived`]).
pub fn nadam(
    p: f64,
    g: f64,
    (m, v): (f64, f64),
    t: u32,
    h: &NadamHyper,
    (mu, mu_next, mu_product): (f64, f64, f64),
    bound: f64,
) -> (f64, f64, f64) {
    let d = g + h.weight_decay * p;
    let m = h.beta1 * m + (1.0 - h.beta1) * d;
    let v = h.beta2 * v + (1.0 - h.beta2) * d * d;
    let bias_correction2 = 1.0 - h.beta2.powi(t as i32);
    let denom = (v / bias_correction2).sqrt() + h.eps;
    let p = p
        - h.lr * (1.0 - mu) / (1.0 - mu_product) * d / denom
        - h.lr * mu_next / (1.0 - mu_product * mu_next) * m / denom;
    (clamp(p, bound), m, v)
}
