//! The eager host cost of a prepared launch (`Launch::prepare`, `Prepared::enqueue`) against the
//! driver's own `cuLaunchKernel` of the same entry with the same argument values: what the
//! runtime adds to a launch that is checked once and enqueued every step.
use std::ffi::c_void;

use adamant::device::abi::ArgValue;
use adamant::kernels::optimizers::attn_adam_kernel;
use adamant::runtime::{
    AdamHyper, Adamant, ClampPolicy, DeviceArray, ParamBuffer, QAbsRef, Records, StepBound,
    StepSpec, StepStates,
};
use anyhow::{Context, Result};
use cust::module::Module;
use cust::stream::Stream;

/// Enqueues of a prepared stepped `attn_adam_kernel` over 2^10 elements against the driver's
/// launch of the same entry with the same arguments (from `floor_module`, a second load of the
/// same PTX), in alternating batches ([`alternating_issue_us`]): µs per launch (prepared,
/// driver).
pub(crate) fn issue_us(rt: &Adamant, stream: &Stream, floor_module: &Module) -> Result<(f64, f64)> {
    let n = 1 << 10;
    let mut p = ParamBuffer::filled(n, 0.01)?;
    let g = DeviceArray::filled(n, 1e-3)?;
    let (mut m, mut v) = (DeviceArray::zeroed(n)?, DeviceArray::zeroed(n)?);
    let records = Records::single::<attn_adam_kernel::Entry>()?;
    let spec = StepSpec::adam(
        &AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.01, 1)?,
        StepBound::Policy(ClampPolicy::from_isv(1.0)),
    )?
    .with_kernel::<attn_adam_kernel::Entry>(attn_adam_kernel::Hyper {
        eps: 1e-8,
        weight_decay: 0.01,
    })?;
    let states = StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 })?;
    states.advance(rt, stream)?;
    let scalars = attn_adam_kernel::StepScalars {};
    let buffers = attn_adam_kernel::Buffers {
        p: &mut p,
        g: g.input(),
        m: &mut m,
        v: &mut v,
    };
    let mut prepared = rt
        .launch::<attn_adam_kernel::Entry>(stream)
        .stepped(&scalars, &states, 0)
        .prepare(buffers, &records)?;
    let info = prepared.info();
    let function = floor_module
        .get_function(info.kernel)
        .context("the prepared entry in the floor's module")?;
    let mut values: Vec<ArgValue> = prepared.arguments().to_vec();
    let params: Vec<*mut c_void> = values.iter_mut().map(ArgValue::param_pointer).collect();
    let shared = adamant::device::diagnostics::shared_bytes(attn_adam_kernel::BUFFERS);
    let times = alternating_issue_us(
        stream,
        || Ok(prepared.enqueue().map(|_| ())?),
        || {
            // SAFETY: the prepared launch's own arguments, whose buffers it holds alive; the
            // same launch it enqueues.
            unsafe { stream.launch(&function, info.grid, info.block, shared, &params)? };
            Ok(())
        },
    )?;
    drop(prepared);
    Ok(times)
}

/// Host issue cost in steady state: batches of 64 calls of `ours` back to back (no wait between:
/// the GPU keeps up at 2^10), each followed by a batch of `floor`, so that drift (clocks, other
/// tenants) falls on both; the medians over 30 batch pairs (one more first, to warm the paths
/// up) of the time per call, µs.
pub(crate) fn alternating_issue_us(
    stream: &Stream,
    mut ours: impl FnMut() -> Result<()>,
    mut floor: impl FnMut() -> Result<()>,
) -> Result<(f64, f64)> {
    const BATCH: usize = 64;
    let batch = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        stream.synchronize()?;
        let start = std::time::Instant::now();
        for _ in 0..BATCH {
            f()?;
        }
        Ok(start.elapsed().as_secs_f64() * 1e6 / BATCH as f64)
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..31 {
        a.push(batch(&mut ours)?);
        b.push(batch(&mut floor)?);
    }
    stream.synchronize()?;
    Ok((
        crate::median(a[1..].to_vec()),
        crate::median(b[1..].to_vec()),
    ))
}
