//! The performance benchmark: our kernels timed with CUDA events, warm-up and medians,
//! hot and cold (L2 flushed), next to the device's copy bandwidth measured in the same run.
//! Writes `<out>/bench_rust.json` (schema in bench/README.md) and prints a short table;
//! bench/report.py sets it beside PyTorch's figures from bench/torch_bench.py.
//!
//! Data is never zeros: buffers are filled with non-zero constants on the device.
use std::path::{Path, PathBuf};

#[path = "bench_parts/checkpoint.rs"]
mod checkpoint;
#[path = "bench_parts/exact_half.rs"]
mod exact_half;
#[path = "bench_parts/half.rs"]
mod half;
#[path = "bench_parts/prepared.rs"]
mod prepared;
#[path = "bench_parts/rl_bf16.rs"]
mod rl_bf16;

use adamant::build::ptxas::{Ptxas, DEFAULT_ARCH};
use adamant::device::abi::ArgValue;
use adamant::kernels::fused::adamant_fused_step;
use adamant::kernels::optimizers::{
    attn_adam_kernel, curiosity_adam_step, dqn_adam_update_kernel, iql_adam_kernel, iqn_adam_kernel,
};
use adamant::rl::{SeedLaunchers, SEED_TABLE};
use adamant::runtime::nan_check::{NanChecker, SlotBindings};
use adamant::runtime::{
    adam_scalars, AdamHyper, Adamant, Branch, ClampPolicy, GradientGuard, GuardSpec, QAbsRef,
    Records, StepBound, StepSpec, StepStates, TensorSet, PTX,
};
use adamant::runtime::{
    ChunkSize, DeviceArray, FusedSet, FusedTensor, Owned, ParamBuffer, ADAM_F32_BYTES_PER_ELEMENT,
    FUSED_CHUNK_BYTES,
};
use anyhow::{Context, Result};
use clap::Parser;
use cust::memory::DeviceBuffer;
use cust::stream::Stream;
use serde_json::{json, Value};

#[derive(Parser)]
struct Args {
    /// Folder for bench_rust.json.
    #[arg(long, default_value = ".")]
    out: PathBuf,
    /// The RL parameter set (shapes) and the check slots.
    #[arg(long, default_value = "bench/rl_set.json")]
    set: PathBuf,
    /// Fewer repetitions and sizes (a smoke run).
    #[arg(long)]
    quick: bool,
    /// Run only these parts (comma-separated: sizes, rl_set, four_groups, check, half, rl_bf16,
    /// session, checkpoint), for a profiler; all by default.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// With `rl_bf16`: only the bf16 set at the runtime's chunk, so that a profiler's first
    /// `adamant_fused_mixed` launch is the 14 B path's.
    #[arg(long)]
    rl_bf16_only_16bit: bool,
}

impl Args {
    fn runs(&self, part: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|p| p == part)
    }
}

const FLUSH_BYTES: usize = 256 << 20;

struct Timer<'a> {
    rt: &'a Adamant,
    reps: usize,
    flush: DeviceBuffer<u32>,
    /// Samples whose gate opened by its timeout rather than by the host (the timed work's host
    /// side took longer than it): their device time may hold launch latency. Reported.
    exposed: usize,
}

/// Holds the stream at a host function until [`Gate::open`] (or drop): the timed work is
/// queued behind it, so the GPU runs the start event, the work and the stop event back to back
/// and no host time or launch latency falls between them, on a fast host or a slow one. (The
/// 128 small memsets this replaces ran faster on the GPU than the host issued them: on a slow
/// host the GPU caught up, and a 2^10 launch's "device" time held 5 µs of host time.) The
/// PyTorch side does the same with a spin kernel and drops the samples where the GPU caught up.
struct Gate {
    open: std::sync::Arc<std::sync::atomic::AtomicBool>,
    timed_out: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Gate {
    fn new(stream: &Stream) -> Result<Gate> {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let (open, timed_out) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (o, t) = (open.clone(), timed_out.clone());
        stream.add_callback(Box::new(move || {
            // A timeout, so that a timed operation that waits for the stream cannot deadlock.
            let since = std::time::Instant::now();
            while !o.load(Ordering::Acquire) {
                if since.elapsed() > std::time::Duration::from_millis(200) {
                    t.store(true, Ordering::Release);
                    return;
                }
                std::hint::spin_loop();
            }
        }))?;
        Ok(Gate { open, timed_out })
    }

    /// Opens the gate; whether it had timed out already.
    fn open(&self) -> bool {
        use std::sync::atomic::Ordering;
        self.open.store(true, Ordering::Release);
        self.timed_out.load(Ordering::Acquire)
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.open();
    }
}

impl Timer<'_> {
    /// Median µs of `op` in device time (events on the runtime's stream), after 3 warm-ups;
    /// with `cold` the L2 is flushed (a 256 MiB memset) before each repetition, outside the
    /// events.
    fn median_us(&mut self, cold: bool, mut op: impl FnMut(&Stream) -> Result<()>) -> Result<f64> {
        let stream = self.rt.stream();
        for _ in 0..3 {
            op(stream)?;
        }
        let mut times = Vec::with_capacity(self.reps);
        for _ in 0..self.reps {
            stream.synchronize()?;
            if cold {
                // SAFETY: our own scratch buffer, only ever overwritten.
                unsafe { self.flush.set_32_async(0x3f00_0000, stream)? };
            }
            let start = cust::event::Event::new(cust::event::EventFlags::DEFAULT)?;
            let stop = cust::event::Event::new(cust::event::EventFlags::DEFAULT)?;
            let gate = Gate::new(stream)?;
            start.record(stream)?;
            op(stream)?;
            stop.record(stream)?;
            if gate.open() {
                self.exposed += 1;
            }
            stop.synchronize()?;
            times.push(stop.elapsed_time_f32(&start)? as f64 * 1e3);
        }
        Ok(median(times))
    }

    /// Median µs of `op` in host time, from an idle GPU to the end of its work: what an eager
    /// training loop pays, host-side launch cost included.
    fn host_median_us(&mut self, mut op: impl FnMut(&Stream) -> Result<()>) -> Result<f64> {
        let stream = self.rt.stream();
        for _ in 0..3 {
            op(stream)?;
        }
        let mut times = Vec::with_capacity(self.reps);
        for _ in 0..self.reps {
            stream.synchronize()?;
            let start = std::time::Instant::now();
            op(stream)?;
            stream.synchronize()?;
            times.push(start.elapsed().as_secs_f64() * 1e6);
        }
        Ok(median(times))
    }
}

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn hyper() -> AdamHyper {
    AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.01, 10).expect("valid")
}

/// One step-state record per bound, each made for `attn_adam_kernel` with [`hyper`]'s values.
fn attn_states(bounds: &[StepBound]) -> Result<StepStates> {
    let h = hyper();
    let specs = bounds
        .iter()
        .map(|&bound| {
            StepSpec::adam(&h, bound)?.with_kernel::<attn_adam_kernel::Entry>(
                attn_adam_kernel::Hyper {
                    eps: h.eps,
                    weight_decay: h.weight_decay,
                },
            )
        })
        .collect::<adamant::runtime::Result<Vec<_>>>()?;
    Ok(StepStates::new(&specs, QAbsRef::Owned { initial: 1.0 })?)
}

