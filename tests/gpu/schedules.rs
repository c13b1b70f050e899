//! A user's own per-step optimizers, captured: the downstream example's NAdam (whose momentum
//! schedule is `#[derived]`, computed on the device after every advance) and centered RMSprop,
//! launched through their stepped entries. On the GPU:
//! - 1000 replays of a captured step equal 1000 eager steps bit for bit (weights, states and
//!   records), with the lr and a hyperparameter changed at step 500 in both runs, and differ
//!   from a run without that change (so the replay took it);
//! - the schedule's values on the device equal the host's `derived_at` bit for bit, and a record
//!   resumed at step k continues as the uninterrupted one;
//! - the weights after 200 steps match the f64 references;
//! - a multi-tensor captured NAdam step equals its eager one;
//! - a plain launch of NAdam is refused in a capture (its schedule would be replayed frozen).
//!
//! Every test needs a CUDA GPU and is `#[ignore]`d with that reason.
use adamant_device::abi::OptimizerEntry;
use adamant_runtime::cust::stream::Stream;
use adamant_runtime::{
    AdamHyper, Adamant, ClampPolicy, DeviceArray, Error, ParamBuffer, QAbsRef, Records, StepBound,
    StepSpec, StepStates, TensorSet,
};
use custom_optimizer::reference::{self, NadamHyper};
use custom_optimizer::{nadam_kernel, rmsprop_centered_kernel};

const N: usize = 70_001;
const BOUND: f32 = 2.0;
const NADAM: nadam_kernel::Hyper = nadam_kernel::Hyper {
    beta1: 0.9,
    eps: 1e-8,
    weight_decay: 0.01,
    momentum_decay: 4e-3,
};
const RMS: rmsprop_centered_kernel::Hyper = rmsprop_centered_kernel::Hyper {
    alpha: 0.99,
    eps: 1e-8,
    weight_decay: 0.01,
    momentum: 0.9,
};

/// `full` normally, `sanitized` under compute-sanitizer (`ADAMANT_SANITIZER_RUN`, set by
/// gpu-run.sh), whose instrumentation makes every launch far slower.
fn sanitized(full: usize, sanitized: usize) -> usize {
    if std::env::var_os("ADAMANT_SANITIZER_RUN").is_some() {
        sanitized
    } else {
        full
    }
}

fn runtime() -> Adamant {
    let mut rt = Adamant::new().expect("needs a CUDA GPU");
    custom_optimizer::load(&mut rt).unwrap();
    rt
}

fn init(i: usize) -> f32 {
    ((i * 7919 % 4001) as f32 / 1000.0) - 2.0
}

fn grad(i: usize, t: usize) -> f32 {
    (((i * 31 + t * 17) % 997) as f32 / 997.0 - 0.45) * 0.1
}

/// The shared fields of every record here: lr 2e-3, β2 0.999 (NAdam's), a fixed bound.
fn adam_spec(steps_taken: u64) -> StepSpec {
    let hyper = AdamHyper::new(2e-3, 0.9, 0.999, 1e-8, 0.0, steps_taken + 1).unwrap();
    StepSpec::adam(
        &hyper,
        StepBound::Policy(ClampPolicy::Fixed { bound: BOUND }),
    )
    .unwrap()
}

fn nadam_states(steps_taken: u64) -> StepStates {
    let spec = adam_spec(steps_taken)
        .with_kernel::<nadam_kernel::Entry>(NADAM)
        .unwrap();
    StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 }).unwrap()
}

fn rms_states() -> StepStates {
    let spec = adam_spec(0)
        .with_kernel::<rmsprop_centered_kernel::Entry>(RMS)
        .unwrap();
    StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 }).unwrap()
}

/// One tensor's buffers: the parameters, the gradient and up to three states.
struct Tensor {
    p: ParamBuffer,
    g: DeviceArray,
    s: [DeviceArray; 3],
}

impl Tensor {
    fn new(n: usize) -> Tensor {
        let host: Vec<f32> = (0..n).map(init).collect();
        Tensor {
            p: ParamBuffer::from_host(&host).unwrap(),
            g: DeviceArray::zeroed(n).unwrap(),
            s: [(); 3].map(|_| DeviceArray::zeroed(n).unwrap()),
        }
    }

