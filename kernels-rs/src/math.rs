//! Float functions the kernels need that `core` does not offer on every target.
//! On the device they lower to single PTX instructions (`sqrt.rn.f32`); on the host they are
//! std's, which are IEEE correctly rounded too, so CPU and GPU results agree bit for bit.

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