fn main() -> Result<()> {
    let args = Args::parse();
    let rt = Adamant::new().context("starting the adamant runtime")?;
    let reps = if args.quick { 10 } else { 50 };
    let mut timer = Timer {
        rt: &rt,
        reps,
        flush: DeviceBuffer::zeroed(FLUSH_BYTES / 4)?,
        exposed: 0,
    };
    let mut out = json!({
        "device": rt.device_name(),
        "date": std::process::Command::new("date").arg("-u").arg("+%F %T").output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default(),
        "reps": reps,
    });

    // Copy bandwidth: bytes read + written over the time of a 2^28-float device copy.
    let n = 1usize << 28;
    let (src, dst) = (DeviceArray::filled(n, 0.25)?, DeviceArray::filled(n, 0.5)?);
    let copy_us = timer.median_us(true, |s| {
        // SAFETY: two distinct 1 GiB allocations of the same size.
        let r = unsafe {
            cust::sys::cuMemcpyDtoDAsync_v2(dst.device_ptr(), src.device_ptr(), n * 4, s.as_inner())
        };
        anyhow::ensure!(r == cust::sys::CUresult::CUDA_SUCCESS, "copy: {r:?}");
        Ok(())
    })?;
    drop((src, dst));
    let copy_gbps = 8.0 * n as f64 / copy_us / 1e3;
    out["copy"] = json!({"elements": n, "median_us": copy_us, "gbps": copy_gbps});
    println!("copy 2^28: {copy_us:.1} µs, {copy_gbps:.0} GB/s");

    if args.runs("sizes") {
        adam_sizes(&rt, &mut timer, &mut out, args.quick)?;
    }
    if args.runs("rl_set") {
        rl_set(&rt, &mut timer, &mut out, &args.set)?;
    }
    // Not yet run on a GPU when written: an error is recorded, not fatal to the rest.
    if args.runs("four_groups") {
        if let Err(e) = four_groups(&rt, &mut timer, &mut out) {
            println!("four groups: {e:#}");
            out["four_groups"] = json!({"error": format!("{e:#}")});
        }
    }
    if args.runs("check") {
        check(&rt, &mut timer, &mut out, &args.set, copy_gbps)?;
    }
    // First run with this session's code: an error is recorded, not fatal to the rest.
    if args.runs("half") {
        if let Err(e) = half::half(&rt, &mut timer, &mut out, copy_gbps) {
            println!("half: {e:#}");
            out["half"] = json!({"error": format!("{e:#}")});
        }
        if let Err(e) = exact_half::exact_half(&rt, &mut timer, &mut out, copy_gbps) {
            println!("exact half: {e:#}");
            out["exact_half"] = json!({"error": format!("{e:#}")});
        }
    }
    // First run with this session's code: an error is recorded, not fatal to the rest.
    if args.runs("rl_bf16") {
        if let Err(e) = rl_bf16::rl_bf16(
            &rt,
            &mut timer,
            &mut out,
            &args.set,
            copy_gbps,
            args.rl_bf16_only_16bit,
        ) {
            println!("RL set in bf16: {e:#}");
            out["rl_bf16"] = json!({"error": format!("{e:#}")});
        }
    }
    if args.runs("session") {
        session(&rt, &mut timer, &mut out, &args.set)?;
    }
    if args.runs("checkpoint") {
        if let Err(e) = checkpoint::checkpoint(&rt, &mut out) {
            println!("checkpoint: {e:#}");
            out["checkpoint"] = json!({"error": format!("{e:#}")});
        }
    }
    registers(&mut out);
    out["method"] = json!({"gate": "host function", "exposed_samples": timer.exposed});
    println!(
        "device-time samples whose gate timed out: {}",
        timer.exposed
    );

    std::fs::create_dir_all(&args.out)?;
    let path = args.out.join("bench_rust.json");
    std::fs::write(&path, serde_json::to_string_pretty(&out)?)?;
    println!("wrote {}", path.display());
    Ok(())
}

/// One buffer set of `attn_adam_kernel` per size: hot, cold, and graph replay.
fn adam_sizes(rt: &Adamant, timer: &mut Timer, out: &mut Value, quick: bool) -> Result<()> {
    let policy = ClampPolicy::from_isv(1.0);
    let scalars = adam_scalars!(attn_adam_kernel, hyper(), weight_decay: hyper().weight_decay)?;
    let mut rows = vec![];
    let sizes: Vec<u32> = if quick {
        vec![10, 20, 28]
    } else {
        (10..=30).step_by(2).collect()
    };
    for log2 in sizes {
        let n = 1usize << log2;
        let (mut p, g) = (ParamBuffer::filled(n, 0.5)?, DeviceArray::filled(n, 0.01)?);
        let (mut m, mut v) = (
            DeviceArray::filled(n, 0.001)?,
            DeviceArray::filled(n, 1e-4)?,
        );
        let buffers = attn_adam_kernel::Buffers {
            p: &mut p,
            g: g.input(),
            m: &mut m,
            v: &mut v,
        };
        // Every launch of this size (eager, graph, clamp on and off) runs on the one stream.
        let records = Records::single::<attn_adam_kernel::Entry>()?;
        let mut launch = |s: &Stream| -> Result<()> {
            rt.launch::<attn_adam_kernel::Entry>(s)
                .plain(&scalars, policy)
                .buffers(&buffers, &records)?;
            Ok(())
        };
        let hot = timer.median_us(false, &mut launch)?;
        let cold = timer.median_us(true, &mut launch)?;
        // A graph replays the stepped entry (a plain Adam launch, whose bias corrections a
        // replay would freeze, is refused in a capture): one record made for the kernel,
        // advanced once, so the graph times the update alone.
        let graph_hot = {
            let states = attn_states(&[StepBound::Policy(policy)])?;
            states.advance(rt, rt.stream())?;
            let k = attn_adam_kernel::StepScalars {};
            let graph = rt.capture(vec![Box::new(|s: &Stream| {
                rt.launch::<attn_adam_kernel::Entry>(s)
                    .stepped(&k, &states, 0)
                    .buffers(&buffers, &records)
                    .map(|_| ())
            })])?;
            timer.median_us(false, |s| Ok(graph.launch(s)?))?
        };
        // The self-protecting step: the guard pass (non-finite skip and global-norm clipping)
        // over the gradients, the advance, the update, in one graph (the issue's budget: one
        // read of the gradients at the copy bandwidth plus 2 µs over the unguarded step).
        let (graph_guarded, graph_advanced) = {
            let h = hyper();
            let spec = StepSpec::adam(&h, StepBound::Policy(policy))?
                .with_kernel::<attn_adam_kernel::Entry>(attn_adam_kernel::Hyper {
                    eps: h.eps,
                    weight_decay: h.weight_decay,
                })?;
            let guarded = spec.clone().guarded(GuardSpec {
                skip_non_finite: true,
                max_norm: Some(1e3),
                loss_scale: None,
            })?;
            let unguarded = StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 })?;
            let states = StepStates::new(&[guarded], QAbsRef::Owned { initial: 1.0 })?;
            let guard = GradientGuard::new(&[&g])?;
            let k = attn_adam_kernel::StepScalars {};
            let graph = rt.capture(vec![Box::new(|s: &Stream| {
                guard.enqueue_and_advance(rt, s, &states)?;
                rt.launch::<attn_adam_kernel::Entry>(s)
                    .stepped(&k, &states, 0)
                    .buffers(&buffers, &records)
                    .map(|_| ())
            })])?;
            let guarded_us = timer.median_us(false, |s| Ok(graph.launch(s)?))?;
            let graph = rt.capture(vec![Box::new(|s: &Stream| {
                unguarded.advance(rt, s)?;
                rt.launch::<attn_adam_kernel::Entry>(s)
                    .stepped(&k, &unguarded, 0)
                    .buffers(&buffers, &records)
                    .map(|_| ())
            })])?;
            (
                guarded_us,
                timer.median_us(false, |s| Ok(graph.launch(s)?))?,
            )
        };
        let bytes = 28 * n;
        println!(
            "adam 2^{log2}: hot {hot:.1} µs, cold {cold:.1} µs ({:.0} GB/s), graph {graph_hot:.1} \
             µs; graph with advance {graph_advanced:.1} µs, guarded (guard + advance + update) \
             {graph_guarded:.1} µs ({:.0} GB/s at 32 B/element)",
            bytes as f64 / cold / 1e3,
            32.0 * n as f64 / graph_guarded / 1e3
        );
        rows.push(
            json!({"log2": log2, "elements": n, "hot_us": hot, "cold_us": cold,
                         "graph_hot_us": graph_hot, "graph_advanced_us": graph_advanced,
                         "graph_guarded_us": graph_guarded, "bytes": bytes}),
        );
        if log2 == 28 {
            out["adam_large"] =
                json!({"elements": n, "median_us": cold, "gbps": bytes as f64 / cold / 1e3});
            // The clamp epilogue's cost: the same launch with the bound on and off, interleaved.
            let off = ClampPolicy::disabled("benchmark: the clamp's cost");
            let (mut on_t, mut off_t) = (vec![], vec![]);
            for _ in 0..5 {
                on_t.push(timer.median_us(false, |s| {
                    Ok(rt
                        .launch::<attn_adam_kernel::Entry>(s)
                        .plain(&scalars, policy)
                        .buffers(&buffers, &records)
                        .map(|_| ())?)
                })?);
                off_t.push(timer.median_us(false, |s| {
                    Ok(rt
                        .launch::<attn_adam_kernel::Entry>(s)
                        .plain(&scalars, off)
                        .buffers(&buffers, &records)
                        .map(|_| ())?)
                })?);
            }
            on_t.sort_by(f64::total_cmp);
            off_t.sort_by(f64::total_cmp);
            out["clamp_cost"] = json!({"elements": n, "on_us": on_t[2], "off_us": off_t[2]});
            println!("clamp on {:.1} µs, off {:.1} µs", on_t[2], off_t[2]);
        }
    }
    out["adam_sizes"] = json!(rows);
    Ok(())
}