    /// Every buffer's bits, for a bit-for-bit comparison.
    fn bits(&self) -> Vec<Vec<u32>> {
        let mut all = vec![self.p.download().unwrap()];
        all.extend(self.s.iter().map(|s| s.download().unwrap()));
        all.iter()
            .map(|b| b.iter().map(|x| x.to_bits()).collect())
            .collect()
    }
}

/// Which of the example's per-step kernels.
#[derive(Clone, Copy, Debug)]
enum Kernel {
    Nadam,
    Rms,
}

impl Kernel {
    fn states(self) -> StepStates {
        match self {
            Kernel::Nadam => nadam_states(0),
            Kernel::Rms => rms_states(),
        }
    }

    /// The hyperparameter changed mid-run.
    fn changed_hyper(self) -> &'static str {
        match self {
            Kernel::Nadam => "weight_decay",
            Kernel::Rms => "alpha",
        }
    }

    /// One stepped launch (no advance) on `t`'s buffers.
    fn launch(
        self,
        rt: &Adamant,
        s: &Stream,
        t: &mut Tensor,
        states: &StepStates,
        records: &Records,
    ) -> adamant_runtime::Result<()> {
        let [a, b, c] = &mut t.s;
        match self {
            Kernel::Nadam => {
                let buffers = nadam_kernel::Buffers {
                    p: &mut t.p,
                    g: t.g.input(),
                    m: a,
                    v: b,
                };
                rt.launch::<nadam_kernel::Entry>(s)
                    .stepped(&nadam_kernel::StepScalars {}, states, 0)
                    .buffers(&buffers, records)?;
            }
            Kernel::Rms => {
                let buffers = rmsprop_centered_kernel::Buffers {
                    p: &mut t.p,
                    g: t.g.input(),
                    square_avg: a,
                    grad_avg: b,
                    momentum_buffer: c,
                };
                rt.launch::<rmsprop_centered_kernel::Entry>(s)
                    .stepped(&rmsprop_centered_kernel::StepScalars {}, states, 0)
                    .buffers(&buffers, records)?;
            }
        }
        Ok(())
    }

    fn records(self) -> Records {
        match self {
            Kernel::Nadam => Records::single::<nadam_kernel::Entry>().unwrap(),
            Kernel::Rms => Records::single::<rmsprop_centered_kernel::Entry>().unwrap(),
        }
    }
}

