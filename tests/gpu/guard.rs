//! The step protects itself, inside the graph (`adamant_device::guard`, `GradientGuard`):
//! - a NaN injected into one gradient at step 500 of a 1000-step captured run: that replay
//!   leaves every buffer bit for bit as it was, `t` unchanged, the skip counted; the run then
//!   equals, bit for bit, an eager guarded run with the same gradients and an unguarded eager
//!   run that simply left that step out;
//! - global-norm clipping over a multi-tensor set (`max_norm` hit and not hit, and changed
//!   between replays) against `torch.nn.utils.clip_grad_norm_`'s formula followed by Adam, in
//!   f64, to 1e-6 relative;
//! - a guarded record refuses an advance with no guard run (`Error::Unguarded`), and a guard for
//!   an unguarded record is refused (`Error::NotGuarded`).
//!
//! Every test needs a CUDA GPU and is `#[ignore]`d with that reason.
use adamant::reference::{self as r, KernelRef, RefState};
use adamant_kernels::optimizers::iqn_adam_kernel;
use adamant_runtime::cust::stream::Stream;
use adamant_runtime::{
    AdamHyper, Adamant, ClampPolicy, DeviceArray, Error, GradientGuard, GuardSpec, ParamBuffer,
    QAbsRef, Records, StepBound, StepSpec, StepStates, TensorSet,
};

const N: usize = 70_001;
const BOUND: f32 = 5.0;

fn hyper() -> AdamHyper {
    AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.01, 1).unwrap()
}

fn states(guard: Option<GuardSpec>) -> StepStates {
    let h = hyper();
    let mut spec = StepSpec::adam(&h, StepBound::Policy(ClampPolicy::Fixed { bound: BOUND }))
        .and_then(|s| {
            s.with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper {
                eps: h.eps,
                weight_decay: h.weight_decay,
            })
        })
        .unwrap();
    if let Some(guard) = guard {
        spec = spec.guarded(guard).unwrap();
    }
    StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 }).unwrap()
}

fn grad(i: usize, t: usize) -> f32 {
    (((i * 31 + t * 17) % 997) as f32 / 997.0 - 0.45) * 0.1
}

struct Group {
    p: ParamBuffer,
    g: DeviceArray,
    m: DeviceArray,
    v: DeviceArray,
}

impl Group {
    fn new(n: usize) -> Group {
        let p: Vec<f32> = (0..n)
            .map(|i| ((i * 7919 % 4001) as f32 / 1000.0) - 2.0)
            .collect();
        Group {
            p: ParamBuffer::from_host(&p).unwrap(),
            g: DeviceArray::zeroed(n).unwrap(),
            m: DeviceArray::zeroed(n).unwrap(),
            v: DeviceArray::zeroed(n).unwrap(),
        }
    }

    fn bits(&self) -> Vec<Vec<u32>> {
        [
            self.p.download().unwrap(),
            self.m.download().unwrap(),
            self.v.download().unwrap(),
        ]
        .iter()
        .map(|b| b.iter().map(|x| x.to_bits()).collect())
        .collect()
    }

    fn launch(
        &mut self,
        rt: &Adamant,
        s: &Stream,
        states: &StepStates,
        records: &Records,
    ) -> adamant_runtime::Result<()> {
        let b = iqn_adam_kernel::Buffers {
            p: &mut self.p,
            g: self.g.input(),
            m: &mut self.m,
            v: &mut self.v,
        };
        rt.launch::<iqn_adam_kernel::Entry>(s)
            .stepped(&iqn_adam_kernel::StepScalars {}, states, 0)
            .buffers(&b, records)?;
        Ok(())
    }
}

