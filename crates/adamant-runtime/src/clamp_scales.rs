//! Per-tensor clamp bounds of the multi-tensor launches. Layer-wise weight clipping (Elsayed et
//! al., RLJ 2024) clips each layer `l` to `κ · s_l`, `s_l` from the layer's initialisation range:
//! a multi-tensor entry clamps tensor `t` with `tensor_bound(bound, scales[t])`
//! (`adamant_device::multi::tensor_bound`), the launch's bound (`κ`) times the tensor's scale.
//! A [`crate::TensorSet`] keeps the scales beside its other tables: ones until
//! [`crate::TensorSet::set_clamp_scales`] gives others, so every launch path passes a table and
//! a launch without scales clamps every tensor with its bound, bit for bit.
//!
//! Here are the host's checks: a scale that would turn a tensor's clamp off (0, negative, NaN,
//! a product that rounds to 0, or one above the ceiling, where it could never bite) is refused
//! before anything is uploaded or launched.
use adamant_device::clamp::BOUND_CEILING;
use adamant_device::multi::tensor_bound;

use crate::error::{Error, Result};

/// Every scale is finite and at least `f32::MIN_POSITIVE` (a normal, positive number).
pub(crate) fn check_scales(kernel: &'static str, scales: &[f32]) -> Result<()> {
    for (tensor, &value) in scales.iter().enumerate() {
        if !(value.is_finite() && value >= f32::MIN_POSITIVE) {
            return Err(Error::InvalidClampScale {
                kernel,
                tensor,
                value,
                requirement: "a scale must be finite and at least f32::MIN_POSITIVE (0, a \
                              negative or a NaN scale would disable or invert its tensor's clamp)"
                    .into(),
            });
        }
    }
    Ok(())
}

/// With the smallest bound a launch can have, every tensor's bound stays a clamping one: a
/// positive bound times a scale must not round to 0 (which the contract reads as "disabled"),
/// nor lie above [`BOUND_CEILING`] (a bound that cannot bite; the device would saturate it at
/// the ceiling, so the product would not be the bound asked for). For a plain launch the smallest
/// bound is its bound; a stepped one's grows with `Q_ABS_REF`, and the device saturates the
/// larger products at the ceiling. A bound of 0 is a clamp disabled for the whole launch, by its
/// policy.
pub(crate) fn check_products(kernel: &'static str, scales: &[f32], smallest: f32) -> Result<()> {
    if smallest.is_nan() || smallest <= 0.0 {
        return Ok(());
    }
    // The scales are checked finite and positive, so the product is never NaN.
    for (tensor, &scale) in scales.iter().enumerate() {
        let refuse = |why: &str| {
            Err(Error::InvalidClampScale {
                kernel,
                tensor,
                value: scale,
                requirement: format!("with the launch's bound {smallest:e} {why}"),
            })
        };
        if tensor_bound(smallest, scale) <= 0.0 {
            return refuse("the tensor's bound rounds to 0, which would disable its clamp");
        }
        if smallest * scale > BOUND_CEILING {
            return refuse(
                "the tensor's bound is above the ceiling 1e18, where a clamp cannot bite (for no \
                 clamp, disable the launch's with a reason)",
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_that_would_disable_a_clamp_are_refused_and_name_the_tensor() {
        for bad in [0.0f32, -0.0, -1.0, f32::NAN, f32::INFINITY, 1e-40] {
            let err = check_scales("k_multi", &[1.0, 0.5, bad]).unwrap_err();
            match err {
                Error::InvalidClampScale { tensor, value, .. } => {
                    assert_eq!(tensor, 2);
                    assert_eq!(value.to_bits(), bad.to_bits());
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(check_scales("k_multi", &[1.0, f32::MIN_POSITIVE, 3e38]).is_ok());
    }

    #[test]
    fn a_product_above_the_ceiling_is_refused_and_names_the_tensor() {
        // 3e38 with bound 1 would be a bound that never bites.
        let err = check_products("k_multi", &[1.0, 3e38], 1.0).unwrap_err();
        assert!(
            matches!(err, Error::InvalidClampScale { tensor: 1, .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("ceiling"), "{err}");
        // At the ceiling is allowed; one ulp past it is not.
        assert!(check_products("k_multi", &[1.0, 1e16], 99.0).is_ok());
        let past = BOUND_CEILING.next_up();
        assert!(check_products("k_multi", &[past], 1.0).is_err());
        assert!(check_products("k_multi", &[BOUND_CEILING], 1.0).is_ok());
    }

    #[test]
    fn a_product_that_rounds_to_zero_is_refused_unless_the_launch_disables_the_clamp() {
        let scales = [1.0f32, 1e-30];
        assert!(check_products("k_multi", &scales, 100.0).is_ok());
        let err = check_products("k_multi", &scales, 1e-20).unwrap_err();
        assert!(
            matches!(err, Error::InvalidClampScale { tensor: 1, .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("rounds to 0"), "{err}");
        // A disabled clamp (bound 0) stays disabled whatever the scales.
        assert!(check_products("k_multi", &scales, 0.0).is_ok());
    }
}
