//! Issue 27: a run saved at step 700 and resumed in a new process equals the uninterrupted run
//! at step 1500 bit for bit (every buffer and every step record), for a single tensor eager and
//! captured, a multi-tensor set, and a bf16 stochastic-rounding path on memory other code owns.
//! The run is the MLP of `support::mlp` (gradients from the host in f64, as the model reads its
//! weights), so every step depends on every step before it.
//!
//! The resumed half runs in a child process (this test binary again, running `resume_child`
//! with the checkpoint's path): new context, new allocations, new records, a graph captured
//! before the restore (which writes in place, so the graph needs no recapture). A failed
//! restore (a file of another kernel, a damaged tensor) leaves every device buffer as it was.
//!
//! GPU only (`#[ignore]`).
use std::path::{Path, PathBuf};

use adamant_kernels::half_weights::adamw_bf16_sr;
use adamant_kernels::optimizers::{attn_adam_kernel, iqn_adam_kernel};
use adamant_runtime::checkpoint::{Checkpoint, CheckpointError};
use adamant_runtime::cust::memory::{CopyDestination, DeviceBuffer};
use adamant_runtime::cust::stream::Stream;
use adamant_runtime::{
    Adamant, DeviceArray, DeviceRegion, Error, ParamBuffer, Records, StepGraph, StepStates,
    Storage, TensorSet,
};
use half::bf16;

#[path = "../support/mod.rs"]
mod support;

use support::download_raw as download;
use support::mlp::{init, loss_and_grad, PARAMS};

const STEPS: u32 = 1500;
const SAVE_AT: u32 = 700;
const LR: f32 = 3e-3;
const WD: f32 = 0.01;
const BOUND: f32 = 4.0;
/// The multi-tensor case's split: the first layer's weights, then the rest.
const SPLIT: usize = 16 * 48;

/// One training run of one case: the weights the model reads, one step, and its state to and
/// from a checkpoint.
trait Run {
    fn weights(&self) -> Vec<f32>;
    fn step(&mut self, grad: &[f64]);
    fn save(&self, ck: &mut Checkpoint);
    fn restore(&mut self, ck: &Checkpoint) -> adamant_runtime::Result<()>;
}

fn states<E: adamant_device::abi::OptimizerEntry>(hyper: E::Hyper) -> StepStates
where
    E::Hyper: Send + Sync + 'static,
{
    support::fixed_bound_states::<E>(hyper, LR, BOUND, 0)
}

fn f32_grad(grad: &[f64]) -> Vec<f32> {
    grad.iter().map(|&x| x as f32).collect()
}

/// AdamW on the runtime's own f32 buffers, one tensor, eager or replayed from a graph captured
/// when the run is made (before any restore).
struct Single<'rt> {
    rt: &'rt Adamant,
    p: ParamBuffer,
    g: DeviceArray,
    m: DeviceArray,
    v: DeviceArray,
    states: StepStates,
    records: Records,
    graph: Option<StepGraph<'rt>>,
}

impl<'rt> Single<'rt> {
    fn new(rt: &'rt Adamant, captured: bool, p0: &[f32]) -> Single<'rt> {
        let mut run = Single {
            rt,
            p: ParamBuffer::from_host(p0).unwrap(),
            g: DeviceArray::zeroed(p0.len()).unwrap(),
            m: DeviceArray::zeroed(p0.len()).unwrap(),
            v: DeviceArray::zeroed(p0.len()).unwrap(),
            states: states::<attn_adam_kernel::Entry>(attn_adam_kernel::Hyper {
                eps: 1e-8,
                weight_decay: WD,
            }),
            records: Records::single::<attn_adam_kernel::Entry>().unwrap(),
            graph: None,
        };
        if captured {
            let graph = rt
                .capture(vec![Box::new(|s: &Stream| run.enqueue(s))])
                .unwrap();
            run.graph = Some(graph);
        }
        run
    }

    fn enqueue(&mut self, s: &Stream) -> adamant_runtime::Result<()> {
        self.states.advance(self.rt, s)?;
        let b = attn_adam_kernel::Buffers {
            p: &mut self.p,
            g: self.g.input(),
            m: &mut self.m,
            v: &mut self.v,
        };
        self.rt
            .launch::<attn_adam_kernel::Entry>(s)
            .stepped(&attn_adam_kernel::StepScalars {}, &self.states, 0)
            .buffers(&b, &self.records)?;
        Ok(())
    }
}

impl Run for Single<'_> {
    fn weights(&self) -> Vec<f32> {
        self.p.download().unwrap()
    }

