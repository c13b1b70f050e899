//! The kernel-author prelude's float functions, against std and their stated edge cases.
use adamant_kernels::prelude::{fma, sign, sqrt};

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
