//! A small regression model for training runs on the GPU: an MLP (16 inputs, 48 tanh units, one
//! output) fitted to 512 fixed samples of a smooth target plus fixed noise (so the loss has a
//! floor, about 0.013, and relative comparisons of final losses mean something). The loss and
//! its gradient are computed on the host in f64 from the weights the model reads.
pub const IN: usize = 16;
pub const HIDDEN: usize = 48;
pub const SAMPLES: usize = 512;
/// `W1` (HIDDEN × IN, row-major), `b1`, `W2`, `b2`.
pub const PARAMS: usize = HIDDEN * IN + HIDDEN + HIDDEN + 1;

/// The starting weights: a fixed spread in ±0.3.
pub fn init(i: usize) -> f32 {
    ((i * 2654435761usize % 10007) as f32 / 10007.0 - 0.5) * 0.6
}

fn sample(s: usize) -> ([f64; IN], f64) {
    let mut x = [0.0; IN];
    for (j, v) in x.iter_mut().enumerate() {
        *v = (((s * 31 + j * 17) % 211) as f64 / 211.0 - 0.5) * 2.0;
    }
    let smooth = (0.3 * x.iter().sum::<f64>()).sin() + 0.5 * x[0] * x[1];
    // Uniform in ±0.2, fixed per sample: a floor of 0.04 / 3.
    let noise = ((s * 7919 % 1009) as f64 / 1009.0 - 0.5) * 0.4;
    (x, smooth + noise)
}

/// The mean squared error of the model with weights `p`, and its gradient (f64).
pub fn loss_and_grad(p: &[f32]) -> (f64, Vec<f64>) {
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
            .map(|k| ((0..IN).map(|j| w(w1 + k * IN + j) * x[j]).sum::<f64>() + w(b1 + k)).tanh())
            .collect();
        let err = (0..HIDDEN).map(|k| w(w2 + k) * h[k]).sum::<f64>() + w(b2) - y;
        loss += err * err / SAMPLES as f64;
        let d = 2.0 * err / SAMPLES as f64;
        g[b2] += d;
        for k in 0..HIDDEN {
            g[w2 + k] += d * h[k];
            let dz = d * w(w2 + k) * (1.0 - h[k] * h[k]);
            g[b1 + k] += dz;
            for j in 0..IN {
                g[w1 + k * IN + j] += dz * x[j];
            }
        }
    }
    (loss, g)
}

/// One training run of `steps` steps: `weights()` reads the weights the model sees, `step(grad)`
/// uploads the gradient and takes one step. Every weight must stay finite and within `bound`.
/// Returns every step's loss (before its update).
pub fn train(
    rt: &adamant_runtime::Adamant,
    steps: usize,
    bound: f32,
    weights: &mut dyn FnMut() -> Vec<f32>,
    step: &mut dyn FnMut(&[f64]) -> adamant_runtime::Result<()>,
) -> Vec<f64> {
    let mut losses = Vec::with_capacity(steps);
    for i in 0..steps {
        let w = weights();
        assert!(
            w.iter().all(|x| x.is_finite() && x.abs() <= bound),
            "step {i}: a weight left the bound"
        );
        let (loss, grad) = loss_and_grad(&w);
        losses.push(loss);
        step(&grad).unwrap();
        rt.synchronize().unwrap();
    }
    losses
}

/// The mean loss of the last 50 steps.
pub fn final_loss(losses: &[f64]) -> f64 {
    losses[losses.len() - 50..].iter().sum::<f64>() / 50.0
}

/// The reference run of the training tests: `steps` steps of AdamW in f32
/// (`attn_adam_kernel`, stepped from a fixed-bound record) from [`init`]'s weights. Returns every
/// step's loss.
pub fn f32_adamw_run(
    rt: &adamant_runtime::Adamant,
    steps: usize,
    lr: f32,
    weight_decay: f32,
    bound: f32,
) -> Vec<f64> {
    use adamant_kernels::optimizers::attn_adam_kernel as k;
    use adamant_runtime::cust::memory::{CopyDestination, DeviceBuffer};
    use adamant_runtime::{DeviceRegion, Records, Storage};
    let s = rt.stream();
    let p0: Vec<f32> = (0..PARAMS).map(init).collect();
    let up = |x: &[f32]| DeviceBuffer::from_slice(x).unwrap();
    let zeros = vec![0f32; PARAMS];
    let (p, mut g, m, v) = (up(&p0), up(&zeros), up(&zeros), up(&zeros));
    let region = |b: &DeviceBuffer<f32>| {
        DeviceRegion::of(b.as_device_ptr().as_raw(), b.len(), Storage::F32).unwrap()
    };
    let states = super::fixed_bound_states::<k::Entry>(
        k::Hyper {
            eps: 1e-8,
            weight_decay,
        },
        lr,
        bound,
        0,
    );
    let records = Records::single::<k::Entry>().unwrap();
    let b = k::Buffers {
        p: region(&p),
        g: region(&g),
        m: region(&m),
        v: region(&v),
    };
    train(
        rt,
        steps,
        bound,
        &mut || super::download_raw(&p),
        &mut |grad| {
            let grad: Vec<f32> = grad.iter().map(|&x| x as f32).collect();
            g.copy_from(&grad[..]).unwrap();
            states.advance(rt, s)?;
            // SAFETY: every buffer outlives the run (`train` synchronises each step).
            unsafe {
                rt.launch::<k::Entry>(s)
                    .stepped(&k::StepScalars {}, &states, 0)
                    .raw_buffers(&b, &records)
            }
            .map(|_| ())
        },
    )
}
