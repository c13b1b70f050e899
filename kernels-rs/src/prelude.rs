//! What a kernel author needs in scope: `use adamant_kernels::prelude::*;`.
//!
//! - [`optimizer_kernel`], [`kernel_entry`]: the kernel macros;
//! - [`sqrt`], [`fma`], [`sign`]: device-safe float functions ([`crate::math`]), since `f32::sqrt`
//!   and `f32::mul_add` compile on the host only;
//! - [`weight_clamp`]: the clamp every optimizer kernel ends in (applied by the macro; exported
//!   for host-side tests);
//! - the Adam building blocks of [`crate::adam`].
pub use crate::adam::{adam_step, amsgrad_step, clip_gradient, l2_decay, AdamScalars};
pub use crate::clamp::weight_clamp;
pub use crate::math::{fma, sign, sqrt};
pub use crate::{kernel_entry, optimizer_kernel};