/// A tensor's buffers (p, g, m, v, and v_max for AMSGrad).
struct Tensor {
    p: ParamBuffer,
    g: DeviceArray,
    m: DeviceArray,
    v: DeviceArray,
    v_max: Option<DeviceArray>,
}

fn tensor(n: usize, amsgrad: bool) -> Result<Tensor> {
    Ok(Tensor {
        p: ParamBuffer::filled(n, 0.1)?,
        g: DeviceArray::filled(n, 0.01)?,
        m: DeviceArray::filled(n, 0.001)?,
        v: DeviceArray::filled(n, 1e-4)?,
        v_max: if amsgrad {
            Some(DeviceArray::filled(n, 2e-4)?)
        } else {
            None
        },
    })
}

/// The RL parameter set: every tensor a separate allocation (as in PyTorch), one multi-tensor
/// launch per kernel (the decision transformer apart: its clamp is off), eager and as a graph.
/// One tensor of the RL set's file (`bench/rl_set.json`).
pub(crate) struct RlTensor {
    /// The kernel its model's optimizer launches.
    kernel: String,
    /// Its model's name.
    model: Option<String>,
    /// Its element count (the product of its shape).
    pub(crate) elements: usize,
}

/// Every tensor of the RL set's file, in the file's order.
pub(crate) fn rl_tensors(set: &Path) -> Result<Vec<RlTensor>> {
    let spec: Value =
        serde_json::from_str(&std::fs::read_to_string(set).context("reading the RL set")?)?;
    let mut out = Vec::new();
    for model in spec["models"].as_array().context("models")? {
        let kernel = model["kernel"].as_str().context("kernel")?;
        for t in model["tensors"].as_array().context("tensors")? {
            out.push(RlTensor {
                kernel: kernel.to_string(),
                model: model["model"].as_str().map(str::to_string),
                elements: t["shape"]
                    .as_array()
                    .context("shape")?
                    .iter()
                    .map(|d| d.as_u64().unwrap_or(1) as usize)
                    .product(),
            });
        }
    }
    Ok(out)
}

