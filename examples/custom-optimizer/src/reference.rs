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
