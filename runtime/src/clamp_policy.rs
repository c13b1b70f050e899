//! The host side of the weight clamp: every optimizer launch states where its bound comes from.
//! There is deliberately no `Default`: a launch that forgot the clamp does not compile.
use crate::error::{Error, Result};

/// How many `Q_ABS_REF`s the weights may reach: `bound = BOUND_FACTOR × max(Q_ABS_REF, 1.0)`.
pub const BOUND_FACTOR: f32 = 100.0;

/// Where one optimizer launch's `weight_clamp_max_abs` comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ClampPolicy {
    /// Derived from the ISV's `Q_ABS_REF`: `100 × max(Q_ABS_REF, 1.0)`.
    FromIsv { q_abs_ref: f32 },
    /// An explicit positive bound (tools and tests that need a bound other than the ISV's).
    Fixed { bound: f32 },
    /// No clamp (bound 0.0), with the reason on record, as for the decision transformer.
    Disabled { reason: &'static str },
}

/// A `weight_clamp_max_abs` that passed [`ClampPolicy::validated`]: finite and `> 0`, or `0.0`
/// for a disabled clamp with a reason. Only this module makes one, and it is the only bound a
/// launch passes to the device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ValidBound(f32);

impl ValidBound {
    /// The bound as the device receives it.
    pub fn value(self) -> f32 {
        self.0
    }
}

impl ClampPolicy {
    /// The validated bound (see [`ClampPolicy::bound`]).
    pub fn validated(&self) -> Result<ValidBound> {
        self.bound().map(ValidBound)
    }

    /// The bound from the ISV's `Q_ABS_REF`.
    pub fn from_isv(q_abs_ref: f32) -> ClampPolicy {
        ClampPolicy::FromIsv { q_abs_ref }
    }

    /// The clamp switched off; `reason` is required and kept for logs.
    pub fn disabled(reason: &'static str) -> ClampPolicy {
        ClampPolicy::Disabled { reason }
    }

    /// The `weight_clamp_max_abs` kernel argument, validated: finite and `> 0`, or exactly `0.0`
    /// for [`ClampPolicy::Disabled`].
    pub fn bound(&self) -> Result<f32> {
        match *self {
            ClampPolicy::FromIsv { q_abs_ref } => {
                if !q_abs_ref.is_finite() || q_abs_ref < 0.0 {
                    return Err(Error::InvalidClamp {
                        what: "Q_ABS_REF",
                        value: q_abs_ref,
                        requirement: "finite and >= 0",
                    });
                }
                let bound = BOUND_FACTOR * q_abs_ref.max(1.0);
                if !bound.is_finite() {
                    return Err(Error::InvalidClamp {
                        what: "weight_clamp_max_abs (100 × Q_ABS_REF)",
                        value: bound,
                        requirement: "finite (Q_ABS_REF is too large)",
                    });
                }
                Ok(bound)
            }
            ClampPolicy::Fixed { bound } => {
                if bound.is_finite() && bound > 0.0 {
                    Ok(bound)
                } else {
                    Err(Error::InvalidClamp {
                        what: "weight_clamp_max_abs",
                        value: bound,
                        requirement: "finite and > 0 (use ClampPolicy::disabled(reason) for 0)",
                    })
                }
            }
            ClampPolicy::Disabled { reason } => {
                if reason.trim().is_empty() {
                    Err(Error::DisabledWithoutReason)
                } else {
                    Ok(0.0)
                }
            }
        }
    }
}