fn rl_set(rt: &Adamant, timer: &mut Timer, out: &mut Value, set: &Path) -> Result<()> {
    let (mut dqn, mut iqn, mut iql, mut attn, mut cur, mut dt) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let (mut elements, mut bytes, mut tensors) = (0usize, 0usize, 0usize);
    for t in rl_tensors(set)? {
        let n = t.elements;
        let amsgrad = t.kernel == "curiosity_adam_step";
        let list = match (t.kernel.as_str(), t.model.as_deref()) {
            (_, Some("decision_transformer")) => &mut dt,
            ("dqn_adam_update_kernel", _) => &mut dqn,
            ("iqn_adam_kernel", _) => &mut iqn,
            ("iql_adam_kernel", _) => &mut iql,
            ("curiosity_adam_step", _) => &mut cur,
            _ => &mut attn,
        };
        list.push(tensor(n, amsgrad)?);
        elements += n;
        bytes += if amsgrad { 36 * n } else { 28 * n };
        tensors += 1;
    }
    let isv = ClampPolicy::from_isv(2.0);
    let dt_policy = ClampPolicy::disabled(adamant::rl::DT_CLAMP_DISABLED);
    let h = hyper();
    // One step-state record per launch, made for its kernel (the stepped entries read every
    // scalar from it, so a graph of them replays correctly), advanced once below.
    let (eps, weight_decay) = (h.eps, h.weight_decay);
    let spec = |bound| StepSpec::adam(&h, StepBound::Policy(bound));
    let attn_h = attn_adam_kernel::Hyper { eps, weight_decay };
    let states = StepStates::new(
        &[
            spec(isv)?.with_kernel::<dqn_adam_update_kernel::Entry>(
                dqn_adam_update_kernel::Hyper { eps, weight_decay },
            )?,
            spec(isv)?.with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper {
                eps,
                weight_decay,
            })?,
            spec(isv)?.with_kernel::<iql_adam_kernel::Entry>(iql_adam_kernel::Hyper {
                eps,
                weight_decay,
                grad_clip: 1.0,
            })?,
            spec(isv)?.with_kernel::<attn_adam_kernel::Entry>(attn_h)?,
            spec(isv)?
                .with_kernel::<curiosity_adam_step::Entry>(curiosity_adam_step::Hyper { eps })?,
            spec(dt_policy)?.with_kernel::<attn_adam_kernel::Entry>(attn_h)?,
        ],
        QAbsRef::Owned { initial: 1.0 },
    )?;
    states.advance(rt, rt.stream())?;
    let dqn_s = dqn_adam_update_kernel::StepScalars {
        grad_scale: adamant::device::abi::UniformPtr::NULL,
    };
    let (iqn_s, iql_s) = (
        iqn_adam_kernel::StepScalars {},
        iql_adam_kernel::StepScalars {},
    );
    let (attn_s, cur_s) = (
        attn_adam_kernel::StepScalars {},
        curiosity_adam_step::StepScalars {},
    );
    macro_rules! bufs {
        ($list:expr, $k:ident) => {
            $list
                .iter_mut()
                .map(|t| $k::Buffers {
                    p: &mut t.p,
                    g: t.g.input(),
                    m: &mut t.m,
                    v: &mut t.v,
                })
                .collect::<Vec<_>>()
        };
    }
    let (dqn_b, iqn_b, iql_b) = (
        bufs!(dqn, dqn_adam_update_kernel),
        bufs!(iqn, iqn_adam_kernel),
        bufs!(iql, iql_adam_kernel),
    );
    let (attn_b, dt_b) = (bufs!(attn, attn_adam_kernel), bufs!(dt, attn_adam_kernel));
    let cur_b: Vec<_> = cur
        .iter_mut()
        .map(|t| curiosity_adam_step::Buffers {
            p: &mut t.p,
            g: t.g.input(),
            m: &mut t.m,
            v: &mut t.v,
            v_max: t.v_max.as_mut().expect("AMSGrad tensors have v_max"),
        })
        .collect();
    let launches = RlStep {
        rt,
        dqn: (dqn_b, dqn_s),
        iqn: (iqn_b, iqn_s),
        iql: (iql_b, iql_s),
        attn: (attn_b, attn_s),
        cur: (cur_b, cur_s),
        dt: (dt_b, attn_s),
        states: &states,
    };
    let mut sets: [TensorSet; 6] = Default::default();
    let eager = timer.host_median_us(|s| {
        for launch in launches.branches(&mut sets) {
            launch(s)?;
        }
        Ok(())
    })?;
    let serial = {
        let graph = rt.capture(vec![Box::new(|s: &Stream| {
            launches
                .branches(&mut sets)
                .into_iter()
                .try_for_each(|launch| launch(s))
        })])?;
        timer.median_us(false, |s| Ok(graph.launch(s)?))?
    };
    let parallel = {
        let graph = rt.capture(launches.branches(&mut sets))?;
        timer.reps *= 4;
        let t = timer.median_us(false, |s| Ok(graph.launch(s)?))?;
        timer.reps /= 4;
        t
    };
    let rebuilds: u64 = sets.iter().map(TensorSet::rebuilds).sum();
    println!(
        "RL set ({tensors} tensors, {elements} elements): eager {eager:.1} µs, graph {serial:.1} µs serial, {parallel:.1} µs parallel branches ({rebuilds} table builds)"
    );
    // The same step as one launch of the fused entry: every tensor with its launch's rule and
    // record.
    let mut fused: Vec<FusedTensor<'_>> = Vec::new();
    fused.extend(FusedTensor::group::<dqn_adam_update_kernel::Entry>(
        &launches.dqn.0,
        &launches.dqn.1,
        0,
    )?);
    fused.extend(FusedTensor::group::<iqn_adam_kernel::Entry>(
        &launches.iqn.0,
        &launches.iqn.1,
        1,
    )?);
    fused.extend(FusedTensor::group::<iql_adam_kernel::Entry>(
        &launches.iql.0,
        &launches.iql.1,
        2,
    )?);
    fused.extend(FusedTensor::group::<attn_adam_kernel::Entry>(
        &launches.attn.0,
        &launches.attn.1,
        3,
    )?);
    fused.extend(FusedTensor::group::<curiosity_adam_step::Entry>(
        &launches.cur.0,
        &launches.cur.1,
        4,
    )?);
    fused.extend(FusedTensor::group::<attn_adam_kernel::Entry>(
        &launches.dt.0,
        &launches.dt.1,
        5,
    )?);
    let mut fset = FusedSet::new();
    let (fused_eager, fused_graph) = time_fused(rt, timer, &mut fset, &fused, &states)?;
    println!(
        "RL set, one fused launch: eager {fused_eager:.1} µs, graph {fused_graph:.1} µs ({} table builds)",
        fset.rebuilds()
    );
    // The same graph with other chunk sizes, one element count for every tensor (larger: fewer
    // blocks, each paying its start and flush once; 1024: one group of four per thread, as a
    // single-buffer launch below 2^22; 4096: the default's for the f32 Adam tensors, which gives
    // the AMSGrad ones 3072), then twice the default's byte budget.
    let mut by_chunk = serde_json::Map::new();
    for chunk in [1024usize, 2048, 4096, 8192, 32768] {
        let mut set = FusedSet::with_chunk_elements(chunk)?;
        let (_, t) = time_fused(rt, timer, &mut set, &fused, &states)?;
        println!("RL set, one fused launch, chunks of {chunk}: graph {t:.1} µs");
        by_chunk.insert(chunk.to_string(), json!(t));
    }
    let twice = FUSED_CHUNK_BYTES * 2;
    let (_, t) = time_fused(
        rt,
        timer,
        &mut FusedSet::with_chunk_size(ChunkSize::Bytes(twice))?,
        &fused,
        &states,
    )?;
    println!("RL set, one fused launch, chunks of {twice} bytes: graph {t:.1} µs");
    by_chunk.insert(format!("{twice} bytes"), json!(t));
    // Capped grids: each block takes chunks in turn, starting and publishing once.
    let mut by_grid = serde_json::Map::new();
    let sms = rt.multiprocessors();
    for chunk in [1024usize, 2048, 4096, 8192] {
        for per_sm in [2u32, 3, 4, 8] {
            let blocks = std::num::NonZeroU32::new(sms * per_sm).context("no multiprocessor")?;
            let mut set = FusedSet::with_chunk_elements(chunk)?.with_max_blocks(blocks);
            let (_, t) = time_fused(rt, timer, &mut set, &fused, &states)?;
            println!("RL set, one fused launch, chunks of {chunk}, {per_sm} blocks per SM: graph {t:.1} µs");
            by_grid.insert(format!("{chunk}x{per_sm}"), json!(t));
        }
    }
    out["rl_set"] = json!({"tensors": tensors, "elements": elements, "bytes": bytes,
        "eager_us": eager, "graph_serial_us": serial, "graph_us": parallel.min(serial),
        "graph_parallel_us": parallel, "launches": 6, "table_builds": rebuilds,
        "fused_eager_us": fused_eager, "fused_graph_us": fused_graph,
        // The f32 Adam tensors' chunk (most of the set's): the no-arithmetic floor's shape to
        // compare with (bench/report.py).
        "fused_chunk_elements": fset.chunk_size().elements_for(ADAM_F32_BYTES_PER_ELEMENT),
        "fused_chunk_size": format!("{:?}", fset.chunk_size()),
        "fused_graph_us_by_chunk": by_chunk,
        "fused_graph_us_by_chunk_x_blocks_per_sm": by_grid,
        "fused_table_builds": fset.rebuilds()});
    Ok(())
}

