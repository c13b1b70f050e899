//! A CPU reference of the check, written from the specification rather than from the kernel
//! (in f64, with none of the kernel's bit tricks), so the GPU tests compare the kernel against
//! an independent statement of what it must compute:
//!
//! - **non-finite**: some element is NaN, `+inf` or `-inf`;
//! - **over threshold** (max-abs slots only): some *finite* element has `|x| > threshold`, where
//!   `threshold = factor × max(Q_ABS_REF, 1.0)` rounded to f32 (the value the report shows);
//! - **max |x|**: NaN if any element is NaN, otherwise the largest `|x|` (`inf` included), 0 for
//!   an empty slot;
//! - **first bad**: the smallest index whose element sets either flag.
//!
//! Like [`crate::reference`] for the optimizers, it lives in this crate, beside the tests that
//! use it (`tests/cpu/nan_check_cpu.rs`, `tests/gpu/nan_check.rs`), not in the runtime: the runtime
//! never runs it, and an oracle kept apart from the code it checks cannot share that code.
use adamant_device::nan_check::{FLAG_NON_FINITE, FLAG_OVER_THRESHOLD};
use adamant_runtime::nan_check::{q_abs_ref_eff, Check, SlotResult};

/// What the specification says one slot's check yields.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReferenceSlot {
    pub flags: u32,
    pub max_abs: f64,
    pub first_bad: Option<u64>,
}

impl ReferenceSlot {
    /// Whether the kernel's decoded result says the same (NaN maxima compare equal).
    pub fn matches(&self, result: &SlotResult) -> bool {
        let max_agrees = if self.max_abs.is_nan() {
            result.max_abs.is_nan()
        } else {
            result.max_abs as f64 == self.max_abs
        };
        self.flags == result.flags && max_agrees && self.first_bad == result.first_bad
    }
}

/// The check of one slot's data.
pub fn check_slot(data: &[f32], check: Check, q_abs_ref: f32) -> ReferenceSlot {
    let threshold: Option<f64> = match check {
        Check::NonFinite => None,
        Check::MaxAbs { factor } => Some((factor * q_abs_ref_eff(q_abs_ref)) as f64),
    };
    let mut flags = 0;
    let mut first_bad = None;
    let mut max_abs = 0.0f64;
    let mut saw_nan = false;
    for (i, &x) in data.iter().enumerate() {
        let x = x as f64;
        let magnitude = x.abs();
        let bad = if x.is_nan() || x.is_infinite() {
            FLAG_NON_FINITE
        } else if threshold.is_some_and(|t| magnitude > t) {
            FLAG_OVER_THRESHOLD
        } else {
            0
        };
        if bad != 0 && first_bad.is_none() {
            first_bad = Some(i as u64);
        }
        flags |= bad;
        if x.is_nan() {
            saw_nan = true;
        } else if magnitude > max_abs {
            max_abs = magnitude;
        }
    }
    ReferenceSlot {
        flags,
        max_abs: if saw_nan { f64::NAN } else { max_abs },
        first_bad,
    }
}
