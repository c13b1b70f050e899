//! The 16-bit weights of issue 26 at 2^28, cold: `adamw_bf16`, `adamw_bf16_sr` (rounded
//! stochastically) and `adamw_f16` (16-bit weights and gradients, f32 moments: 22 B an element,
//! read + written), and `adamw_bf16_sr_moments` (bf16 moments too, all stochastic: 14 B),
//! against the copy bandwidth in the same run.
use adamant::kernels::half_weights::{adamw_bf16, adamw_bf16_sr, adamw_bf16_sr_moments, adamw_f16};
use adamant::runtime::{
    adam_scalars, AdamHyper, Adamant, ClampPolicy, DeviceRegion, Records, Storage,
};
use anyhow::Result;
use cust::memory::{CopyDestination, DeviceBuffer};
use serde_json::{json, Value};

use super::Timer;

/// Bytes an element moves: the weight read and written (2 + 2), the gradient read (2), the two
/// f32 moments read and written (8 + 8).
const BYTES: usize = 22;

/// The 14 B path's bytes: weight read and written (2 + 2), gradient read (2), the two bf16
/// moments read and written (4 + 4).
const LEAN_BYTES: usize = 14;

pub(crate) fn half(rt: &Adamant, timer: &mut Timer, out: &mut Value, copy_gbps: f64) -> Result<()> {
    let n = 1usize << 28;
    let mut p = DeviceBuffer::from_slice(&vec![0x3e80u16; n])?; // 0.25 in bf16
    let mut g = DeviceBuffer::from_slice(&vec![0x3c24u16; n])?; // 0.01 in bf16
    let m = DeviceBuffer::from_slice(&vec![0.001f32; n])?;
    let v = DeviceBuffer::from_slice(&vec![0.0001f32; n])?;
    let region = |ptr: u64, storage| DeviceRegion::of(ptr, n, storage);
    let buffers = adamw_bf16::Buffers {
        p: region(p.as_device_ptr().as_raw(), Storage::Bf16)?,
        g: region(g.as_device_ptr().as_raw(), Storage::Bf16)?,
        m: region(m.as_device_ptr().as_raw(), Storage::F32)?,
        v: region(v.as_device_ptr().as_raw(), Storage::F32)?,
    };
    let hyper = AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.01, 3)?;
    let scalars = adam_scalars!(adamw_bf16, hyper, weight_decay: 0.01)?;
    let records = Records::single::<adamw_bf16::Entry>()?;
    let cold_us = timer.median_us(true, |s| {
        // SAFETY: the four allocations outlive every launch (the timer synchronises).
        unsafe {
            rt.launch::<adamw_bf16::Entry>(s)
                .plain(&scalars, ClampPolicy::from_isv(1.0))
                .raw_buffers(&buffers, &records)?
        };
        Ok(())
    })?;
    let gbps = (BYTES * n) as f64 / cold_us / 1e3;
    println!(
        "adamw_bf16 2^28 cold: {cold_us:.1} µs, {gbps:.0} GB/s at {BYTES} B/element, {:.3}× copy",
        gbps / copy_gbps
    );
    // The same buffers, rounded stochastically (a word per element hashed on the device).
    let sr_buffers = adamw_bf16_sr::Buffers {
        p: buffers.p,
        g: buffers.g,
        m: buffers.m,
        v: buffers.v,
    };
    let sr_scalars =
        adam_scalars!(adamw_bf16_sr, hyper, weight_decay: 0.01, step: 3, rounding_seed: 2026)?;
    let sr_records = Records::single::<adamw_bf16_sr::Entry>()?;
    let sr_us = timer.median_us(true, |s| {
        // SAFETY: as above.
        unsafe {
            rt.launch::<adamw_bf16_sr::Entry>(s)
                .plain(&sr_scalars, ClampPolicy::from_isv(1.0))
                .raw_buffers(&sr_buffers, &sr_records)?
        };
        Ok(())
    })?;
    let sr_gbps = (BYTES * n) as f64 / sr_us / 1e3;
    println!(
        "adamw_bf16_sr 2^28 cold: {sr_us:.1} µs, {sr_gbps:.0} GB/s, {:.3}× copy",
        sr_gbps / copy_gbps
    );
    // The 14 B path: the same weights and gradients, bf16 moments (0.001 and 0.0001).
    let m16 = DeviceBuffer::from_slice(&vec![0x3a83u16; n])?;
    let v16 = DeviceBuffer::from_slice(&vec![0x38d1u16; n])?;
    let lean_buffers = adamw_bf16_sr_moments::Buffers {
        p: buffers.p,
        g: buffers.g,
        m: region(m16.as_device_ptr().as_raw(), Storage::Bf16)?,
        v: region(v16.as_device_ptr().as_raw(), Storage::Bf16)?,
    };
    let lean_scalars = adam_scalars!(
        adamw_bf16_sr_moments, hyper, weight_decay: 0.01, step: 3, rounding_seed: 2026
    )?;
    let lean_records = Records::single::<adamw_bf16_sr_moments::Entry>()?;
    let lean_us = timer.median_us(true, |s| {
        // SAFETY: as above.
        unsafe {
            rt.launch::<adamw_bf16_sr_moments::Entry>(s)
                .plain(&lean_scalars, ClampPolicy::from_isv(1.0))
                .raw_buffers(&lean_buffers, &lean_records)?
        };
        Ok(())
    })?;
    let lean_gbps = (LEAN_BYTES * n) as f64 / lean_us / 1e3;
    println!(
        "adamw_bf16_sr_moments 2^28 cold: {lean_us:.1} µs, {lean_gbps:.0} GB/s at {LEAN_BYTES} \
         B/element, {:.3}× copy",
        lean_gbps / copy_gbps
    );
    drop((m16, v16));
    // The same buffers as f16 (0.25 and 0.01 in f16 bits).
    p.copy_from(&vec![0x3400u16; n][..])?;
    g.copy_from(&vec![0x211fu16; n][..])?;
    let f16_buffers = adamw_f16::Buffers {
        p: region(p.as_device_ptr().as_raw(), Storage::F16)?,
        g: region(g.as_device_ptr().as_raw(), Storage::F16)?,
        m: buffers.m,
        v: buffers.v,
    };
    let f16_scalars = adam_scalars!(adamw_f16, hyper, weight_decay: 0.01)?;
    let f16_records = Records::single::<adamw_f16::Entry>()?;
    let f16_us = timer.median_us(true, |s| {
        // SAFETY: as above.
        unsafe {
            rt.launch::<adamw_f16::Entry>(s)
                .plain(&f16_scalars, ClampPolicy::from_isv(1.0))
                .raw_buffers(&f16_buffers, &f16_records)?
        };
        Ok(())
    })?;
    println!("adamw_f16 2^28 cold: {f16_us:.1} µs");
    out["half"] = json!({
        "elements": n,
        "bytes_per_element": BYTES,
        "adamw_bf16_cold_us": cold_us,
        "adamw_f16_cold_us": f16_us,
        "adamw_bf16_sr_cold_us": sr_us,
        "adamw_bf16_sr_moments_cold_us": lean_us,
        "lean_bytes_per_element": LEAN_BYTES,
        "gbps": gbps,
        "vs_copy": gbps / copy_gbps,
    });
    Ok(())
}