/// One fused launch of adamant's set over `tensors`: its eager host time (which also builds the
/// set's tables), then its graph replay's device time.
fn time_fused(
    rt: &Adamant,
    timer: &mut Timer,
    set: &mut FusedSet,
    tensors: &[FusedTensor<'_>],
    states: &StepStates,
) -> Result<(f64, f64)> {
    let eager = timer.host_median_us(|s| {
        rt.launch_fused::<adamant_fused_step::Entry>(s, set, tensors, states)?;
        Ok(())
    })?;
    let graph = rt.capture(vec![Box::new(|s: &Stream| {
        rt.launch_fused::<adamant_fused_step::Entry>(s, set, tensors, states)
            .map(|_| ())
    })])?;
    timer.reps *= 4;
    let replay = timer.median_us(false, |s| Ok(graph.launch(s)?));
    timer.reps /= 4;
    Ok((eager, replay?))
}

/// `bench/four_groups.json`: 200 tensors of a 50-layer model in four parameter groups (AdamW,
/// AdamW without decay on the biases and norms, clipped Adam with L2 decay, AMSGrad), each with
/// its own record: one fused launch, eager and as a graph. `torch_bench.py` runs the same set
/// with PyTorch's fused optimizers.
fn four_groups(rt: &Adamant, timer: &mut Timer, out: &mut Value) -> Result<()> {
    let spec: Value = serde_json::from_str(
        &std::fs::read_to_string("bench/four_groups.json").context("reading the four-group set")?,
    )?;
    let num = |v: &Value| v.as_f64().context("a number");
    let layers = spec["layers"].as_u64().context("layers")? as usize;
    let weight: usize = spec["weight"]
        .as_array()
        .context("weight")?
        .iter()
        .map(|d| d.as_u64().unwrap_or(1) as usize)
        .product();
    let vector = spec["vector"].as_u64().context("vector")? as usize;
    // The groups in record order; each tensor names its group by its record.
    let names = ["decay", "no_decay", "clipped", "amsgrad"];
    let record_of = |name: &str| names.iter().position(|n| *n == name).expect("a group");
    let (no_decay, clipped_at, amsgrad) = (
        record_of("no_decay"),
        record_of("clipped"),
        record_of("amsgrad"),
    );
    let g = |name: &str| &spec["groups"][name];
    let hyper = |name: &str| -> Result<AdamHyper> {
        let wd = num(&g(name)["weight_decay"])? as f32;
        Ok(AdamHyper::new(
            num(&g(name)["lr"])? as f32,
            0.9,
            0.999,
            1e-8,
            wd,
            1,
        )?)
    };
    let bound = StepBound::Policy(ClampPolicy::Fixed { bound: 100.0 });
    let spec_of = |name: &str| -> Result<StepSpec> { Ok(StepSpec::adam(&hyper(name)?, bound)?) };
    let attn = |name: &str| -> Result<StepSpec> {
        let h = hyper(name)?;
        Ok(
            spec_of(name)?.with_kernel::<attn_adam_kernel::Entry>(attn_adam_kernel::Hyper {
                eps: h.eps,
                weight_decay: h.weight_decay,
            })?,
        )
    };
    let clipped = hyper("clipped")?;
    let states = StepStates::new(
        &[
            attn("decay")?,
            attn("no_decay")?,
            spec_of("clipped")?.with_kernel::<iql_adam_kernel::Entry>(iql_adam_kernel::Hyper {
                eps: clipped.eps,
                weight_decay: clipped.weight_decay,
                grad_clip: num(&g("clipped")["grad_clip"])? as f32,
            })?,
            spec_of("amsgrad")?.with_kernel::<curiosity_adam_step::Entry>(
                curiosity_adam_step::Hyper {
                    eps: hyper("amsgrad")?.eps,
                },
            )?,
        ],
        QAbsRef::Owned { initial: 1.0 },
    )?;
    states.advance(rt, rt.stream())?;
    // Each layer's weight goes to the group whose layer range holds it; its vectors to no_decay.
    let group_of_layer = |l: usize| -> Result<usize> {
        for (i, name) in names.iter().enumerate() {
            if let Some(r) = g(name)["weights_of_layers"].as_array() {
                let (a, b) = (r[0].as_u64().unwrap_or(0), r[1].as_u64().unwrap_or(0));
                if (a..b).contains(&(l as u64)) {
                    return Ok(i);
                }
            }
        }
        anyhow::bail!("layer {l} is in no group")
    };
    let mut tensors: Vec<(usize, Tensor)> = Vec::new();
    for l in 0..layers {
        let group = group_of_layer(l)?;
        tensors.push((group, tensor(weight, group == amsgrad)?));
        for _ in 0..3 {
            tensors.push((no_decay, tensor(vector, false)?));
        }
    }
    let elements: usize = tensors.iter().map(|(_, t)| t.p.len()).sum();
    let bytes: usize = tensors
        .iter()
        .map(|(g, t)| if *g == amsgrad { 36 } else { 28 } * t.p.len())
        .sum();
    let (mut adamw, mut clip, mut ams) = (Vec::new(), Vec::new(), Vec::new());
    for (group, t) in tensors.iter_mut() {
        let (p, g, m, v) = (&mut t.p, t.g.input(), &mut t.m, &mut t.v);
        let r = *group;
        if r == clipped_at {
            clip.push((r, iql_adam_kernel::Buffers { p, g, m, v }));
        } else if r == amsgrad {
            let v_max = t.v_max.as_mut().context("AMSGrad tensors have v_max")?;
            ams.push((r, curiosity_adam_step::Buffers { p, g, m, v, v_max }));
        } else {
            adamw.push((r, attn_adam_kernel::Buffers { p, g, m, v }));
        }
    }
    let mut fused: Vec<FusedTensor<'_>> = Vec::new();
    for (r, b) in &adamw {
        fused.push(FusedTensor::new::<attn_adam_kernel::Entry>(
            b,
            &attn_adam_kernel::StepScalars {},
            *r,
        )?);
    }
    for (r, b) in &clip {
        fused.push(FusedTensor::new::<iql_adam_kernel::Entry>(
            b,
            &iql_adam_kernel::StepScalars {},
            *r,
        )?);
    }
    for (r, b) in &ams {
        let s = curiosity_adam_step::StepScalars {};
        fused.push(FusedTensor::new::<curiosity_adam_step::Entry>(b, &s, *r)?);
    }
    let n_tensors = fused.len();
    let (eager, graph_us) = time_fused(rt, timer, &mut FusedSet::new(), &fused, &states)?;
    println!(
        "four groups ({n_tensors} tensors, {elements} elements, 3 rules, one fused launch): eager {eager:.1} µs, graph {graph_us:.1} µs"
    );
    // The same launch with other chunks and with capped grids (blocks taking the many small
    // tensors' chunks in turn, starting and publishing once).
    let mut variants = serde_json::Map::new();
    let cap = std::num::NonZeroU32::new(rt.multiprocessors() * 8).context("no multiprocessor")?;
    let cap3 = std::num::NonZeroU32::new(rt.multiprocessors() * 3).context("no multiprocessor")?;
    for (name, set) in [
        ("chunks of 2048", FusedSet::with_chunk_elements(2048)?),
        ("chunks of 4096", FusedSet::with_chunk_elements(4096)?),
        ("chunks of 8192", FusedSet::with_chunk_elements(8192)?),
        ("chunks of 16384", FusedSet::with_chunk_elements(16384)?),
        ("8 blocks per SM", FusedSet::new().with_max_blocks(cap)),
        ("3 blocks per SM", FusedSet::new().with_max_blocks(cap3)),
    ] {
        let mut set = set;
        let (_, us) = time_fused(rt, timer, &mut set, &fused, &states)?;
        println!("four groups, one fused launch, {name}: graph {us:.1} µs");
        variants.insert(name.to_string(), json!(us));
    }
    out["four_groups"] = json!({"tensors": n_tensors, "elements": elements, "bytes": bytes,
        "groups": 4, "launches": 1, "eager_us": eager, "graph_us": graph_us,
        "graph_us_variants": variants});
    Ok(())
}

/// A launch's tensors and scalars.
type Launch<B, S> = (Vec<B>, S);

/// The RL set's step: one multi-tensor launch per kernel (the decision transformer apart: its
/// clamp is off). The one list of what a step launches; eager, serial graph and parallel graph
/// all run these.
struct RlStep<'a> {
    rt: &'a Adamant,
    dqn: Launch<dqn_adam_update_kernel::Buffers<Owned<'a>>, dqn_adam_update_kernel::StepScalars>,
    iqn: Launch<iqn_adam_kernel::Buffers<Owned<'a>>, iqn_adam_kernel::StepScalars>,
    iql: Launch<iql_adam_kernel::Buffers<Owned<'a>>, iql_adam_kernel::StepScalars>,
    attn: Launch<attn_adam_kernel::Buffers<Owned<'a>>, attn_adam_kernel::StepScalars>,
    cur: Launch<curiosity_adam_step::Buffers<Owned<'a>>, curiosity_adam_step::StepScalars>,
    dt: Launch<attn_adam_kernel::Buffers<Owned<'a>>, attn_adam_kernel::StepScalars>,
    /// One record per launch, in the order above.
    states: &'a StepStates,
}