    fn step(&mut self, grad: &[f64]) {
        self.g.upload(&f32_grad(grad)).unwrap();
        match &self.graph {
            Some(graph) => graph.launch(self.rt.stream()).unwrap(),
            None => {
                let s = self.rt.stream();
                self.enqueue(s).unwrap();
            }
        }
        self.rt.synchronize().unwrap();
    }

    fn save(&self, ck: &mut Checkpoint) {
        let s = self.rt.stream();
        ck.save_steps(&self.states, s).unwrap();
        let b = attn_adam_kernel::Buffers {
            p: &self.p,
            g: self.g.input(),
            m: &self.m,
            v: &self.v,
        };
        ck.save_tensor::<attn_adam_kernel::Entry>("mlp", &b, Some((&self.states, 0)), s)
            .unwrap();
    }

    fn restore(&mut self, ck: &Checkpoint) -> adamant_runtime::Result<()> {
        let mut restore = ck.restore();
        let mut b = attn_adam_kernel::Buffers {
            p: &mut self.p,
            g: self.g.input(),
            m: &mut self.m,
            v: &mut self.v,
        };
        restore.tensor::<attn_adam_kernel::Entry>("mlp", &mut b)?;
        restore.steps(&self.states)?;
        restore.commit(self.rt.stream())
    }
}

/// Two tensors (the first layer's weights, the rest) in one multi-tensor launch of
/// `iqn_adam_kernel` (Adam with L2 decay), eager.
struct Multi<'rt> {
    rt: &'rt Adamant,
    tensors: Vec<[DeviceArray; 3]>,
    params: Vec<ParamBuffer>,
    set: TensorSet,
    states: StepStates,
}

const MULTI_NAMES: [&str; 2] = ["layer1.weight", "rest"];

/// The multi-tensor set's clamp scales: the rest clamps at half the bound.
const MULTI_SCALES: [f32; 2] = [1.0, 0.5];

impl<'rt> Multi<'rt> {
    fn new(rt: &'rt Adamant, p0: &[f32]) -> Multi<'rt> {
        let parts = [&p0[..SPLIT], &p0[SPLIT..]];
        let mut run = Multi {
            rt,
            params: parts
                .iter()
                .map(|p| ParamBuffer::from_host(p).unwrap())
                .collect(),
            tensors: parts
                .iter()
                .map(|p| std::array::from_fn(|_| DeviceArray::zeroed(p.len()).unwrap()))
                .collect(),
            set: TensorSet::new(),
            states: states::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper {
                eps: 1e-8,
                weight_decay: WD,
            }),
        };
        let buffers: Vec<_> = run
            .params
            .iter_mut()
            .zip(run.tensors.iter_mut())
            .map(|(p, [g, m, v])| iqn_adam_kernel::Buffers {
                p,
                g: g.input(),
                m,
                v,
            })
            .collect();
        run.set.sync::<iqn_adam_kernel::Entry>(&buffers).unwrap();
        drop(buffers);
        run.set.set_clamp_scales(&MULTI_SCALES).unwrap();
        run
    }
}

