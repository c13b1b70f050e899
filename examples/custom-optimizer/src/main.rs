//! The downstream crate on a GPU: loads its module beside adamant's, launches Lion and SGD with
//! momentum through the runtime's validated generic launch (`Adamant::launch`) for 20
//! steps on 2^20 elements with the clamp engaged, and compares every element with the f64
//! reference after the last step. Exits non-zero on a mismatch. With a folder argument it also
//! writes the final SGD weights there (`sgd_p.f32`, raw little-endian) for
//! `bench/custom_optimizer_torch.py`, which replays the same run with `torch.optim.SGD`.
use std::process::ExitCode;

use adamant_runtime::{Adamant, ClampPolicy, Records};
use adamant_runtime::{DeviceArray, ParamBuffer};
use anyhow::{Context, Result};
use custom_optimizer::{lion_kernel, reference, sgd_momentum_kernel};

const N: usize = 1 << 20;
const STEPS: usize = 20;
const BOUND: f32 = 1.5;
/// Allowed error, in f32 epsilons of the element's error scale: the sum over the steps of the
/// magnitudes of the terms each step adds (as adamant's own GPU tests measure it).
const UNITS: f64 = 16.0;

fn init(i: usize) -> f32 {
    ((i * 7919 % 4001) as f32 / 1000.0) - 2.0 // in [-2, 2]: some weights start past the bound
}

fn grad(i: usize, t: usize) -> f32 {
    (((i * 31 + t * 17) % 997) as f32 / 997.0 - 0.45) * 0.1
}

/// Step `t`'s gradient, uploaded into `g`; returns the host copy for the reference.
fn upload_grad(g: &mut DeviceArray, t: usize) -> Result<Vec<f32>> {
    let gt: Vec<f32> = (0..N).map(|i| grad(i, t)).collect();
    g.upload(&gt)?;
    Ok(gt)
}

/// The largest error of the GPU weights against the reference, in ε of each element's error
/// scale (the elements marked in `skip` left out), and how many weights lie past the bound.
fn judge(gpu: &[f32], reference: &[f64], scale: &[f64], skip: &[bool]) -> (f64, usize) {
    let worst = (0..gpu.len())
        .filter(|&i| !skip[i])
        .map(|i| (gpu[i] as f64 - reference[i]).abs() / (f32::EPSILON as f64 * scale[i]))
        .fold(0.0f64, f64::max);
    (worst, gpu.iter().filter(|x| x.abs() > BOUND).count())
}

fn main() -> Result<ExitCode> {
    let mut rt = Adamant::new().context("the downstream example runs on a CUDA GPU")?;
    custom_optimizer::load(&mut rt)?;
    let policy = ClampPolicy::Fixed { bound: BOUND };
    let host_p: Vec<f32> = (0..N).map(init).collect();
    let mut failures = 0;

    // Lion.
    let (lr, beta1, beta2, wd) = (1e-2f32, 0.9f32, 0.99f32, 0.1f32);
    let mut p = ParamBuffer::from_host(&host_p)?;
    let mut g = DeviceArray::zeroed(N)?;
    let mut m = DeviceArray::zeroed(N)?;
    let records = Records::single::<lion_kernel::Entry>()?;
    let mut rp: Vec<f64> = host_p.iter().map(|&x| x as f64).collect();
    let mut rm = vec![0.0f64; N];
    // Elements whose Lion direction was ever decided by rounding (c within 1e-6 of 0).
    let mut ambiguous = vec![false; N];
    let mut scale = vec![0.0f64; N];
    for t in 0..STEPS {
        let gt = upload_grad(&mut g, t)?;
        let buffers = lion_kernel::Buffers {
            p: &mut p,
            g: g.input(),
            m: &mut m,
        };
        let scalars = lion_kernel::Scalars {
            lr,
            beta1,
            beta2,
            weight_decay: wd,
        };
        rt.launch::<lion_kernel::Entry>(rt.stream())
            .plain(&scalars, policy)
            .buffers(&buffers, &records)?;
        for i in 0..N {
            let c = beta1 as f64 * rm[i] + (1.0 - beta1 as f64) * gt[i] as f64;
            ambiguous[i] |= c.abs() < 1e-6;
            scale[i] += rp[i].abs() * (1.0 + lr as f64 * wd as f64) + lr as f64;
            (rp[i], rm[i]) = reference::lion(
                rp[i],
                gt[i] as f64,
                rm[i],
                lr as f64,
                beta1 as f64,
                beta2 as f64,
                wd as f64,
                BOUND as f64,
            );
        }
    }
    rt.synchronize()?;
    let gp = p.download()?;
    let (worst, over) = judge(&gp, &rp, &scale, &ambiguous);
    let skipped = ambiguous.iter().filter(|&&a| a).count();
    println!(
        "lion_kernel on {}: {N} elements, {STEPS} steps, bound {BOUND}: max error {worst:.2} ε·scale \
         ({skipped} elements with a rounding-decided sign skipped), {over} weights past the bound",
        rt.device_name()
    );
    failures += usize::from(worst > UNITS || over > 0);

    // SGD with momentum.
    let (lr, momentum, wd) = (1e-2f32, 0.9f32, 1e-2f32);
    let mut p = ParamBuffer::from_host(&host_p)?;
    let mut b = DeviceArray::zeroed(N)?;
    let records = Records::single::<sgd_momentum_kernel::Entry>()?;
    let mut rp: Vec<f64> = host_p.iter().map(|&x| x as f64).collect();
    let mut rb = vec![0.0f64; N];
    let mut scale = vec![0.0f64; N];
    let mut bscale = vec![0.0f64; N];
    for t in 0..STEPS {
        let gt = upload_grad(&mut g, t)?;
        let buffers = sgd_momentum_kernel::Buffers {
            p: &mut p,
            g: g.input(),
            momentum_buffer: &mut b,
        };
        let scalars = sgd_momentum_kernel::Scalars {
            lr,
            momentum,
            weight_decay: wd,
        };
        rt.launch::<sgd_momentum_kernel::Entry>(rt.stream())
            .plain(&scalars, policy)
            .buffers(&buffers, &records)?;
        for i in 0..N {
            // The buffer carries the errors of all its past terms (`bscale`), and each reaches p
            // times lr, beside the step's own terms.
            bscale[i] +=
                momentum as f64 * rb[i].abs() + gt[i].abs() as f64 + wd as f64 * rp[i].abs();
            scale[i] += rp[i].abs() + lr as f64 * (rb[i].abs() + bscale[i]);
            (rp[i], rb[i]) = reference::sgd_momentum(
                rp[i],
                gt[i] as f64,
                rb[i],
                lr as f64,
                momentum as f64,
                wd as f64,
                BOUND as f64,
            );
        }
    }
    rt.synchronize()?;
    let gp = p.download()?;
    let (worst, over) = judge(&gp, &rp, &scale, &vec![false; N]);
    if let Some(dir) = std::env::args().nth(1) {
        let bytes: Vec<u8> = gp.iter().flat_map(|x| x.to_le_bytes()).collect();
        std::fs::write(std::path::Path::new(&dir).join("sgd_p.f32"), bytes)?;
    }
    println!(
        "sgd_momentum_kernel: {N} elements, {STEPS} steps, bound {BOUND}: max error {worst:.2} \
         ε·scale, {over} weights past the bound"
    );
    failures += usize::from(worst > UNITS || over > 0);
    Ok(if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