/// 1000 steps of `kernel`: eager, captured (1000 replays), and captured without the mid-run
/// change. The gradient is the same every step (set once); at step 500 the lr and one
/// hyperparameter change between steps.
fn replays_equal_eager_steps(rt: &Adamant, kernel: Kernel) {
    let steps = sanitized(1000, 40);
    let (mut eager, mut replayed, mut unchanged) = (Tensor::new(N), Tensor::new(N), Tensor::new(N));
    let g: Vec<f32> = (0..N).map(|i| grad(i, 3)).collect();
    for t in [&mut eager, &mut replayed, &mut unchanged] {
        t.g.upload(&g).unwrap();
    }
    let (se, sr, su) = (kernel.states(), kernel.states(), kernel.states());
    let (re, rr, ru) = (kernel.records(), kernel.records(), kernel.records());
    let change = |states: &StepStates| {
        states.set_lr(rt.stream(), 0, 5e-4).unwrap();
        states
            .set_scalar(rt.stream(), 0, kernel.changed_hyper(), 0.5f32)
            .unwrap();
    };
    for step in 0..steps {
        if step == steps / 2 {
            change(&se);
        }
        se.advance(rt, rt.stream()).unwrap();
        kernel
            .launch(rt, rt.stream(), &mut eager, &se, &re)
            .unwrap();
    }
    let graph = rt
        .capture(vec![Box::new(|s: &Stream| {
            sr.advance(rt, s)?;
            kernel.launch(rt, s, &mut replayed, &sr, &rr)
        })])
        .unwrap();
    for step in 0..steps {
        if step == steps / 2 {
            change(&sr);
        }
        graph.launch(rt.stream()).unwrap();
    }
    let graph_unchanged = rt
        .capture(vec![Box::new(|s: &Stream| {
            su.advance(rt, s)?;
            kernel.launch(rt, s, &mut unchanged, &su, &ru)
        })])
        .unwrap();
    for _ in 0..steps {
        graph_unchanged.launch(rt.stream()).unwrap();
    }
    rt.synchronize().unwrap();
    drop((graph, graph_unchanged));
    let (e, r, u) = (eager.bits(), replayed.bits(), unchanged.bits());
    for (buffer, (a, b)) in e.iter().zip(&r).enumerate() {
        let differing = a.iter().zip(b).filter(|(x, y)| x != y).count();
        assert_eq!(
            differing, 0,
            "{kernel:?}: buffer {buffer} differs between eager and replayed in {differing} elements"
        );
    }
    assert_eq!(
        se.read_records().unwrap(),
        sr.read_records().unwrap(),
        "{kernel:?}: the records"
    );
    assert_eq!(
        (re.read().sequence, rr.read().sequence),
        (steps as u32, steps as u32)
    );
    assert_eq!(sr.read().unwrap()[0].step as usize, steps);
    // The change reached the replay: the run with it differs from the one without in most
    // elements of some buffer. Not necessarily the weights: on this constant gradient centered
    // RMSprop drives most weights to the clamp's bound in both runs, while its averages still
    // show the new α.
    let changed: Vec<usize> = e
        .iter()
        .zip(&u)
        .map(|(a, b)| a.iter().zip(b).filter(|(x, y)| x != y).count())
        .collect();
    assert!(
        changed.iter().any(|&c| c > N / 2),
        "{kernel:?}: the change at step {} did not reach the replay (elements that differ from \
         the unchanged run, per buffer: {changed:?})",
        steps / 2
    );
    println!(
        "schedules {kernel:?}: {steps} replays equal {steps} eager steps bit for bit over {N} \
         elements; the mid-run change moved {changed:?} elements per buffer (weights first)"
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn nadam_replays_equal_eager_steps_bit_for_bit() {
    replays_equal_eager_steps(&runtime(), Kernel::Nadam);
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn rmsprop_replays_equal_eager_steps_bit_for_bit() {
    replays_equal_eager_steps(&runtime(), Kernel::Rms);
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn the_devices_schedule_is_the_hosts_and_a_resumed_record_continues() {
    let rt = runtime();
    let states = nadam_states(0);
    let mut previous = Vec::new();
    for t in 1..=sanitized(600, 120) as u32 {
        states.advance(&rt, rt.stream()).unwrap();
        if t % 100 == 0 || t <= 3 {
            rt.synchronize().unwrap();
            let record = states.read_records().unwrap()[0];
            assert_eq!(record.state.step, t);
            let on_device = nadam_kernel::Derived::from_words(&record.scalars);
            assert_eq!(on_device, nadam_kernel::derived_at(t, &NADAM), "t {t}");
            assert_eq!(nadam_kernel::Hyper::from_words(&record.scalars), NADAM);
            previous.push(record);
        }
    }
    // A record made at step 500 (a checkpoint's) advances to the uninterrupted run's step 501.
    let k = sanitized(500, 60) as u64;
    let resumed = nadam_states(k);
    resumed.advance(&rt, rt.stream()).unwrap();
    let uninterrupted = nadam_states(0);
    for _ in 0..=k {
        uninterrupted.advance(&rt, rt.stream()).unwrap();
    }
    rt.synchronize().unwrap();
    assert_eq!(
        resumed.read_records().unwrap(),
        uninterrupted.read_records().unwrap()
    );
}

/// 200 steps of each kernel (a new gradient every step) against the f64 reference, with the
/// same steps computed in f32 on the host by the kernel's own `element` as the yardstick: the
/// device's error may not exceed twice the host's (plus a few roundings of the bound), and how
/// many weights equal the host's bit for bit is printed.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn two_hundred_steps_match_the_f64_references() {
    const CHECKED: usize = 4096;
    let steps = sanitized(200, 20);
    let rt = runtime();
    let lr = 2e-3f32;
    for kernel in [Kernel::Nadam, Kernel::Rms] {
        let mut t = Tensor::new(N);
        let states = kernel.states();
        let records = kernel.records();
        let mut rp: Vec<f64> = (0..CHECKED).map(|i| init(i) as f64).collect();
        let mut rs = vec![(0.0f64, 0.0f64, 0.0f64); CHECKED];
        let mut hp: Vec<f32> = (0..CHECKED).map(init).collect();
        let mut hs = vec![(0.0f32, 0.0f32, 0.0f32); CHECKED];
        let nadam = NadamHyper {
            lr: lr as f64,
            beta1: NADAM.beta1 as f64,
            beta2: 0.999f32 as f64,
            eps: NADAM.eps as f64,
            weight_decay: NADAM.weight_decay as f64,
            momentum_decay: NADAM.momentum_decay as f64,
        };
        let mut derived32 = nadam_kernel::Derived::INITIAL;
        for step in 0..steps {
            let g: Vec<f32> = (0..N).map(|i| grad(i, step)).collect();
            t.g.upload(&g).unwrap();
            states.advance(&rt, rt.stream()).unwrap();
            kernel
                .launch(&rt, rt.stream(), &mut t, &states, &records)
                .unwrap();
            let step_t = step as u32 + 1;
            let derived = reference::nadam_derived(step_t, nadam.beta1, nadam.momentum_decay);
            derived32 = nadam_kernel::Derived::next(step_t, &NADAM, &derived32);
            let bc2 = adamant_device::step::bias_correction(0.999, step_t);
            for i in 0..CHECKED {
                let (p, (a, b, c)) = (rp[i], rs[i]);
                let (mut x, mut y, mut z) = hs[i];
                (rp[i], rs[i], hp[i]) = match kernel {
                    Kernel::Nadam => {
                        let (p, m, v) = reference::nadam(
                            p,
                            g[i] as f64,
                            (a, b),
                            step_t,
                            &nadam,
                            derived,
                            BOUND as f64,
                        );
                        let d = derived32;
                        let h = nadam_kernel::element(
                            hp[i],
                            g[i],
                            &mut x,
                            &mut y,
                            lr,
                            0.999,
                            bc2,
                            NADAM.beta1,
                            NADAM.eps,
                            NADAM.weight_decay,
                            NADAM.momentum_decay,
                            d.mu,
                            d.mu_next,
                            d.mu_product,
                            BOUND,
                        );
                        (p, (m, v, 0.0), h)
                    }
                    Kernel::Rms => {
                        let (p, sq, ga, buf) = reference::rmsprop_centered(
                            p,
                            g[i] as f64,
                            (a, b, c),
                            lr as f64,
                            RMS.alpha as f64,
                            RMS.eps as f64,
                            RMS.weight_decay as f64,
                            RMS.momentum as f64,
                            BOUND as f64,
                        );
                        let h = rmsprop_centered_kernel::element(
                            hp[i],
                            g[i],
                            &mut x,
                            &mut y,
                            &mut z,
                            lr,
                            RMS.alpha,
                            RMS.eps,
                            RMS.weight_decay,
                            RMS.momentum,
                            BOUND,
                        );
                        (p, (sq, ga, buf), h)
                    }
                };
                hs[i] = (x, y, z);
            }
        }
        rt.synchronize().unwrap();
        let p = t.p.download().unwrap();
        let error = |x: &[f32]| {
            (0..CHECKED)
                .map(|i| (x[i] as f64 - rp[i]).abs())
                .fold(0.0f64, f64::max)
        };
        let (device, host) = (error(&p[..CHECKED]), error(&hp));
        let same = (0..CHECKED)
            .filter(|&i| p[i].to_bits() == hp[i].to_bits())
            .count();
        let allowed = 2.0 * host + 4.0 * f32::EPSILON as f64 * BOUND as f64;
        println!(
            "max_error {kernel:?} {steps} steps vs f64: device {device:.3e}, host f32 {host:.3e} \
             (allowed {allowed:.1e}); {same} of {CHECKED} weights equal the host's f32 bits"
        );
        assert!(device <= allowed, "{kernel:?}: {device} > {allowed}");
        assert!(p.iter().all(|x| x.abs() <= BOUND));
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_captured_multi_tensor_nadam_step_equals_the_eager_one() {
    let steps = sanitized(50, 5);
    let rt = runtime();
    let sizes = [1usize, 4099, 70_001];
    let make = || -> Vec<Tensor> {
        sizes
            .iter()
            .map(|&n| {
                let mut t = Tensor::new(n);
                t.g.upload(&(0..n).map(|i| grad(i, 5)).collect::<Vec<_>>())
                    .unwrap();
                t
            })
            .collect()
    };
    let (mut eager, mut replayed) = (make(), make());
    let (se, sr) = (nadam_states(0), nadam_states(0));
    let (mut set_e, mut set_r) = (TensorSet::new(), TensorSet::new());
    let step = |s: &Stream,
                tensors: &mut Vec<Tensor>,
                set: &mut TensorSet,
                states: &StepStates|
     -> adamant_runtime::Result<()> {
        states.advance(&rt, s)?;
        let buffers: Vec<_> = tensors
            .iter_mut()
            .map(|t| {
                let [m, v, _] = &mut t.s;
                nadam_kernel::Buffers {
                    p: &mut t.p,
                    g: t.g.input(),
                    m,
                    v,
                }
            })
            .collect();
        rt.launch::<nadam_kernel::Entry>(s)
            .stepped(&nadam_kernel::StepScalars {}, states, 0)
            .set(set, &buffers)?;
        Ok(())
    };
    for _ in 0..steps {
        step(rt.stream(), &mut eager, &mut set_e, &se).unwrap();
    }
    // The set's tables are built before the capture.
    {
        let buffers: Vec<_> = replayed
            .iter_mut()
            .map(|t| {
                let [m, v, _] = &mut t.s;
                nadam_kernel::Buffers {
                    p: &mut t.p,
                    g: t.g.input(),
                    m,
                    v,
                }
            })
            .collect();
        set_r.sync::<nadam_kernel::Entry>(&buffers).unwrap();
    }
    let graph = rt
        .capture(vec![Box::new(|s: &Stream| {
            step(s, &mut replayed, &mut set_r, &sr)
        })])
        .unwrap();
    for _ in 0..steps {
        graph.launch(rt.stream()).unwrap();
    }
    rt.synchronize().unwrap();
    drop(graph);
    for (i, (a, b)) in eager.iter().zip(&replayed).enumerate() {
        assert_eq!(a.bits(), b.bits(), "tensor {i} ({} elements)", sizes[i]);
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_plain_nadam_launch_is_refused_in_a_capture() {
    let rt = runtime();
    let mut t = Tensor::new(16);
    let records = Records::single::<nadam_kernel::Entry>().unwrap();
    let derived = nadam_kernel::derived_at(1, &NADAM);
    let scalars = nadam_kernel::Scalars {
        lr: 2e-3,
        beta2: 0.999,
        bias_correction2: 1.0 - 0.999,
        beta1: NADAM.beta1,
        eps: NADAM.eps,
        weight_decay: NADAM.weight_decay,
        momentum_decay: NADAM.momentum_decay,
        mu: derived.mu,
        mu_next: derived.mu_next,
        mu_product: derived.mu_product,
    };
    let policy = ClampPolicy::Fixed { bound: BOUND };
    let err = rt
        .capture(vec![Box::new(|s: &Stream| {
            let [m, v, _] = &mut t.s;
            let buffers = nadam_kernel::Buffers {
                p: &mut t.p,
                g: t.g.input(),
                m,
                v,
            };
            rt.launch::<nadam_kernel::Entry>(s)
                .plain(&scalars, policy)
                .buffers(&buffers, &records)
                .map(|_| ())
        })])
        .err()
        .expect("refused");
    match &err {
        Error::Capture { operation } => assert!(
            operation.contains("nadam_kernel") && operation.contains("changes every step"),
            "{operation}"
        ),
        other => panic!("expected Capture, got {other:?}"),
    }
    // Eagerly, the plain launch runs (the host passes this step's values).
    let [m, v, _] = &mut t.s;
    let buffers = nadam_kernel::Buffers {
        p: &mut t.p,
        g: t.g.input(),
        m,
        v,
    };
    rt.launch::<nadam_kernel::Entry>(rt.stream())
        .plain(&scalars, policy)
        .buffers(&buffers, &records)
        .unwrap();
    rt.synchronize().unwrap();
    assert_eq!(records.read().sequence, 1, "only the eager launch ran");
    let _ = <nadam_kernel::Entry as OptimizerEntry>::SCHEDULE.expect("NAdam has a schedule");
}