impl Run for Multi<'_> {
    fn weights(&self) -> Vec<f32> {
        self.params
            .iter()
            .flat_map(|p| p.download().unwrap())
            .collect()
    }

    fn step(&mut self, grad: &[f64]) {
        let grad = f32_grad(grad);
        self.tensors[0][0].upload(&grad[..SPLIT]).unwrap();
        self.tensors[1][0].upload(&grad[SPLIT..]).unwrap();
        let s = self.rt.stream();
        self.states.advance(self.rt, s).unwrap();
        let buffers: Vec<_> = self
            .params
            .iter_mut()
            .zip(self.tensors.iter_mut())
            .map(|(p, [g, m, v])| iqn_adam_kernel::Buffers {
                p,
                g: g.input(),
                m,
                v,
            })
            .collect();
        self.rt
            .launch::<iqn_adam_kernel::Entry>(s)
            .stepped(&iqn_adam_kernel::StepScalars {}, &self.states, 0)
            .set(&mut self.set, &buffers)
            .unwrap();
        self.rt.synchronize().unwrap();
    }

    fn save(&self, ck: &mut Checkpoint) {
        let s = self.rt.stream();
        ck.save_steps(&self.states, s).unwrap();
        ck.save_clamp_scales("mlp-set", &self.set).unwrap();
        for (name, (p, [g, m, v])) in MULTI_NAMES
            .iter()
            .zip(self.params.iter().zip(&self.tensors))
        {
            let b = iqn_adam_kernel::Buffers {
                p,
                g: g.input(),
                m,
                v,
            };
            ck.save_tensor::<iqn_adam_kernel::Entry>(name, &b, Some((&self.states, 0)), s)
                .unwrap();
        }
    }

    fn restore(&mut self, ck: &Checkpoint) -> adamant_runtime::Result<()> {
        let mut restore = ck.restore();
        for (name, (p, [g, m, v])) in MULTI_NAMES
            .iter()
            .zip(self.params.iter_mut().zip(self.tensors.iter_mut()))
        {
            let mut b = iqn_adam_kernel::Buffers {
                p,
                g: g.input(),
                m,
                v,
            };
            restore.tensor::<iqn_adam_kernel::Entry>(name, &mut b)?;
        }
        restore.clamp_scales("mlp-set", &self.set)?;
        restore.steps(&self.states)?;
        restore.commit(self.rt.stream())
    }
}

/// bf16 weights rounded stochastically (the seed in the record), f32 moments, bf16 gradients,
/// all in memory the test owns (`DeviceRegion`s).
struct Bf16Sr<'rt> {
    rt: &'rt Adamant,
    p: DeviceBuffer<u16>,
    g: DeviceBuffer<u16>,
    m: DeviceBuffer<f32>,
    v: DeviceBuffer<f32>,
    states: StepStates,
    records: Records,
}

impl<'rt> Bf16Sr<'rt> {
    fn new(rt: &'rt Adamant, p0: &[f32]) -> Bf16Sr<'rt> {
        let bits: Vec<u16> = p0.iter().map(|&x| bf16::from_f32(x).to_bits()).collect();
        let n = p0.len();
        Bf16Sr {
            rt,
            p: DeviceBuffer::from_slice(&bits).unwrap(),
            g: DeviceBuffer::from_slice(&vec![0u16; n]).unwrap(),
            m: DeviceBuffer::from_slice(&vec![0f32; n]).unwrap(),
            v: DeviceBuffer::from_slice(&vec![0f32; n]).unwrap(),
            states: states::<adamw_bf16_sr::Entry>(adamw_bf16_sr::Hyper {
                eps: 1e-8,
                weight_decay: WD,
                rounding_seed: 2027,
            }),
            records: Records::single::<adamw_bf16_sr::Entry>().unwrap(),
        }
    }

    fn regions(&self) -> adamw_bf16_sr::Buffers<adamant_runtime::Raw> {
        let n = self.p.len();
        let at = |ptr: u64, storage| DeviceRegion::of(ptr, n, storage).unwrap();
        adamw_bf16_sr::Buffers {
            p: at(self.p.as_device_ptr().as_raw(), Storage::Bf16),
            g: at(self.g.as_device_ptr().as_raw(), Storage::Bf16),
            m: at(self.m.as_device_ptr().as_raw(), Storage::F32),
            v: at(self.v.as_device_ptr().as_raw(), Storage::F32),
        }
    }
}

impl Run for Bf16Sr<'_> {
    fn weights(&self) -> Vec<f32> {
        download(&self.p)
            .iter()
            .map(|&b| bf16::from_bits(b).to_f32())
            .collect()
    }

