//! A real training run with the example's per-step optimizers, captured: a small MLP (8 inputs,
//! 32 tanh units, 1 output) fitted to 256 samples by NAdam and by centered RMSprop for 1500
//! steps. Every step is one replay of a graph (the record's advance, NAdam's schedule, the
//! stepped update); the gradient is computed on the host in f64 from the device's weights and
//! uploaded between replays, and at step 750 the learning rate and the weight decay change
//! between replays (`StepStates::set_lr`, `set_scalar`). For each optimizer `NAME` (`nadam`,
//! `rmsprop`) it writes, little-endian: `DIR/NAME_loss.f64`, each step's loss before the update;
//! `DIR/NAME_grads.f32`, each step's gradient as uploaded (STEPS × PARAMS); and
//! `DIR/NAME_params.f32`, the weights before the first step and after every step
//! ((STEPS + 1) × PARAMS). `bench/custom_optimizer_train_torch.py` replays the run with
//! `torch.optim.NAdam` and `torch.optim.RMSprop(centered=True)` twice: closed loop (torch's own
//! gradients, losses compared) and open loop (fed these gradients, weights compared with ours
//! and with an f64 reference). Usage: `train DIR`.
use std::path::PathBuf;

use adamant_runtime::cust::stream::Stream;
use adamant_runtime::{
    AdamHyper, Adamant, ClampPolicy, DeviceArray, ParamBuffer, QAbsRef, Records, StepBound,
    StepSpec, StepStates,
};
use anyhow::{Context, Result};
use custom_optimizer::{nadam_kernel, rmsprop_centered_kernel};

const IN: usize = 8;
const HIDDEN: usize = 32;
const SAMPLES: usize = 256;
/// `W1` (HIDDEN × IN, row-major), `b1`, `W2`, `b2`.
const PARAMS: usize = HIDDEN * IN + HIDDEN + HIDDEN + 1;
const STEPS: usize = 1500;
/// Where the learning rate and the weight decay change (between two replays).
const CHANGE_AT: usize = 750;
/// A bound no weight of this run comes near: the clamp is there, and never acts.
const BOUND: f32 = 100.0;

fn init(i: usize) -> f32 {
    (((i * 7919) % 4001) as f32 / 1000.0 - 2.0) * 0.25
}

fn sample(s: usize) -> ([f64; IN], f64) {
    let mut x = [0.0; IN];
    for (j, v) in x.iter_mut().enumerate() {
        *v = (((s * 13 + j * 7) % 101) as f64 / 101.0 - 0.5) * 2.0;
    }
    let y = (0.5 * x.iter().sum::<f64>()).sin();
    (x, y)
}

/// The mean squared error of the MLP with parameters `p` and its gradient (rounded to f32), in
/// f64 from `p`'s f32 values.
fn loss_and_grad(p: &[f32]) -> (f64, Vec<f32>) {
    let w = |i: usize| p[i] as f64;
    let (w1, b1, w2, b2) = (
        0,
        HIDDEN * IN,
        HIDDEN * IN + HIDDEN,
        HIDDEN * IN + 2 * HIDDEN,
    );
    let mut g = vec![0.0f64; PARAMS];
    let mut loss = 0.0;
    for s in 0..SAMPLES {
        let (x, y) = sample(s);
        let h: Vec<f64> = (0..HIDDEN)
            .map(|k| {
                let z: f64 = (0..IN).map(|j| w(w1 + k * IN + j) * x[j]).sum::<f64>() + w(b1 + k);
                z.tanh()
            })
            .collect();
        let out = (0..HIDDEN).map(|k| w(w2 + k) * h[k]).sum::<f64>() + w(b2);
        let err = out - y;
        loss += err * err / SAMPLES as f64;
        let d_out = 2.0 * err / SAMPLES as f64;
        g[b2] += d_out;
        for k in 0..HIDDEN {
            g[w2 + k] += d_out * h[k];
            let dz = d_out * w(w2 + k) * (1.0 - h[k] * h[k]);
            g[b1 + k] += dz;
            for j in 0..IN {
                g[w1 + k * IN + j] += dz * x[j];
            }
        }
    }
    (loss, g.into_iter().map(|v| v as f32).collect())
}

/// What one run leaves for the PyTorch comparison.
struct Trace {
    /// Each step's loss, before the update.
    losses: Vec<f64>,
    /// Each step's gradient, as uploaded: STEPS × PARAMS.
    grads: Vec<f32>,
    /// The weights before the first step and after every step: (STEPS + 1) × PARAMS.
    params: Vec<f32>,
}

/// One optimizer's run: `launch` is its stepped update of `p`, `change` what happens at
/// [`CHANGE_AT`].
fn run(
    rt: &Adamant,
    states: &StepStates,
    p: &mut ParamBuffer,
    g: &mut DeviceArray,
    launch: &mut dyn FnMut(&Stream, &mut ParamBuffer, &DeviceArray) -> adamant_runtime::Result<()>,
    change: &dyn Fn(&StepStates) -> adamant_runtime::Result<()>,
) -> Result<Trace> {
    let mut losses = Vec::with_capacity(STEPS);
    let mut grads = Vec::with_capacity(STEPS * PARAMS);
    let mut host = p.download()?;
    let mut params = host.clone();
    let graph = {
        let (p, g) = (&mut *p, &*g);
        rt.capture(vec![Box::new(|s: &Stream| {
            states.advance(rt, s)?;
            launch(s, p, g)
        })])?
    };
    for step in 0..STEPS {
        let (loss, grad) = loss_and_grad(&host);
        losses.push(loss);
        g.upload(&grad)?;
        grads.extend_from_slice(&grad);
        if step == CHANGE_AT {
            change(states)?;
        }
        graph.launch(rt.stream())?;
        rt.synchronize()?;
        host = p.download()?;
        params.extend_from_slice(&host);
    }
    anyhow::ensure!(
        host.iter().all(|x| x.is_finite() && x.abs() < BOUND / 2.0),
        "weights left the region this run stays in"
    );
    Ok(Trace {
        losses,
        grads,
        params,
    })
}