impl RlStep<'_> {
    /// One branch per launch (stepped, without the advance: the records were advanced once),
    /// each with its own tensor set (device tables).
    fn branches<'s>(&'s self, sets: &'s mut [TensorSet; 6]) -> Vec<Branch<'s>> {
        let (rt, states) = (self.rt, self.states);
        let [s0, s1, s2, s3, s4, s5] = sets;
        macro_rules! branch {
            ($k:ident, $launch:expr, $set:expr, $record:expr) => {
                Box::new(move |s: &Stream| {
                    let (b, k) = $launch;
                    rt.launch::<$k::Entry>(s)
                        .stepped(k, states, $record)
                        .set($set, b)
                        .map(|_| ())
                })
            };
        }
        vec![
            branch!(dqn_adam_update_kernel, &self.dqn, s0, 0),
            branch!(iqn_adam_kernel, &self.iqn, s1, 1),
            branch!(iql_adam_kernel, &self.iql, s2, 2),
            branch!(attn_adam_kernel, &self.attn, s3, 3),
            branch!(curiosity_adam_step, &self.cur, s4, 4),
            branch!(attn_adam_kernel, &self.dt, s5, 5),
        ]
    }
}

/// The 49-slot NaN/max-abs check over the set's check slots, and one slot over 2^28 elements.
fn check(
    rt: &Adamant,
    timer: &mut Timer,
    out: &mut Value,
    set: &PathBuf,
    copy_gbps: f64,
) -> Result<()> {
    let stream = rt.stream();
    let spec: Value = serde_json::from_str(&std::fs::read_to_string(set)?)?;
    let sizes: Vec<usize> = spec["check_slots"]
        .as_array()
        .context("check_slots")?
        .iter()
        .map(|v| v.as_u64().unwrap_or(0) as usize)
        .collect();
    let buffers = sizes
        .iter()
        .map(|&n| DeviceArray::filled(n, 0.5))
        .collect::<Result<Vec<_>, _>>()?;
    let mut bindings = SlotBindings::new(SEED_TABLE);
    for (i, b) in buffers.iter().enumerate() {
        bindings.bind(SEED_TABLE.id(i).context("slot index")?, b)?;
    }
    let range = 0..=sizes.len() - 1;
    let mut checker = NanChecker::new(rt, range, &bindings)?;
    let eager = timer.host_median_us(|s| Ok(checker.enqueue(s, 1.0)?))?;
    let graph_us = {
        let graph = rt.capture(vec![Box::new(|s: &Stream| checker.enqueue(s, 1.0))])?;
        timer.median_us(false, |s| Ok(graph.launch(s)?))?
    };
    checker.record_done(stream)?; // the report decodes the last replay's check
    checker.report()?.ensure_quiet()?;
    let elements: usize = sizes.iter().sum();
    println!(
        "check {} slots, {elements} elements: eager {eager:.1} µs, graph {graph_us:.1} µs",
        sizes.len()
    );
    out["check"] = json!({"slots": sizes.len(), "elements": elements, "eager_us": eager, "graph_us": graph_us});

    let n = 1usize << 28;
    let big = DeviceArray::filled(n, 0.5)?;
    let mut bindings = SlotBindings::new(SEED_TABLE);
    bindings.bind(SEED_TABLE.id(0).context("slot 0")?, &big)?;
    let mut checker = NanChecker::new(rt, 0..=0, &bindings)?;
    let us = timer.median_us(true, |s| Ok(checker.enqueue(s, 1.0)?))?;
    checker.report()?.ensure_quiet()?;
    let gbps = 4.0 * n as f64 / us / 1e3;
    println!(
        "check 2^28 elements: {us:.1} µs, {gbps:.0} GB/s ({:.2}× copy)",
        gbps / copy_gbps
    );
    out["check_large"] = json!({"elements": n, "median_us": us, "gbps": gbps});
    Ok(())
}

/// The captured step that trains: the RL set's eight groups (GroupSizes::RL_SET) in a
/// TrainingSession whose graph advances the step state, runs the eight stepped launches and the
/// 49-slot check (activation slots bound to buffers of the set's check-slot sizes); its device
/// time per replay, the host time of one replay call and of one eager launch, and the device
/// time of the step-state advance alone.
/// Gives every group of `session` the RL set's gradient (0.01, as `tensor`'s): a step of zero
/// gradients divides 0 by the denominator, which the device's division takes on its slow path
/// (one subroutine call per element), a cost no training step pays.
fn with_gradients(session: &mut adamant::rl::TrainingSession<'_>) -> Result<()> {
    use adamant::runtime::GroupBuffer;
    let groups: Vec<(String, usize)> = (session.groups().every().iter())
        .map(|g| (g.name().to_string(), g.len()))
        .collect();
    for (name, n) in groups {
        session.upload(&name, GroupBuffer::Grads, &vec![0.01; n])?;
    }
    Ok(())
}