    fn step(&mut self, grad: &[f64]) {
        let bits: Vec<u16> = grad.iter().map(|&x| bf16::from_f64(x).to_bits()).collect();
        self.g.copy_from(&bits[..]).unwrap();
        let s = self.rt.stream();
        self.states.advance(self.rt, s).unwrap();
        let b = self.regions();
        // SAFETY: the buffers are this run's, alive and unused elsewhere (synchronised below).
        unsafe {
            self.rt
                .launch::<adamw_bf16_sr::Entry>(s)
                .stepped(&adamw_bf16_sr::StepScalars {}, &self.states, 0)
                .raw_buffers(&b, &self.records)
        }
        .unwrap();
        self.rt.synchronize().unwrap();
    }

    fn save(&self, ck: &mut Checkpoint) {
        let s = self.rt.stream();
        ck.save_steps(&self.states, s).unwrap();
        ck.save_regions::<adamw_bf16_sr::Entry>("mlp", &self.regions(), Some((&self.states, 0)), s)
            .unwrap();
    }

    fn restore(&mut self, ck: &Checkpoint) -> adamant_runtime::Result<()> {
        let mut restore = ck.restore();
        // SAFETY: the run's own buffers, alive and unused until `commit` returns.
        unsafe { restore.regions::<adamw_bf16_sr::Entry>("mlp", &self.regions()) }?;
        restore.steps(&self.states)?;
        restore.commit(self.rt.stream())
    }
}

const CASES: [&str; 4] = ["f32", "f32-captured", "multi", "bf16-sr"];

/// A new run of `case`, from the starting weights (`zero`: from zeros, as a resumed process
/// that has not loaded its weights yet).
fn make<'rt>(rt: &'rt Adamant, case: &str, zero: bool) -> Box<dyn Run + 'rt> {
    let p0: Vec<f32> = (0..PARAMS)
        .map(|i| if zero { 0.0 } else { init(i) })
        .collect();
    match case {
        "f32" => Box::new(Single::new(rt, false, &p0)),
        "f32-captured" => Box::new(Single::new(rt, true, &p0)),
        "multi" => Box::new(Multi::new(rt, &p0)),
        "bf16-sr" => Box::new(Bf16Sr::new(rt, &p0)),
        other => panic!("no case {other}"),
    }
}

/// Steps `from + 1 ..= to` of `run`, every weight finite and within the bound before each;
/// each step's loss (before its update).
fn train(run: &mut dyn Run, from: u32, to: u32) -> Vec<f64> {
    let mut losses = Vec::with_capacity((to - from) as usize);
    for _ in from..to {
        let w = run.weights();
        assert!(w.iter().all(|x| x.is_finite() && x.abs() <= BOUND));
        let (loss, grad) = loss_and_grad(&w);
        losses.push(loss);
        run.step(&grad);
    }
    losses
}