/// Writes `trace` as `DIR/NAME_loss.f64`, `DIR/NAME_grads.f32` and `DIR/NAME_params.f32`.
fn write(dir: &std::path::Path, name: &str, trace: &Trace) -> Result<()> {
    let files: [(String, Vec<u8>); 3] = [
        (
            format!("{name}_loss.f64"),
            trace.losses.iter().flat_map(|l| l.to_le_bytes()).collect(),
        ),
        (
            format!("{name}_grads.f32"),
            trace.grads.iter().flat_map(|l| l.to_le_bytes()).collect(),
        ),
        (
            format!("{name}_params.f32"),
            trace.params.iter().flat_map(|l| l.to_le_bytes()).collect(),
        ),
    ];
    for (file, bytes) in files {
        std::fs::write(dir.join(&file), bytes).with_context(|| format!("writing {file}"))?;
    }
    Ok(())
}

fn main() -> Result<()> {
    let dir: PathBuf = std::env::args().nth(1).context("usage: train DIR")?.into();
    std::fs::create_dir_all(&dir)?;
    let mut rt = Adamant::new().context("the training run needs a CUDA GPU")?;
    custom_optimizer::load(&mut rt)?;
    let host: Vec<f32> = (0..PARAMS).map(init).collect();
    let policy = StepBound::Policy(ClampPolicy::Fixed { bound: BOUND });

    // NAdam: torch's defaults but lr 2e-3 → 1e-3 at step 750, weight decay 1e-4 → 1e-3.
    let spec = StepSpec::adam(&AdamHyper::new(2e-3, 0.9, 0.999, 1e-8, 0.0, 1)?, policy)?
        .with_kernel::<nadam_kernel::Entry>(nadam_kernel::Hyper {
        beta1: 0.9,
        eps: 1e-8,
        weight_decay: 1e-4,
        momentum_decay: 4e-3,
    })?;
    let states = StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 })?;
    let (mut p, mut g) = (ParamBuffer::from_host(&host)?, DeviceArray::zeroed(PARAMS)?);
    let (mut m, mut v) = (DeviceArray::zeroed(PARAMS)?, DeviceArray::zeroed(PARAMS)?);
    let records = Records::single::<nadam_kernel::Entry>()?;
    let nadam = run(
        &rt,
        &states,
        &mut p,
        &mut g,
        &mut |s, p, g| {
            let b = nadam_kernel::Buffers {
                p,
                g: g.input(),
                m: &mut m,
                v: &mut v,
            };
            let k = nadam_kernel::StepScalars {};
            rt.launch::<nadam_kernel::Entry>(s)
                .stepped(&k, &states, 0)
                .buffers(&b, &records)
                .map(|_| ())
        },
        &|states| {
            states.set_lr(rt.stream(), 0, 1e-3)?;
            states.set_scalar(rt.stream(), 0, "weight_decay", 1e-3f32)
        },
    )?;
    write(&dir, "nadam", &nadam)?;

    // Centered RMSprop: lr 1e-3 → 5e-4 at step 750, α 0.99, weight decay 0 → 1e-3.
    let spec = StepSpec::adam(&AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.0, 1)?, policy)?
        .with_kernel::<rmsprop_centered_kernel::Entry>(rmsprop_centered_kernel::Hyper {
        alpha: 0.99,
        eps: 1e-8,
        weight_decay: 0.0,
        momentum: 0.0,
    })?;
    let states = StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 })?;
    let (mut p, mut g) = (ParamBuffer::from_host(&host)?, DeviceArray::zeroed(PARAMS)?);
    let [mut sq, mut ga, mut buf] = [(); 3].map(|_| DeviceArray::zeroed(PARAMS).expect("alloc"));
    let records = Records::single::<rmsprop_centered_kernel::Entry>()?;
    let rmsprop = run(
        &rt,
        &states,
        &mut p,
        &mut g,
        &mut |s, p, g| {
            let b = rmsprop_centered_kernel::Buffers {
                p,
                g: g.input(),
                square_avg: &mut sq,
                grad_avg: &mut ga,
                momentum_buffer: &mut buf,
            };
            let k = rmsprop_centered_kernel::StepScalars {};
            rt.launch::<rmsprop_centered_kernel::Entry>(s)
                .stepped(&k, &states, 0)
                .buffers(&b, &records)
                .map(|_| ())
        },
        &|states| {
            states.set_lr(rt.stream(), 0, 5e-4)?;
            states.set_scalar(rt.stream(), 0, "weight_decay", 1e-3f32)
        },
    )?;
    write(&dir, "rmsprop", &rmsprop)?;
    println!(
        "train on {}: {STEPS} captured steps each; NAdam loss {:.6} -> {:.6}, centered RMSprop \
         loss {:.6} -> {:.6}",
        rt.device_name(),
        nadam.losses[0],
        nadam.losses[STEPS - 1],
        rmsprop.losses[0],
        rmsprop.losses[STEPS - 1]
    );
    Ok(())
}
