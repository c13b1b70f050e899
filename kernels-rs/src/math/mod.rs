//! Float functions for kernel bodies that `core` does not offer on the nvptx target (`f32::sqrt`
//! and `f32::mul_add` are std-only: they compile on the host and fail on the device). On the device
//! each lowers to one correctly rounded PTX instruction (`sqrt.rn.f32`, `fma.rn.f32`); on the host
//! it is std's, which is IEEE correctly rounded too, so CPU tests and the GPU agree bit for bit
//! (NaN payloads aside: the GPU returns its canonical NaN). Import them with
//! `use adamant_kernels::prelude::*;`. `f32::abs`, `f32::copysign` and comparisons are in `core`
//! and work on both targets as they are.

/// The square root, correctly rounded (`sqrt.rn.f32`); NaN for a negative `x`.
#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::sqrtf32(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.sqrt()
    }
}

/// `a * b + c` with one rounding (`fma.rn.f32`). Not the same as `a * b + c` written out, which
/// rounds twice; the kernels never contract on their own.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        core::intrinsics::fmaf32(a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}

/// The sign of `x` as `-1.0`, `0.0` or `1.0`, with `sign(±0) = 0` (unlike `f32::signum`, which
/// gives `±1` for `±0`, as the sign-based optimizers want: a zero gradient moves nothing) and
/// NaN for NaN (so a NaN gradient stays visible).
#[inline(always)]
#[allow(clippy::eq_op)]
pub fn sign(x: f32) -> f32 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else if x == 0.0 {
        0.0
    } else {
        x
    }
}