fn folder() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("adamant-resume-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `resume_child` in a new process: resume `case` from `from`, train to the end, save to
/// `to`.
fn resume_in_child(case: &str, from: &Path, to: &Path) {
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "resume_child",
            "--include-ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("ADAMANT_RESUME_CASE", case)
        .env("ADAMANT_RESUME_FROM", from)
        .env("ADAMANT_RESUME_TO", to)
        .status()
        .unwrap();
    assert!(status.success(), "{case}: the resuming process failed");
}

/// Every tensor of `a` equals `b`'s bit for bit, and both hold the same names.
fn assert_same(case: &str, a: &Checkpoint, b: &Checkpoint) {
    let names: Vec<&str> = a.names().collect();
    assert_eq!(names, b.names().collect::<Vec<_>>(), "{case}");
    for name in names {
        let (x, y) = (a.get(name).unwrap(), b.get(name).unwrap());
        let differing = x
            .data()
            .iter()
            .zip(y.data())
            .filter(|(p, q)| p != q)
            .count();
        assert!(
            x.kind == y.kind && x.shape == y.shape && differing == 0,
            "{case}: `{name}` differs between the resumed and the uninterrupted run \
             ({differing} bytes)"
        );
    }
    println!(
        "{case}: resumed at step {SAVE_AT}, equal at step {STEPS} ({} tensors)",
        a.names().count()
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_resumed_run_equals_the_uninterrupted_one_bit_for_bit() {
    let rt = Adamant::new().expect("a GPU");
    let dir = folder();
    for case in CASES {
        let mut whole = make(&rt, case, false);
        train(whole.as_mut(), 0, STEPS);
        let mut end = Checkpoint::new();
        whole.save(&mut end);
        drop(whole);

        let mut first = make(&rt, case, false);
        train(first.as_mut(), 0, SAVE_AT);
        let mut at = Checkpoint::new();
        first.save(&mut at);
        let saved = dir.join(format!("{case}-{SAVE_AT}.safetensors"));
        at.save(&saved).unwrap();
        drop(first);
        assert_eq!(
            at.steps_taken(if case == "multi" { "rest" } else { "mlp" })
                .unwrap(),
            SAVE_AT
        );

        let resumed = dir.join(format!("{case}-{STEPS}.safetensors"));
        resume_in_child(case, &saved, &resumed);
        assert_same(case, &Checkpoint::load(&resumed).unwrap(), &end);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The resuming half, run by `a_resumed_run_equals_the_uninterrupted_one_bit_for_bit` in a
/// process of its own; does nothing when run by itself.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn resume_child() {
    let Ok(case) = std::env::var("ADAMANT_RESUME_CASE") else {
        return;
    };
    let from = PathBuf::from(std::env::var("ADAMANT_RESUME_FROM").unwrap());
    let to = PathBuf::from(std::env::var("ADAMANT_RESUME_TO").unwrap());
    let rt = Adamant::new().expect("a GPU");
    let mut run = make(&rt, &case, true);
    run.restore(&Checkpoint::load(&from).unwrap()).unwrap();
    train(run.as_mut(), SAVE_AT, STEPS);
    let mut end = Checkpoint::new();
    run.save(&mut end);
    end.save(&to).unwrap();
}

/// A restore that fails (a file of another kernel, another length, a NaN in a moment, a
/// record of another run) leaves every device buffer and record as it was.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_failed_restore_changes_nothing_on_the_device() {
    let rt = Adamant::new().expect("a GPU");
    let mut run = make(&rt, "f32", false);
    train(run.as_mut(), 0, 20);
    let mut good = Checkpoint::new();
    run.save(&mut good);
    train(run.as_mut(), 20, 30);
    let mut before = Checkpoint::new();
    run.save(&mut before);

    let mut bad = |edit: &dyn Fn(&mut Checkpoint)| {
        let mut c = good.clone();
        edit(&mut c);
        let err = run.restore(&c).expect_err("a bad checkpoint was restored");
        let mut after = Checkpoint::new();
        run.save(&mut after);
        assert_same("after a failed restore", &after, &before);
        err
    };
    let other_kernel = bad(&|c| c.set_metadata("mlp.kernel", "iqn_adam_kernel").unwrap());
    assert!(
        matches!(
            other_kernel,
            Error::Checkpoint(CheckpointError::Metadata { .. })
        ),
        "{other_kernel}"
    );
    let nan = bad(&|c| {
        let mut v = c.f32s("mlp.exp_avg_sq", PARAMS, false).unwrap();
        v[17] = f32::NAN;
        c.remove("mlp.exp_avg_sq");
        c.insert_f32("mlp.exp_avg_sq", &v).unwrap();
    });
    assert!(
        matches!(
            nan,
            Error::Checkpoint(CheckpointError::NonFinite { index: 17, .. })
        ),
        "{nan}"
    );
    let short = bad(&|c| {
        let v = c.f32s("mlp.exp_avg", PARAMS, false).unwrap();
        c.remove("mlp.exp_avg");
        c.insert_f32("mlp.exp_avg", &v[1..]).unwrap();
    });
    assert!(
        matches!(short, Error::Checkpoint(CheckpointError::Shape { .. })),
        "{short}"
    );
    // A record of another run: the same kernel, another fixed bound (the steps' part is
    // checked after every tensor, so the tensors were queued and still nothing is written).
    let other_run = bad(&|c| {
        c.set_metadata("adamant.records.0.bound_mode", "from_q_abs_ref")
            .unwrap()
    });
    assert!(
        matches!(
            other_run,
            Error::Checkpoint(CheckpointError::Metadata { .. })
        ),
        "{other_run}"
    );

    // The good file restores, and the run goes on from step 20.
    run.restore(&good).unwrap();
    let mut restored = Checkpoint::new();
    run.save(&mut restored);
    assert_same("after a good restore", &restored, &good);
}

/// `scripts/torch_checkpoint.py`: beside the test binary in the GPU bundle
/// (`gpu-bundle/tests/..` → `gpu-bundle/scripts`), else in the source tree.
fn torch_script() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bundled = exe.parent().unwrap().join("../scripts/torch_checkpoint.py");
    if bundled.exists() {
        return bundled;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/torch_checkpoint.py")
}

/// PyTorch interchange: PyTorch's AdamW state at step 700 (`torch_checkpoint.py`'s
/// `from_torch`) continued by adamant ends where PyTorch's own continuation ends, and adamant's
/// state at step 700 continued by PyTorch (`to_torch`) ends where adamant's run ends: the loss
/// at step 1500 within 1e-4 relative, both ways.
#[test]
#[ignore = "needs a CUDA GPU and PyTorch: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_run_moves_between_pytorch_and_adamant() {
    let rt = Adamant::new().expect("a GPU");
    let dir = folder().join("torch");
    std::fs::create_dir_all(&dir).unwrap();
    let ours_at = dir.join("adamant-700.safetensors");
    let mut ours = make(&rt, "f32", false);
    let mut our_losses = train(ours.as_mut(), 0, SAVE_AT);
    let mut at = Checkpoint::new();
    ours.save(&mut at);
    at.save(&ours_at).unwrap();
    our_losses.extend(train(ours.as_mut(), SAVE_AT, STEPS));

    let theirs_at = dir.join("torch-700.safetensors");
    let json = dir.join("losses.json");
    let out = std::process::Command::new("python3")
        .arg(torch_script())
        .args([
            "mlp-demo",
            "--steps",
            &STEPS.to_string(),
            "--save-at",
            &SAVE_AT.to_string(),
        ])
        .arg("--save")
        .arg(&theirs_at)
        .arg("--resume")
        .arg(&ours_at)
        .arg("--out")
        .arg(&json)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "torch_checkpoint.py mlp-demo: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let losses: std::collections::HashMap<String, Vec<f64>> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();

    // PyTorch's state, continued here: records made for its step count, the tensors restored.
    let torch_ck = Checkpoint::load(&theirs_at).unwrap();
    let taken = torch_ck.steps_taken("mlp").unwrap();
    assert_eq!(taken, SAVE_AT);
    let mut resumed = Single::new(&rt, false, &vec![0.0; PARAMS]);
    resumed.states = support::fixed_bound_states::<attn_adam_kernel::Entry>(
        attn_adam_kernel::Hyper {
            eps: 1e-8,
            weight_decay: WD,
        },
        LR,
        BOUND,
        taken,
    );
    {
        let mut restore = torch_ck.restore();
        let mut b = attn_adam_kernel::Buffers {
            p: &mut resumed.p,
            g: resumed.g.input(),
            m: &mut resumed.m,
            v: &mut resumed.v,
        };
        restore
            .tensor::<attn_adam_kernel::Entry>("mlp", &mut b)
            .unwrap();
        restore.commit(rt.stream()).unwrap();
    }
    let continued = train(&mut resumed, SAVE_AT, STEPS);
    let last = |l: &[f64]| *l.last().unwrap();
    let rel = |a: f64, b: f64| ((a - b) / b).abs();
    let torch = &losses["torch"];
    let ours_in_torch = &losses["adamant_in_torch"];
    println!(
        "pytorch interchange at step {STEPS}: torch {:.9}, torch's state continued by adamant \
         {:.9} (rel {:.2e}); adamant {:.9}, adamant's state continued by torch {:.9} (rel \
         {:.2e}); step-1 loss torch {:.9} adamant {:.9}",
        last(torch),
        last(&continued),
        rel(last(&continued), last(torch)),
        last(&our_losses),
        last(ours_in_torch),
        rel(last(ours_in_torch), last(&our_losses)),
        torch[0],
        our_losses[0],
    );
    assert!(
        rel(torch[0], our_losses[0]) < 1e-12,
        "the same model and loss"
    );
    assert!(rel(last(&continued), last(torch)) <= 1e-4);
    assert!(rel(last(ours_in_torch), last(&our_losses)) <= 1e-4);
}

/// A snapshot (device-to-device copies in stream order, read later on another stream) holds
/// the state as it was when its copies ran, though the training went on before it was read:
/// equal, bit for bit, to a save taken at that step by a run that stopped there. The read runs
/// on another thread, which makes the context current first.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_snapshot_is_the_state_when_its_copies_ran() {
    use adamant_runtime::checkpoint::Snapshot;
    use adamant_runtime::cust::stream::StreamFlags;
    let rt = Adamant::new().expect("a GPU");
    for case in ["f32", "bf16-sr"] {
        let mut stopped = make(&rt, case, false);
        train(stopped.as_mut(), 0, 40);
        let mut expected = Checkpoint::new();
        stopped.save(&mut expected);
        drop(stopped);

        let mut run = Single::new(&rt, false, &(0..PARAMS).map(init).collect::<Vec<_>>());
        let mut sr = Bf16Sr::new(&rt, &(0..PARAMS).map(init).collect::<Vec<_>>());
        let live: &mut dyn Run = if case == "f32" { &mut run } else { &mut sr };
        train(live, 0, 40);
        let s = rt.stream();
        let mut snapshot = Snapshot::new();
        if case == "f32" {
            snapshot.steps(&run.states, s).unwrap();
            let b = attn_adam_kernel::Buffers {
                p: &run.p,
                g: run.g.input(),
                m: &run.m,
                v: &run.v,
            };
            snapshot
                .tensor::<attn_adam_kernel::Entry>("mlp", &b, Some(0), s)
                .unwrap();
        } else {
            snapshot.steps(&sr.states, s).unwrap();
            // SAFETY: the run's own buffers, alive until the snapshot's copies have run.
            unsafe { snapshot.regions::<adamw_bf16_sr::Entry>("mlp", &sr.regions(), Some(0), s) }
                .unwrap();
        }
        let pending = snapshot.finish(s).unwrap();
        let ctx = rt.context().clone();
        let reader = std::thread::spawn(move || {
            adamant_runtime::cust::context::CurrentContext::set_current(&ctx).unwrap();
            let side = Stream::new(StreamFlags::NON_BLOCKING, None).unwrap();
            pending.read(&side).unwrap()
        });
        let live: &mut dyn Run = if case == "f32" { &mut run } else { &mut sr };
        train(live, 40, 60); // the run goes on meanwhile
        let taken = reader.join().unwrap();
        assert_same(&format!("{case} snapshot"), &taken, &expected);
    }
}
