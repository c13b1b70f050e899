//! The host side of the weight clamp: every optimizer launch states where its bound comes from.
//! There is deliberately no `Default`: a launch that forgot the clamp does not compile.
use crate::error::{Error, Result};

pub use adamant_device::clamp::BOUND_CEILING;

/// How many `Q_ABS_REF`s a weight may reach under [`ClampPolicy::FromIsv`]:
/// `bound = BOUND_FACTOR × max(Q_ABS_REF, 1.0)`, so 100 while the ISV's reference is below 1.
pub const BOUND_FACTOR: f32 = 100.0;

/// Where one optimizer launch's `weight_clamp_max_abs` comes from.
///
/// Every optimizer kernel clamps each parameter it writes: with `bound > 0`, `|p| > bound`
/// becomes `copysign(bound, p)` (so `±inf` becomes `±bound`), NaN stays NaN for the NaN checker,
/// and a bound of 0 disables the clamp. Every launch takes a policy and there is no `Default`,
/// so a launch cannot forget the clamp; the runtime turns the policy into the bound
/// ([`ClampPolicy::bound`]) and refuses to launch when it is unusable.
///
/// ```
/// use adamant_runtime::{ClampPolicy, Error};
///
/// // From the ISV's Q_ABS_REF: 100 × max(Q_ABS_REF, 1.0).
/// assert_eq!(ClampPolicy::from_isv(2.5).bound()?, 250.0);
/// assert_eq!(ClampPolicy::from_isv(0.3).bound()?, 100.0);
/// // An explicit bound, for a tool or a test.
/// assert_eq!(ClampPolicy::Fixed { bound: 1.5 }.bound()?, 1.5);
/// // No clamp, with the reason on record.
/// let offline = ClampPolicy::disabled("offline RL: outside the ISV-driven clamp's scope");
/// assert_eq!(offline.bound()?, 0.0);
///
/// // Refused: a launch with any of these enqueues nothing.
/// assert!(matches!(ClampPolicy::from_isv(f32::NAN).bound(), Err(Error::InvalidClamp { .. })));
/// assert!(matches!(ClampPolicy::from_isv(-1.0).bound(), Err(Error::InvalidClamp { .. })));
/// assert!(matches!(ClampPolicy::Fixed { bound: 0.0 }.bound(), Err(Error::InvalidClamp { .. })));
/// // A bound above the ceiling (1e18) cannot bite: refused, say `disabled(reason)` instead.
/// assert!(matches!(ClampPolicy::Fixed { bound: f32::MAX }.bound(), Err(Error::InvalidClamp { .. })));
/// assert!(matches!(ClampPolicy::from_isv(3e36).bound(), Err(Error::InvalidClamp { .. })));
/// assert!(matches!(ClampPolicy::disabled(" ").bound(), Err(Error::DisabledWithoutReason)));
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ClampPolicy {
    /// Derived from the ISV's `Q_ABS_REF`: [`BOUND_FACTOR`]` × max(Q_ABS_REF, 1.0)`.
    FromIsv {
        /// The ISV's current `Q_ABS_REF` (the running reference of `|Q|`); finite and `>= 0`.
        q_abs_ref: f32,
    },
    /// An explicit bound, for tools and tests that need one other than the ISV's.
    Fixed {
        /// The largest `|p|` allowed: `> 0` (0 is [`ClampPolicy::disabled`]'s) and at most
        /// [`BOUND_CEILING`] (a larger one cannot bite).
        bound: f32,
    },
    /// No clamp (bound 0.0), with the reason on record, as for the decision transformer.
    Disabled {
        /// Why this launch is not clamped (for logs and review); must not be blank.
        reason: &'static str,
    },
}

/// A `weight_clamp_max_abs` that passed [`ClampPolicy::validated`]: in `(0, BOUND_CEILING]`, or
/// `0.0` for a disabled clamp with a reason. It has no public constructor, and it is the only bound a
/// launch passes to the device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ValidBound(f32);

impl ValidBound {
    /// The bound as the device receives it, as the kernel's last argument (0.0: no clamp).
    pub fn value(self) -> f32 {
        self.0
    }
}

impl ClampPolicy {
    /// The bound of [`ClampPolicy::bound`], as the [`ValidBound`] every launch path takes.
    ///
    /// # Errors
    ///
    /// As [`ClampPolicy::bound`].
    pub fn validated(&self) -> Result<ValidBound> {
        self.bound().map(ValidBound)
    }

    /// [`ClampPolicy::FromIsv`]: the bound follows the ISV's `Q_ABS_REF` (checked when a launch
    /// asks for the bound, not here).
    pub fn from_isv(q_abs_ref: f32) -> ClampPolicy {
        ClampPolicy::FromIsv { q_abs_ref }
    }

    /// [`ClampPolicy::Disabled`]: the clamp switched off. `reason` is required, so every
    /// unclamped launch says why in the code; a blank one is refused at launch.
    pub fn disabled(reason: &'static str) -> ClampPolicy {
        ClampPolicy::Disabled { reason }
    }

    /// The `weight_clamp_max_abs` kernel argument this policy gives: in `(0, BOUND_CEILING]`,
    /// or exactly `0.0` for [`ClampPolicy::Disabled`]. A bound above [`BOUND_CEILING`] would
    /// never bite, a clamp switched off without saying so: it is refused, and a clamp meant to
    /// be off is [`ClampPolicy::disabled`] with its reason.
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidClamp`] for a `Q_ABS_REF` that is negative or not finite, one so large
    ///   that `100 × Q_ABS_REF` is above the ceiling, or a [`ClampPolicy::Fixed`] bound that is
    ///   not in `(0, BOUND_CEILING]`;
    /// - [`Error::DisabledWithoutReason`] for a blank reason.
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
                if bound > BOUND_CEILING {
                    return Err(Error::InvalidClamp {
                        what: "weight_clamp_max_abs (100 × Q_ABS_REF)",
                        value: bound,
                        requirement: "at most the ceiling 1e18 (Q_ABS_REF is too large: a bound \
                                      above the ceiling cannot bite)",
                    });
                }
                Ok(bound)
            }
            ClampPolicy::Fixed { bound } => {
                if bound > 0.0 && bound <= BOUND_CEILING {
                    Ok(bound)
                } else {
                    Err(Error::InvalidClamp {
                        what: "weight_clamp_max_abs",
                        value: bound,
                        requirement: "> 0 and at most the ceiling 1e18 (a larger bound cannot \
                                      bite; use ClampPolicy::disabled(reason) for no clamp)",
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
