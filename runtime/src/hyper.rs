//! Adam hyperparameters that validate themselves, and the per-launch bias corrections.
use crate::error::{Error, Result};

/// The hyperparameters shared by the five Adam kernels. Construct with [`AdamHyper::new`] or
/// check a literal with [`AdamHyper::validate`]; every launch validates again.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamHyper {
    pub lr: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub eps: f32,
    /// Decoupled (AdamW) or L2 decay, depending on the kernel; ignored by curiosity.
    pub weight_decay: f32,
    /// The step number `t`, starting at 1.
    pub step: u64,
}

impl AdamHyper {
    pub fn new(
        lr: f32,
        beta1: f32,
        beta2: f32,
        eps: f32,
        weight_decay: f32,
        step: u64,
    ) -> Result<Self> {
        let hyper = AdamHyper {
            lr,
            beta1,
            beta2,
            eps,
            weight_decay,
            step,
        };
        hyper.validate()?;
        Ok(hyper)
    }

    /// PyTorch's defaults (lr 1e-3, betas (0.9, 0.999), eps 1e-8), no decay, at `step`.
    pub fn pytorch_defaults(step: u64) -> Result<Self> {
        AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.0, step)
    }

    pub fn validate(&self) -> Result<()> {
        let bad = |field, value: f32, requirement| Error::InvalidHyper {
            field,
            value: value as f64,
            requirement,
        };
        if !(self.lr.is_finite() && self.lr >= 0.0) {
            return Err(bad("lr", self.lr, "finite and >= 0"));
        }
        for (field, beta) in [("beta1", self.beta1), ("beta2", self.beta2)] {
            if !(0.0..1.0).contains(&beta) {
                return Err(bad(field, beta, "in [0, 1)"));
            }
        }
        if !(self.eps.is_finite() && self.eps > 0.0) {
            return Err(bad("eps", self.eps, "finite and > 0"));
        }
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return Err(bad("weight_decay", self.weight_decay, "finite and >= 0"));
        }
        if self.step == 0 {
            return Err(Error::InvalidHyper {
                field: "step",
                value: 0.0,
                requirement: ">= 1",
            });
        }
        Ok(())
    }

    /// `(1 − β1^t, 1 − β2^t)`, computed in f64 and rounded once to f32 (at large `t` and β close
    /// to 1, computing them in f32 would lose most digits).
    pub fn bias_corrections(&self) -> (f32, f32) {
        let t = self.step.min(i32::MAX as u64) as i32;
        let bc = |beta: f32| (1.0 - (beta as f64).powi(t)) as f32;
        (bc(self.beta1), bc(self.beta2))
    }
}

/// IQL's element-wise gradient clip: `0.0` is off, otherwise finite and > 0.
pub(crate) fn validate_grad_clip(grad_clip: f32) -> Result<()> {
    if grad_clip.is_finite() && grad_clip >= 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidHyper {
            field: "grad_clip",
            value: grad_clip as f64,
            requirement: "finite and >= 0 (0 = off)",
        })
    }
}
