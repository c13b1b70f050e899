//! bf16 weights kept exact by a companion buffer (issue 26) at 2^28, cold, beside the copy
//! bandwidth in the same run: `adamw_bf16_master` (the f32 master read and written, the bf16 copy
//! written: 28 B an element with bf16 gradients and f32 moments) and `adamw_bf16_remainder` (the
//! bf16 weight and its 16-bit remainder read and written: 26 B).
use adamant::kernels::half_weights::{adamw_bf16_master, adamw_bf16_remainder};
use adamant::runtime::{
    adam_scalars, AdamHyper, Adamant, ClampPolicy, DeviceRegion, Records, Storage,
};
use anyhow::Result;
use cust::memory::DeviceBuffer;
use serde_json::{json, Value};

use super::Timer;

/// The master path's bytes: master read and written (4 + 4), bf16 copy written (2), gradient
/// read (2), f32 moments read and written (16).
const MASTER_BYTES: usize = 28;

/// The remainder path's bytes: weight and remainder read and written (4 + 4), gradient read
/// (2), f32 moments read and written (16).
const REMAINDER_BYTES: usize = 26;

pub(crate) fn exact_half(
    rt: &Adamant,
    timer: &mut Timer,
    out: &mut Value,
    copy_gbps: f64,
) -> Result<()> {
    let n = 1usize << 28;
    let p = DeviceBuffer::from_slice(&vec![0x3e80u16; n])?; // 0.25 in bf16
    let companion16 = DeviceBuffer::from_slice(&vec![0x1234u16; n])?; // a remainder
    let master = DeviceBuffer::from_slice(&vec![0.25f32; n])?;
    let g = DeviceBuffer::from_slice(&vec![0x3c24u16; n])?; // 0.01 in bf16
    let m = DeviceBuffer::from_slice(&vec![0.001f32; n])?;
    let v = DeviceBuffer::from_slice(&vec![0.0001f32; n])?;
    let region = |ptr: u64, storage| DeviceRegion::of(ptr, n, storage);
    let (rp, rg) = (
        region(p.as_device_ptr().as_raw(), Storage::Bf16)?,
        region(g.as_device_ptr().as_raw(), Storage::Bf16)?,
    );
    let (rm, rv) = (
        region(m.as_device_ptr().as_raw(), Storage::F32)?,
        region(v.as_device_ptr().as_raw(), Storage::F32)?,
    );
    let hyper = AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.01, 3)?;

    let buffers = adamw_bf16_master::Buffers {
        p: rp,
        g: rg,
        m: rm,
        v: rv,
        p_master: region(master.as_device_ptr().as_raw(), Storage::F32)?,
    };
    let scalars = adam_scalars!(adamw_bf16_master, hyper, weight_decay: 0.01)?;
    let records = Records::single::<adamw_bf16_master::Entry>()?;
    let master_us = timer.median_us(true, |s| {
        // SAFETY: every allocation outlives every launch (the timer synchronises).
        unsafe {
            rt.launch::<adamw_bf16_master::Entry>(s)
                .plain(&scalars, ClampPolicy::from_isv(1.0))
                .raw_buffers(&buffers, &records)?
        };
        Ok(())
    })?;
    let master_gbps = (MASTER_BYTES * n) as f64 / master_us / 1e3;
    println!(
        "adamw_bf16_master 2^28 cold: {master_us:.1} µs, {master_gbps:.0} GB/s at {MASTER_BYTES} \
         B/element, {:.3}× copy",
        master_gbps / copy_gbps
    );

    let buffers = adamw_bf16_remainder::Buffers {
        p: rp,
        g: rg,
        m: rm,
        v: rv,
        p_remainder: region(companion16.as_device_ptr().as_raw(), Storage::Bf16Remainder)?,
    };
    let scalars = adam_scalars!(adamw_bf16_remainder, hyper, weight_decay: 0.01)?;
    let records = Records::single::<adamw_bf16_remainder::Entry>()?;
    let remainder_us = timer.median_us(true, |s| {
        // SAFETY: as above.
        unsafe {
            rt.launch::<adamw_bf16_remainder::Entry>(s)
                .plain(&scalars, ClampPolicy::from_isv(1.0))
                .raw_buffers(&buffers, &records)?
        };
        Ok(())
    })?;
    let remainder_gbps = (REMAINDER_BYTES * n) as f64 / remainder_us / 1e3;
    println!(
        "adamw_bf16_remainder 2^28 cold: {remainder_us:.1} µs, {remainder_gbps:.0} GB/s at \
         {REMAINDER_BYTES} B/element, {:.3}× copy",
        remainder_gbps / copy_gbps
    );
    out["exact_half"] = json!({
        "elements": n,
        "master_bytes_per_element": MASTER_BYTES,
        "remainder_bytes_per_element": REMAINDER_BYTES,
        "adamw_bf16_master_cold_us": master_us,
        "adamw_bf16_remainder_cold_us": remainder_us,
    });
    Ok(())
}
