//! What a kernel author needs in scope: `use adamant_device::prelude::*;`.
//!
//! - [`optimizer_kernel`], [`kernel_entry`]: the kernel macros;
//! - [`sqrt`], [`fma`], [`rsqrt`], [`exp`], [`ln`], [`pow`], [`abs`], [`min`], [`max`],
//!   [`sign`]: device float functions ([`crate::math`], with their accuracy), since `f32::sqrt`,
//!   `mul_add`, `exp`, `ln`, `powf` compile on the host only and `f32::min`/`max` drop NaN;
//! - [`weight_clamp`]: the clamp every optimizer kernel ends in (applied by the macro; exported
//!   for host-side tests);
//! - [`scalar_group`] and the scalar groups adamant's kernels share ([`crate::scalar_groups`]);
//! - the Adam building blocks of [`crate::adam`].
pub use crate::adam::{adam_step, amsgrad_step, clip_gradient, l2_decay, AdamScalars};
pub use crate::clamp::weight_clamp;
pub use crate::math::{abs, exp, fma, ln, max, min, pow, rsqrt, sign, sqrt};
pub use crate::scalar_groups::{Adam, BiasCorrections, WeightDecay};
pub use crate::{kernel_entry, optimizer_kernel, scalar_group};