fn session(rt: &Adamant, timer: &mut Timer, out: &mut Value, set: &PathBuf) -> Result<()> {
    use adamant::rl::SLOTS;
    use adamant::runtime::nan_check::Source;
    // The seed's table: the one a TrainingSession checks.
    use adamant::rl::{
        GroupSizes, OptimizerLaunch, SessionConfig, TrainingGroups, TrainingSession,
    };
    use adamant::runtime::{QAbsRef, StepBound, StepSpec, StepStates};
    let stream = rt.stream();
    let spec: Value = serde_json::from_str(&std::fs::read_to_string(set)?)?;
    let sizes: Vec<usize> = spec["check_slots"]
        .as_array()
        .context("check_slots")?
        .iter()
        .map(|v| v.as_u64().unwrap_or(0) as usize)
        .collect();
    let mut activations = Vec::new();
    let mut bindings = SlotBindings::new(SEED_TABLE);
    for slot in SLOTS {
        if let Source::Activation { .. } = slot.source {
            let n = sizes.get(slot.index).copied().unwrap_or(4096).max(1);
            activations.push((slot.index, DeviceArray::filled(n, 0.5)?));
        }
    }
    for (index, buffer) in &activations {
        bindings.bind(SEED_TABLE.id(*index).context("slot")?, buffer)?;
    }
    // The check the session runs: the activation slots only (every group slot comes from the
    // optimizer's records), one kernel in a one-node graph.
    let activation_check_us = {
        let mut only = bindings.clone();
        for slot in SLOTS {
            if let Source::Group { .. } = slot.source {
                only.leave_to_records(SEED_TABLE.id(slot.index).context("slot")?)?;
            }
        }
        let mut checker = NanChecker::new(rt, adamant::rl::ALL_SLOTS, &only)?;
        let graph = rt.capture(vec![Box::new(|s: &Stream| checker.enqueue(s, 1.0))])?;
        let us = timer.median_us(false, |s| Ok(graph.launch(s)?))?;
        drop(graph);
        checker.record_done(stream)?;
        checker.report()?.ensure_quiet()?;
        us
    };
    let groups = TrainingGroups::new(GroupSizes::RL_SET, |_, n| vec![0.01; n])?;
    let cfg = SessionConfig::uniform(hyper());
    let mut session = TrainingSession::new(
        rt,
        groups,
        cfg,
        QAbsRef::Owned { initial: 2.0 },
        Some(bindings.clone()),
    )?;
    with_gradients(&mut session)?;
    let nodes = session.capture()?;
    timer.reps *= 4;
    let replay_us = timer.median_us(false, |_| Ok(session.replay()?))?;
    timer.reps /= 4;
    let report = session.report()?;
    let first = hyper().step - 1; // the records start at the steps already taken
    anyhow::ensure!(
        report.states[0].step as u64 == first + session.steps(),
        "the step advanced"
    );
    report.nan.ensure_quiet()?;
    let eager_device_us = timer.median_us(false, |_| Ok(session.step()?))?;
    // The same step without the check: where the replay's time goes.
    let no_check_us = {
        let groups = TrainingGroups::new(GroupSizes::RL_SET, |_, n| vec![0.01; n])?;
        let mut bare =
            TrainingSession::new(rt, groups, cfg, QAbsRef::Owned { initial: 2.0 }, None)?;
        with_gradients(&mut bare)?;
        bare.capture()?;
        timer.median_us(false, |_| Ok(bare.replay()?))?
    };
    // The same two replays with the step's optimizer as one launch per group (on parallel
    // branches) instead of the default one fused launch.
    let (per_group_replay_us, per_group_no_check_us, per_group_nodes) = {
        let mut times = Vec::new();
        let mut nodes = 0;
        for check in [Some(bindings.clone()), None] {
            let groups = TrainingGroups::new(GroupSizes::RL_SET, |_, n| vec![0.01; n])?;
            let mut s =
                TrainingSession::new(rt, groups, cfg, QAbsRef::Owned { initial: 2.0 }, check)?;
            s.set_optimizer_launch(OptimizerLaunch::PerGroup);
            with_gradients(&mut s)?;
            nodes = nodes.max(s.capture()?);
            timer.reps *= 4;
            let us = timer.median_us(false, |_| Ok(s.replay()?));
            timer.reps /= 4;
            s.report()?.nan.ensure_quiet()?;
            times.push(us?);
        }
        (times[0], times[1], nodes)
    };
    println!(
        "session, optimizer as one launch per group ({per_group_nodes} nodes): replay \
         {per_group_replay_us:.1} µs device ({per_group_no_check_us:.1} µs without the check)"
    );
    // Host cost: the replay call alone (graph launch + event record), GPU idle before it.
    let host = |op: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        let mut times = Vec::new();
        for _ in 0..200 {
            stream.synchronize()?;
            let start = std::time::Instant::now();
            op()?;
            times.push(start.elapsed().as_secs_f64() * 1e6);
        }
        stream.synchronize()?;
        Ok(median(times))
    };
    let replay_host_us = host(&mut || Ok(session.replay()?))?;
    // The report after a finished step: the event wait, the records and the check's words read
    // from mapped memory, the 54 slots decoded.
    let report_host_us = host(&mut || {
        session.report()?.nan.ensure_quiet()?;
        Ok(())
    })?;
    let lr_host_us = host(&mut || Ok(session.set_lr_all(1e-3)?))? / 8.0;
    // One eager launch, validation included, at 2^10 and 2^24 elements.
    let mut eager_host = serde_json::Map::new();
    for log in [10u32, 20, 24] {
        let n = 1usize << log;
        let mut group = adamant::runtime::ParamGroup::new("attention", &vec![0.01; n])?;
        let h = hyper();
        let us = host(&mut || {
            rt.attn_adam(stream, &mut group, &h, ClampPolicy::from_isv(1.0))?;
            Ok(())
        })?;
        eager_host.insert(format!("2^{log}"), json!(us));
    }
    // The driver's own floor for one launch: cuLaunchKernel of an argument list prepared once,
    // of an entry that does nothing (the advance with 0 records), from the same idle GPU.
    let floor_module = cust::module::Module::from_ptx(PTX, &[])?;
    let floor_function = floor_module.get_function("step_advance_kernel")?;
    // Its records, record count and mirror: null, 0, null.
    let mut floor_args = [ArgValue::Ptr(0), ArgValue::U32(0), ArgValue::Ptr(0)];
    let floor_params: Vec<_> = floor_args.iter_mut().map(ArgValue::param_pointer).collect();
    // SAFETY: the entry's three parameters; with 0 records it touches no memory.
    let floor_launch = || unsafe { stream.launch(&floor_function, 1, 32, 0, &floor_params) };
    let driver_launch_host_us = host(&mut || Ok(floor_launch()?))?;
    // Host issue cost in steady state, ours and the driver floor's batches alternating
    // (`prepared::alternating_issue_us`): less noisy than one launch from an idle GPU, and what an
    // eager training loop pays.
    let (eager_issue_us, driver_issue_us) = {
        let mut group = adamant::runtime::ParamGroup::new("attention", &vec![0.01; 1 << 10])?;
        let h = hyper();
        prepared::alternating_issue_us(
            stream,
            || {
                Ok(rt
                    .attn_adam(stream, &mut group, &h, ClampPolicy::from_isv(1.0))
                    .map(|_| ())?)
            },
            || Ok(floor_launch()?),
        )?
    };
    // A launch checked once and enqueued every step, against the driver's launch of the same
    // entry with the same arguments.
    let (prepared_issue_us, same_entry_issue_us) = prepared::issue_us(rt, stream, &floor_module)?;
    // One of the driver calls every launch path makes besides the launch: the capture query
    // (`cuStreamGetCaptureInfo`, once per launch), timed alone.
    let capture_query_us = {
        let mut times = Vec::new();
        for _ in 0..30 {
            let start = std::time::Instant::now();
            for _ in 0..256 {
                let mut status = cust::sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
                let mut id: cust::sys::cuuint64_t = 0;
                // SAFETY: a valid stream handle and out-pointers to locals.
                let r = unsafe {
                    cust::sys::cuStreamGetCaptureInfo(stream.as_inner(), &mut status, &mut id)
                };
                anyhow::ensure!(r == cust::sys::CUresult::CUDA_SUCCESS, "{r:?}");
            }
            times.push(start.elapsed().as_secs_f64() * 1e6 / 256.0);
        }
        median(times)
    };
    // The advance alone, for the eight records.
    let specs = vec![StepSpec::adam(&hyper(), StepBound::FromQAbsRef)?; 8];
    let states = StepStates::new(&specs, QAbsRef::Owned { initial: 1.0 })?;
    let advance_us = {
        let graph = rt.capture(vec![Box::new(|s: &Stream| states.advance(rt, s))])?;
        timer.median_us(false, |s| Ok(graph.launch(s)?))?
    };
    // What one advance adds inside a graph: a chain of CHAIN advances, per advance (the graph
    // launch's fixed cost, which the one-node graph above is mostly made of, divided out).
    const CHAIN: usize = 64;
    let advance_in_graph_us = {
        let graph = rt.capture(vec![Box::new(|s: &Stream| {
            for _ in 0..CHAIN {
                states.advance(rt, s)?;
            }
            Ok(())
        })])?;
        timer.median_us(false, |s| Ok(graph.launch(s)?))? / CHAIN as f64
    };
    // The step's guard over the RL set's gradients: one pass judging the eight records and
    // advancing them (and, for comparison, the pass then an advance node), against the advance
    // alone above (the guard's budget: one read of the
    // gradients at the copy bandwidth plus 2 µs, at most 7 µs on the RL set).
    let (guard_rl_set_us, guard_then_advance_us, guard_rl_set_bytes) = {
        let lens = GroupSizes::RL_SET.in_order();
        let grads = lens
            .iter()
            .map(|&n| DeviceArray::filled(n, 1e-3))
            .collect::<adamant::runtime::Result<Vec<_>>>()?;
        let dyns: Vec<&dyn adamant::runtime::ReadBuffer> = grads.iter().map(|g| g as _).collect();
        let guard = GradientGuard::one_per_record(&dyns)?;
        let spec = StepSpec::adam(&hyper(), StepBound::FromQAbsRef)?.guarded(GuardSpec {
            skip_non_finite: true,
            max_norm: Some(1e3),
            loss_scale: None,
        })?;
        let guarded = StepStates::new(&vec![spec; 8], QAbsRef::Owned { initial: 1.0 })?;
        let fused = rt.capture(vec![Box::new(|s: &Stream| {
            guard.enqueue_and_advance(rt, s, &guarded)
        })])?;
        let separate = rt.capture(vec![Box::new(|s: &Stream| {
            guard.enqueue(rt, s, &guarded, 0)?;
            guarded.advance(rt, s)
        })])?;
        let us = timer.median_us(false, |s| Ok(fused.launch(s)?))?;
        let separate_us = timer.median_us(false, |s| Ok(separate.launch(s)?))?;
        (us, separate_us, 4 * lens.iter().sum::<usize>())
    };
    println!(
        "guard (RL set, 8 records, one pass over {guard_rl_set_bytes} B of gradients) advancing \
         the records: {guard_rl_set_us:.2} µs ({guard_then_advance_us:.2} µs as a pass then an \
         advance node), against {advance_us:.2} µs for the advance alone"
    );
    println!(
        "session (RL set, step advancing + 49-slot check, {nodes} nodes): replay {replay_us:.1} µs \
         device ({no_check_us:.1} µs without the check; the activation-only check alone \
         {activation_check_us:.1} µs in a graph), eager {eager_device_us:.1} µs; host: replay \
         {replay_host_us:.2} µs, report {report_host_us:.2} µs, set_lr \
         {lr_host_us:.2} µs per record, eager launch {eager_host:?} (driver floor \
         {driver_launch_host_us:.2} µs), steady issue {eager_issue_us:.2} µs per launch (driver \
         floor {driver_issue_us:.2} µs; capture query {capture_query_us:.3} µs), prepared stepped \
         launch {prepared_issue_us:.2} µs per enqueue (the same entry and arguments by \
         cuLaunchKernel {same_entry_issue_us:.2} µs); advance {advance_us:.2} µs \
         (one-node graph), {advance_in_graph_us:.2} µs per advance in a chain of {CHAIN}"
    );
    out["session"] = json!({"nodes": nodes, "replay_us": replay_us,
        "optimizer_launch": format!("{:?}", session.optimizer_launch()),
        "per_group": {"nodes": per_group_nodes, "replay_us": per_group_replay_us,
            "no_check_us": per_group_no_check_us},
        "activation_check_graph_us": activation_check_us, "report_host_us": report_host_us,
        "eager_step_device_us": eager_device_us, "replay_without_check_us": no_check_us, "replay_host_us": replay_host_us,
        "set_lr_host_us": lr_host_us, "eager_launch_host_us": eager_host,
        "driver_launch_host_us": driver_launch_host_us,
        "eager_issue_host_us": eager_issue_us, "driver_issue_host_us": driver_issue_us,
        "capture_query_host_us": capture_query_us,
        "prepared_issue_host_us": prepared_issue_us,
        "same_entry_driver_issue_host_us": same_entry_issue_us,
        "advance_us": advance_us, "advance_in_graph_us": advance_in_graph_us,
        "guard_rl_set_us": guard_rl_set_us, "guard_then_advance_rl_set_us": guard_then_advance_us, "guard_rl_set_bytes": guard_rl_set_bytes, "elements": session.groups().all().iter().map(|g| g.len()).sum::<usize>()});
    Ok(())
}

/// ptxas's report of every entry (where ptxas is installed).
fn registers(out: &mut Value) {
    let report = Ptxas::locate()
        .map_err(|e| e.to_string())
        .and_then(|p| p.compile(PTX, DEFAULT_ARCH).map_err(|e| e.to_string()));
    match report {
        Ok(report) => {
            let mut map = serde_json::Map::new();
            for f in report.entries() {
                map.insert(
                    f.name.clone(),
                    json!({"registers": f.registers, "spill_bytes": f.spill_bytes()}),
                );
            }
            out["registers"] = Value::Object(map);
        }
        Err(e) => out["registers"] = json!({"error": e}),
    }
}
