//! The hyperparameters of the seed's training session, one set per kind of group: what
//! [`TrainingGroups`](crate::TrainingGroups) and [`TrainingSession`](crate::TrainingSession) are
//! both made with, apart from either so that neither depends on the other for them.
#[cfg(doc)]
use adamant_runtime::Error;
use adamant_runtime::{AdamHyper, Result};

#[cfg(doc)]
use crate::TrainingSession;

use crate::launchers::{validate_curiosity_hyper, validate_grad_clip};

/// The hyperparameters of a [`TrainingSession`]: lr and betas start the step-state records (the
/// lr changes with [`TrainingSession::set_lr`]); eps, the weight decays and IQL's gradient clip
/// are fixed for the run. Each `step` is the first step's `t` (1 for a fresh run).
#[derive(Clone, Copy, Debug)]
pub struct SessionConfig {
    /// For the DQN trunk and heads.
    pub dqn: AdamHyper,
    /// For the IQN head.
    pub iqn: AdamHyper,
    /// For IQL.
    pub iql: AdamHyper,
    /// IQL's element-wise gradient clip (0 = off).
    pub iql_grad_clip: f32,
    /// For GpuAttention, GpuTlob and the decision transformer.
    pub attention: AdamHyper,
    /// For curiosity; its `weight_decay` must be 0.
    pub curiosity: AdamHyper,
}

impl SessionConfig {
    /// Checks every group's hyperparameters: each [`AdamHyper::validate`], curiosity's
    /// `weight_decay` 0 and IQL's `grad_clip >= 0`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidHyper`] naming the first value out of range.
    pub fn validate(&self) -> Result<()> {
        for hyper in [&self.dqn, &self.iqn, &self.iql, &self.attention] {
            hyper.validate()?;
        }
        validate_curiosity_hyper(&self.curiosity)?;
        validate_grad_clip(self.iql_grad_clip)
    }

    /// Every group with the same hyperparameters (curiosity without weight decay), no gradient
    /// clip.
    pub fn uniform(hyper: AdamHyper) -> SessionConfig {
        SessionConfig {
            dqn: hyper,
            iqn: hyper,
            iql: hyper,
            iql_grad_clip: 0.0,
            attention: hyper,
            curiosity: AdamHyper {
                weight_decay: 0.0,
                ..hyper
            },
        }
    }
}