/// Step `t`'s gradient (a NaN at element 4321 in the poisoned step).
fn gradient(t: usize, poisoned: usize) -> Vec<f32> {
    let mut g: Vec<f32> = (0..N).map(|i| grad(i, t)).collect();
    if t == poisoned {
        g[4321] = f32::NAN;
    }
    g
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_nan_gradient_skips_its_step_inside_the_graph_and_nothing_changes() {
    let rt = Adamant::new().expect("needs a CUDA GPU");
    let steps = if std::env::var_os("ADAMANT_SANITIZER_RUN").is_some() {
        20
    } else {
        1000
    };
    let poisoned = steps / 2;
    let (mut replayed, mut eager, mut left_out) = (Group::new(N), Group::new(N), Group::new(N));
    let (sr, se, sl) = (
        states(Some(GuardSpec::SKIP_NON_FINITE)),
        states(Some(GuardSpec::SKIP_NON_FINITE)),
        states(None),
    );
    let (rr, re, rl) = (
        Records::single::<iqn_adam_kernel::Entry>().unwrap(),
        Records::single::<iqn_adam_kernel::Entry>().unwrap(),
        Records::single::<iqn_adam_kernel::Entry>().unwrap(),
    );
    let (guard_r, guard_e) = (
        GradientGuard::new(&[&replayed.g]).unwrap(),
        GradientGuard::new(&[&eager.g]).unwrap(),
    );
    let graph = {
        let (guard, states, records, group) = (&guard_r, &sr, &rr, &mut replayed);
        // The replay advances in the guard's own launch; the eager run below with a separate
        // advance: the two must agree bit for bit.
        rt.capture(vec![Box::new(|s: &Stream| {
            guard.enqueue_and_advance(&rt, s, states)?;
            group.launch(&rt, s, states, records)
        })])
        .unwrap()
    };
    for t in 0..steps {
        let g = gradient(t, poisoned);
        replayed.g.upload(&g).unwrap();
        eager.g.upload(&g).unwrap();
        let before = (t == poisoned).then(|| replayed.bits());
        graph.launch(rt.stream()).unwrap();
        guard_e.enqueue(&rt, rt.stream(), &se, 0).unwrap();
        se.advance(&rt, rt.stream()).unwrap();
        eager.launch(&rt, rt.stream(), &se, &re).unwrap();
        if t != poisoned {
            left_out.g.upload(&g).unwrap();
            sl.advance(&rt, rt.stream()).unwrap();
            left_out.launch(&rt, rt.stream(), &sl, &rl).unwrap();
        }
        if let Some(before) = before {
            rt.synchronize().unwrap();
            assert_eq!(replayed.bits(), before, "the skipped replay wrote a buffer");
            let record = sr.read_records().unwrap()[0];
            assert_eq!(
                record.state.step as usize, poisoned,
                "t advanced on a skipped step"
            );
            assert_eq!(
                (record.guard.skip, record.guard.skipped_steps),
                (1, 1),
                "{:?}",
                record.guard
            );
            assert_eq!(record.guard.first_non_finite, 4321);
            assert!(!record.guard.norm.is_finite());
        }
    }
    rt.synchronize().unwrap();
    drop(graph);
    let (r, e, l) = (replayed.bits(), eager.bits(), left_out.bits());
    assert_eq!(r, e, "replayed and eager guarded runs");
    assert_eq!(r, l, "the guarded run and the run that left the step out");
    let (gr, gl) = (sr.read().unwrap()[0], sl.read().unwrap()[0]);
    assert_eq!(gr.step as usize, steps - 1);
    assert_eq!(gr.step, gl.step);
    assert_eq!(
        (gr.bias_correction1, gr.bias_correction2),
        (gl.bias_correction1, gl.bias_correction2)
    );
    let guard = sr.last_guards()[0];
    assert_eq!(
        (guard.skipped_steps, guard.last_skipped_step),
        (1, poisoned as u32 + 1)
    );
    println!(
        "guard: {steps} captured steps, a NaN gradient at step {poisoned} skipped (nothing \
         written, t kept), the run equal bit for bit to eager and to one without that step"
    );
}

/// `torch.nn.utils.clip_grad_norm_` then Adam, in f64: the clip coefficient from the global norm
/// of every tensor's gradient, then one step of each tensor.
fn clipped_reference(
    before: &[(Vec<f32>, Vec<f32>)],
    max_norm: f64,
    t: u64,
) -> (f64, Vec<RefState>) {
    let norm = before
        .iter()
        .flat_map(|(_, g)| g.iter())
        .map(|&x| x as f64 * x as f64)
        .sum::<f64>()
        .sqrt();
    let coef = (max_norm / (norm + 1e-6)).min(1.0);
    let h = hyper();
    let hp = r::Hyper::new(h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, t);
    let states = before
        .iter()
        .map(|(p, g)| {
            let zeros = vec![0.0f32; p.len()];
            let mut state = RefState::from_f32(p, &zeros, &zeros, None);
            let scaled: Vec<f32> = g.iter().map(|&x| (x as f64 * coef) as f32).collect();
            r::step_slices(KernelRef::Iqn, &mut state, &scaled, &hp, BOUND);
            state
        })
        .collect();
    (coef, states)
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn global_norm_clipping_over_a_set_matches_torchs_formula() {
    let rt = Adamant::new().expect("needs a CUDA GPU");
    let sizes = [1usize, 4099, 70_001];
    // The gradients' global norm here is about 18: 1.0 clips, 100 does not.
    for (max_norm, clips) in [(1.0f32, true), (100.0, false)] {
        let mut groups: Vec<Group> = sizes.iter().map(|&n| Group::new(n)).collect();
        let mut host = Vec::new();
        for (k, group) in groups.iter_mut().enumerate() {
            let g: Vec<f32> = (0..sizes[k]).map(|i| grad(i * (k + 1), 7) * 10.0).collect();
            group.g.upload(&g).unwrap();
            host.push((group.p.download().unwrap(), g));
        }
        let states = states(Some(GuardSpec {
            skip_non_finite: true,
            max_norm: Some(max_norm),
            loss_scale: None,
        }));
        let grads: Vec<&DeviceArray> = groups.iter().map(|g| &g.g).collect();
        let dyn_grads: Vec<&dyn adamant_runtime::ReadBuffer> = grads
            .iter()
            .map(|g| *g as &dyn adamant_runtime::ReadBuffer)
            .collect();
        let guard = GradientGuard::new(&dyn_grads).unwrap();
        let mut set = TensorSet::new();
        guard.enqueue(&rt, rt.stream(), &states, 0).unwrap();
        states.advance(&rt, rt.stream()).unwrap();
        let buffers: Vec<_> = groups
            .iter_mut()
            .map(|g| iqn_adam_kernel::Buffers {
                p: &mut g.p,
                g: g.g.input(),
                m: &mut g.m,
                v: &mut g.v,
            })
            .collect();
        rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
            .stepped(&iqn_adam_kernel::StepScalars {}, &states, 0)
            .set(&mut set, &buffers)
            .unwrap();
        rt.synchronize().unwrap();
        let (coef, reference) = clipped_reference(&host, max_norm as f64, 1);
        let guard_word = states.read_records().unwrap()[0].guard;
        assert!(
            ((guard_word.clip_coef as f64) - coef).abs() <= 1e-6 * coef,
            "max_norm {max_norm}: coefficient {} vs {coef}",
            guard_word.clip_coef
        );
        assert_eq!(
            coef < 1.0,
            clips,
            "max_norm {max_norm}: norm {}",
            guard_word.norm
        );
        // Adam's step hardly moves with the gradients' scale (m / sqrt(v)); its moments carry
        // the coefficient (m by it, v by its square), so all three are judged.
        for (k, (group, want)) in groups.iter().zip(&reference).enumerate() {
            let (p, m, v) = (
                group.p.download().unwrap(),
                group.m.download().unwrap(),
                group.v.download().unwrap(),
            );
            let errors = want.max_errors(&p, &m, &v, None);
            println!(
                "max_error clip max_norm {max_norm} tensor {k}: {:.3} ε·scale (coefficient \
                 {coef:.6})",
                errors.worst()
            );
            assert!(
                errors.passes(),
                "max_norm {max_norm} tensor {k}: {errors:?}"
            );
        }
        // The threshold changes between steps, applied from the next guard run.
        states
            .set_scalar(rt.stream(), 0, "max_norm", 0.5f32)
            .unwrap();
        guard.enqueue(&rt, rt.stream(), &states, 0).unwrap();
        states.advance(&rt, rt.stream()).unwrap();
        rt.synchronize().unwrap();
        let next = states.read_records().unwrap()[0].guard;
        let want = (0.5 / (next.norm as f64 + 1e-6)).min(1.0);
        assert!(((next.clip_coef as f64) - want).abs() <= 1e-6 * want);
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_guarded_record_refuses_a_step_without_its_guard() {
    let rt = Adamant::new().expect("needs a CUDA GPU");
    let guarded = states(Some(GuardSpec::SKIP_NON_FINITE));
    assert!(matches!(
        guarded.advance(&rt, rt.stream()),
        Err(Error::Unguarded { index: 0 })
    ));
    let unguarded = states(None);
    let g = DeviceArray::zeroed(16).unwrap();
    let guard = GradientGuard::new(&[&g]).unwrap();
    assert!(matches!(
        guard.enqueue(&rt, rt.stream(), &unguarded, 0),
        Err(Error::NotGuarded { index: 0 })
    ));
    assert!(matches!(
        guard.enqueue(&rt, rt.stream(), &guarded, 3),
        Err(Error::StepIndex { index: 3, .. })
    ));
    // The fused pass refuses the same way, before anything is enqueued.
    assert!(matches!(
        guard.enqueue_and_advance(&rt, rt.stream(), &unguarded),
        Err(Error::NotGuarded { index: 0 })
    ));
    let two = GradientGuard::per_record(&[(1, &[&g])]).unwrap();
    assert!(matches!(
        two.enqueue_and_advance(&rt, rt.stream(), &guarded),
        Err(Error::StepIndex { index: 1, .. })
    ));
    // A guard judging record 0 only, over two guarded records: record 1 has no guard run.
    let pair = {
        let h = hyper();
        let spec = StepSpec::adam(&h, StepBound::Policy(ClampPolicy::Fixed { bound: BOUND }))
            .and_then(|s| {
                s.with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper {
                    eps: h.eps,
                    weight_decay: h.weight_decay,
                })
            })
            .and_then(|s| s.guarded(GuardSpec::SKIP_NON_FINITE))
            .unwrap();
        StepStates::new(&[spec.clone(), spec], QAbsRef::Owned { initial: 1.0 }).unwrap()
    };
    assert!(matches!(
        guard.enqueue_and_advance(&rt, rt.stream(), &pair),
        Err(Error::Unguarded { index: 1 })
    ));
    rt.synchronize().unwrap();
    assert_eq!(
        pair.read()
            .unwrap()
            .iter()
            .map(|r| r.step)
            .collect::<Vec<_>>(),
        [0, 0],
        "a refused fused pass enqueued nothing"
    );
    // Record 1's own guard enqueued first, then the fused pass of record 0: both step.
    two.enqueue(&rt, rt.stream(), &pair, 0).unwrap();
    guard.enqueue_and_advance(&rt, rt.stream(), &pair).unwrap();
    // With its guard, the step goes, separately or fused.
    guard.enqueue(&rt, rt.stream(), &guarded, 0).unwrap();
    guarded.advance(&rt, rt.stream()).unwrap();
    guard
        .enqueue_and_advance(&rt, rt.stream(), &guarded)
        .unwrap();
    rt.synchronize().unwrap();
    assert_eq!(guarded.read().unwrap()[0].step, 2);
    assert_eq!(
        pair.read()
            .unwrap()
            .iter()
            .map(|r| r.step)
            .collect::<Vec<_>>(),
        [1, 1]
    );
}

/// One guard pass judges several records, each by its own gradients only: record 0 (two
/// tensors, one of an odd length) is clipped, record 1 holds an infinity in its second tensor
/// and skips its step, record 2 (a gradient over a thousand chunks' worth of quanta) is below
/// its `max_norm`. Each record's norm against an f64 sum from the formula, the first non-finite
/// index counting its own tensors, and the pass's sums the same bits when run again.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn one_pass_judges_several_records_each_by_its_own_gradients() {
    let rt = Adamant::new().expect("needs a CUDA GPU");
    let h = hyper();
    let spec = |max_norm: f32| {
        StepSpec::adam(&h, StepBound::Policy(ClampPolicy::Fixed { bound: BOUND }))
            .and_then(|s| {
                s.with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper {
                    eps: h.eps,
                    weight_decay: h.weight_decay,
                })
            })
            .and_then(|s| {
                s.guarded(GuardSpec {
                    skip_non_finite: true,
                    max_norm: Some(max_norm),
                    loss_scale: None,
                })
            })
            .unwrap()
    };
    // Record 3 is guarded and judged by no group here: the pass leaves it alone.
    let max_norms = [1.0f32, 1.0, 1e9, 1.0];
    let specs: Vec<StepSpec> = max_norms.iter().map(|&m| spec(m)).collect();
    let states = StepStates::new(&specs, QAbsRef::Owned { initial: 1.0 }).unwrap();
    let values = |n: usize, salt: usize| -> Vec<f32> { (0..n).map(|i| grad(i, salt)).collect() };
    let sizes = [[4099usize, 70_001], [513, 9], [5_000_003, 0]];
    let mut host: Vec<Vec<Vec<f32>>> = sizes
        .iter()
        .enumerate()
        .map(|(r, s)| {
            s.iter()
                .enumerate()
                .map(|(t, &n)| values(n, 3 * r + t))
                .collect()
        })
        .collect();
    host[1][1][5] = f32::INFINITY;
    host[1][1][7] = f32::NAN;
    let device: Vec<Vec<DeviceArray>> = host
        .iter()
        .map(|r| {
            r.iter()
                .map(|g| DeviceArray::from_host(g).unwrap())
                .collect()
        })
        .collect();
    let dyns: Vec<Vec<&dyn adamant_runtime::ReadBuffer>> = device
        .iter()
        .map(|r| {
            r.iter()
                .map(|g| g as &dyn adamant_runtime::ReadBuffer)
                .collect()
        })
        .collect();
    let groups: Vec<(usize, &[&dyn adamant_runtime::ReadBuffer])> =
        dyns.iter().enumerate().map(|(r, g)| (r, &g[..])).collect();
    let guard = GradientGuard::per_record(&groups).unwrap();
    let mut norms = Vec::new();
    for _ in 0..2 {
        guard.enqueue(&rt, rt.stream(), &states, 0).unwrap();
        rt.synchronize().unwrap();
        norms.push(
            states
                .read_records()
                .unwrap()
                .iter()
                .map(|r| r.guard)
                .collect::<Vec<_>>(),
        );
    }
    // The same verdicts, bit for bit (the skip counted once per run: no advance between).
    let verdict = |g: &adamant_device::guard::StepGuard| {
        (
            g.norm.to_bits(),
            g.clip_coef.to_bits(),
            g.first_non_finite,
            g.skip,
        )
    };
    assert_eq!(
        norms[0].iter().map(verdict).collect::<Vec<_>>(),
        norms[1].iter().map(verdict).collect::<Vec<_>>(),
        "the same sums, bit for bit"
    );
    assert_eq!(
        (norms[0][1].skipped_steps, norms[1][1].skipped_steps),
        (1, 2)
    );
    let guards = &norms[0];
    for (r, tensors) in host.iter().enumerate() {
        let sum: f64 = tensors
            .iter()
            .flatten()
            .map(|&x| (x as f64) * (x as f64))
            .sum();
        let g = guards[r];
        if r == 1 {
            assert_eq!(g.skip, 1, "record 1 holds an infinity");
            assert_eq!(g.first_non_finite, 513 + 5, "counting its own tensors");
            continue;
        }
        let norm = sum.sqrt();
        assert!(
            (g.norm as f64 - norm).abs() <= 1e-6 * norm,
            "record {r}: norm {} vs f64 {norm}",
            g.norm
        );
        let max_norm = max_norms[r] as f64;
        let coef = (max_norm / (norm + 1e-6)).min(1.0);
        assert!(
            (g.clip_coef as f64 - coef).abs() <= 1e-6 * coef,
            "record {r}"
        );
        assert_eq!((g.skip, g.first_non_finite), (0, u64::MAX), "record {r}");
        println!(
            "max_error guard record {r}: norm {} vs f64 {norm:.9}",
            g.norm
        );
    }
    assert!(guards[0].clip_coef < 1.0 && guards[2].clip_coef == 1.0);
    assert_eq!(guards[3].epoch, 0, "record 3 was not judged");
    // Record 3 was not judged: the advance refuses the step rather than take it unguarded.
    assert!(matches!(
        states.advance(&rt, rt.stream()),
        Err(Error::Unguarded { index: 3 })
    ));
}
