//! adamant's fused set: every optimizer kernel of the crate as one entry's rules, so a step whose
//! groups use different rules and hyperparameters (the RL session's eight groups: AdamW, Adam
//! with L2 decay, clipped Adam, AMSGrad, and a target network's soft update) is one launch.
//! Each tensor's rule, step record (its group's hyperparameters, step and bound) and clamp scale
//! come from the launch's tables; the branch of each rule is that kernel's own generated code.
use adamant_device::fused_optimizer;

use crate::optimizers::{
    attn_adam_kernel, curiosity_adam_step, dqn_adam_update_kernel, iql_adam_kernel, iqn_adam_kernel,
};
use crate::soft_update::soft_update_kernel;

fused_optimizer! {
    /// Every optimizer kernel of adamant, in one launch: the rule table's `r` is the `r`-th of
    /// these.
    pub adamant_fused_step = [
        dqn_adam_update_kernel,
        iqn_adam_kernel,
        iql_adam_kernel,
        attn_adam_kernel,
        curiosity_adam_step,
        soft_update_kernel,
    ];
}
