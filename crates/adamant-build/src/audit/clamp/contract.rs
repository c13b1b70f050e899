//! The contract a stored value is held to, and the table of inputs it is checked on.
/// The contract, written from its definition (not from the kernels' own `weight_clamp`, so a
/// change there cannot change what the device code is held to).
pub fn contract(x: f32, bound: f32) -> f32 {
    if bound > 0.0 && x.abs() > bound {
        if x.is_sign_negative() {
            -bound
        } else {
            bound
        }
    } else {
        x
    }
}

/// The per-tensor bound, written from its definition (not from the kernels' own
/// `tensor_bound`): the launch's bound times the tensor's scale, rounded to nearest, a product
/// above the clamp's ceiling (`adamant_abi::BOUND_CEILING`, an overflow included)
/// saturated at the ceiling.
pub fn tensor_contract(bound: f32, scale: f32) -> f32 {
    let ceiling = adamant_abi::BOUND_CEILING;
    let product = bound * scale;
    if product > ceiling {
        ceiling
    } else {
        product
    }
}

/// The `(x, bound, scale)` triples a multi-tensor entry's clamp is run on: every `(x, bound)`
/// case with a scale of 1, the same with the bound as the scale (and a launch bound of 1), and
/// a grid of scales that round, overflow and underflow.
pub fn scaled_cases() -> Vec<(u32, u32, u32)> {
    let one = 1f32.to_bits();
    let pairs = cases();
    let mut out: Vec<(u32, u32, u32)> = Vec::with_capacity(pairs.len() * 3);
    for &(x, b) in &pairs {
        out.push((x, b, one));
        out.push((x, one, b));
    }
    let scales = [
        0.5f32,
        2.0,
        1e-3,
        1e3,
        0.1,
        3.0,
        1e-30,
        f32::MAX,
        f32::MIN_POSITIVE,
        1.0f32.next_up(),
        1e16,
    ];
    let ceiling = adamant_abi::BOUND_CEILING;
    // Around the ceiling too: products at it, just past it and far past it (the saturation).
    let bounds = [
        1.0f32,
        2.5,
        100.0,
        7.0,
        f32::MAX,
        1e30,
        0.3,
        0.0,
        f32::NAN,
        ceiling,
        ceiling / 2.0,
    ];
    let xs = [
        0.0f32,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1.0,
        -1.0,
        0.05,
        -0.3,
        2.0,
        -7.5,
        150.0,
        -2.6,
        1e30,
        -1e38,
        f32::MAX,
        1e-39,
    ];
    for &b in &bounds {
        for &sc in &scales {
            let t = tensor_contract(b, sc);
            let mut around = xs.to_vec();
            if t.is_finite() {
                for v in [t, t.next_up(), t.next_down()] {
                    around.push(v);
                    around.push(-v);
                }
            }
            for &x in &around {
                out.push((x.to_bits(), b.to_bits(), sc.to_bits()));
            }
        }
    }
    out
}

/// The `(x, bound)` pairs the clamp is run on.
pub fn cases() -> Vec<(u32, u32)> {
    let bounds: Vec<f32> = vec![
        0.0,
        -0.0,
        f32::NAN,
        -f32::NAN,
        -1.0,
        f32::NEG_INFINITY,
        f32::INFINITY,
        1.0,
        2.5,
        0.1,
        7.0,
        100.0,
        1e-40,
        f32::MIN_POSITIVE,
        f32::MAX,
        1e30,
    ];
    let xs: Vec<f32> = vec![
        0.0,
        -0.0,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001),
        f32::from_bits(0xffc0_1234),
        f32::INFINITY,
        f32::NEG_INFINITY,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1e-40,
        -1e-40,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        1e30,
        -1e30,
        3.0,
        -3.0,
        150.0,
        -150.0,
    ];
    // Magnitudes from 1e-38 to 1e38, every 10^4, with both signs.
    let spread = (-38..=38)
        .step_by(4)
        .flat_map(|e| [10f32.powi(e), -(10f32.powi(e)) * 1.5]);
    let xs: Vec<f32> = xs.into_iter().chain(spread).collect();
    let mut out = Vec::new();
    for &b in &bounds {
        let mut around = xs.clone();
        if b.is_finite() {
            for v in [b, b.next_up(), b.next_down()] {
                around.push(v);
                around.push(-v);
            }
        }
        for &x in &around {
            out.push((x.to_bits(), b.to_bits()));
        }
    }
    out
}
