//! One optimizer step of every parameter group of the training step, on the GPU: the five
//! kernels (the decision transformer's launch of `attn_adam_kernel` with the clamp disabled),
//! each checked against the independent f64 reference, then timed.
//!
//! Prints: group, kernel, elements, bound, max error (in units of f32::EPSILON × the reference's
//! error scale; ≤ 16 passes),
//! median time of 20 launches, and the bandwidth that time means (28 B/element for Adam, 36 for
//! AMSGrad). Exits non-zero if any group misses the reference.
use adamant::reference::{self as r, KernelRef, RefState};
use adamant::rl::{
    GroupSizes, SeedLaunchers, SessionConfig, StepConfig, TrainingGroups, DT_CLAMP_DISABLED,
};
use adamant::runtime::DeviceScalar;
use adamant::runtime::{AdamHyper, Adamant, ClampPolicy, GroupBuffer, ParamGroup};
use anyhow::{bail, Context, Result};
use cust::event::{Event, EventFlags};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const Q_ABS_REF: f32 = 2.5;
const GRAD_SCALE: f32 = 0.8;
const IQL_GRAD_CLIP: f32 = 0.5;

fn main() -> Result<()> {
    let rt = Adamant::new().context("starting the adamant runtime")?;
    println!(
        "device: {} ({} SMs)",
        rt.device_name(),
        rt.multiprocessors()
    );
    let mut rng = SmallRng::seed_from_u64(42);
    let mut groups = TrainingGroups::new(GroupSizes::RL_SET, |_, n| {
        (0..n).map(|_| rng.gen_range(-0.3..0.3)).collect()
    })?;
    let mut rng = SmallRng::seed_from_u64(43);
    for group in groups.all_mut() {
        let n = group.len();
        let mut random =
            |lo: f32, hi: f32| (0..n).map(|_| rng.gen_range(lo..hi)).collect::<Vec<_>>();
        group.upload(GroupBuffer::Grads, &random(-1.0, 1.0))?;
        group.upload(GroupBuffer::M, &random(-0.05, 0.05))?;
        group.upload(GroupBuffer::V, &random(0.0, 0.01))?;
        if group.has_amsgrad() {
            group.upload(GroupBuffer::VMax, &random(0.0, 0.012))?;
        }
    }
    let scale = DeviceScalar::new(GRAD_SCALE)?;
    let adamw = AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.01, 10)?;
    let cfg = StepConfig {
        q_abs_ref: Q_ABS_REF,
        hyper: SessionConfig {
            dqn: adamw,
            iqn: AdamHyper::new(5e-4, 0.9, 0.999, 1e-8, 1e-4, 10)?,
            iql: AdamHyper::new(3e-4, 0.9, 0.999, 1e-8, 1e-4, 10)?,
            iql_grad_clip: IQL_GRAD_CLIP,
            attention: adamw,
            curiosity: AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.0, 10)?,
        },
        dqn_grad_scale: Some(&scale),
    };

    // The reference step of every group, from the state on the device.
    let mut references = vec![];
    for group in groups.all() {
        let kernel = kernel_of(group.name());
        let bound = policy_of(group.name()).bound()?;
        let hp = reference_hyper(kernel, &hyper_of(&cfg, kernel));
        let (p, m, v) = (
            group.download(GroupBuffer::Params)?,
            group.download(GroupBuffer::M)?,
            group.download(GroupBuffer::V)?,
        );
        let v_max = group
            .has_amsgrad()
            .then(|| group.download(GroupBuffer::VMax))
            .transpose()?;
        let mut state = RefState::from_f32(&p, &m, &v, v_max.as_deref());
        r::step_slices(
            kernel,
            &mut state,
            &group.download(GroupBuffer::Grads)?,
            &hp,
            bound,
        );
        references.push(state);
    }

    let launches = groups.step_all(&rt, rt.stream(), &cfg)?;
    rt.synchronize()?;

    // Check every group, then time each one (timing steps the groups again).
    let mut rows = vec![];
    let mut failed = vec![];
    for ((group, reference), info) in groups.all().into_iter().zip(&references).zip(&launches) {
        let v_max = group
            .has_amsgrad()
            .then(|| group.download(GroupBuffer::VMax))
            .transpose()?;
        let errors = reference.max_errors(
            &group.download(GroupBuffer::Params)?,
            &group.download(GroupBuffer::M)?,
            &group.download(GroupBuffer::V)?,
            v_max.as_deref(),
        );
        if !errors.passes() {
            failed.push(format!("{}: {errors:?}", group.name()));
        }
        let bytes_per_element = if group.has_amsgrad() { 36.0 } else { 28.0 };
        rows.push((
            group.name().to_string(),
            *info,
            errors.worst(),
            bytes_per_element,
        ));
    }
    println!(
        "\n{:<22} {:<24} {:>9} {:>7} {:>10} {:>9} {:>8}",
        "group", "kernel", "elements", "bound", "max error", "time µs", "GB/s"
    );
    for (name, info, worst, bytes_per_element) in rows {
        let micros = time_launches(&rt, &name, &mut groups, &cfg, 20)?;
        let gbps = bytes_per_element * info.elements as f64 / (micros * 1e-6) / 1e9;
        let bound = if info.bound > 0.0 {
            format!("{}", info.bound)
        } else {
            "off".into()
        };
        println!(
            "{:<22} {:<24} {:>9} {:>7} {:>10.3} {:>9.1} {:>8.0}",
            name, info.kernel, info.elements, bound, worst, micros, gbps
        );
    }
    println!(
        "\nmax error: |gpu − f64 reference| in units of f32::EPSILON × the reference's error scale \
         (magnitudes of the terms summed); a group passes at ≤ {}.",
        r::TOLERANCE
    );
    println!("decision_transformer clamp: disabled ({DT_CLAMP_DISABLED})");
    if !failed.is_empty() {
        bail!("groups missing the reference: {}", failed.join("; "));
    }
    Ok(())
}

fn kernel_of(group: &str) -> KernelRef {
    match group {
        "dqn_trunk" | "dqn_heads" => KernelRef::Dqn,
        "iqn_online" => KernelRef::Iqn,
        "iql" => KernelRef::Iql,
        "curiosity" => KernelRef::Curiosity,
        _ => KernelRef::Attn,
    }
}

fn policy_of(group: &str) -> ClampPolicy {
    if group == "decision_transformer" {
        ClampPolicy::disabled(DT_CLAMP_DISABLED)
    } else {
        ClampPolicy::from_isv(Q_ABS_REF)
    }
}

fn hyper_of(cfg: &StepConfig, kernel: KernelRef) -> AdamHyper {
    match kernel {
        KernelRef::Dqn => cfg.hyper.dqn,
        KernelRef::Iqn => cfg.hyper.iqn,
        KernelRef::Iql => cfg.hyper.iql,
        KernelRef::Attn => cfg.hyper.attention,
        KernelRef::Curiosity => cfg.hyper.curiosity,
    }
}

fn reference_hyper(kernel: KernelRef, h: &AdamHyper) -> r::Hyper {
    let hp = r::Hyper::new(h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.step);
    match kernel {
        KernelRef::Dqn => hp.with_grad_scale(GRAD_SCALE),
        KernelRef::Iql => hp.with_grad_clip(IQL_GRAD_CLIP),
        _ => hp,
    }
}

/// Median time in µs of `reps` launches of the group's kernel (after 3 warm-ups), by events.
fn time_launches(
    rt: &Adamant,
    name: &str,
    groups: &mut TrainingGroups,
    cfg: &StepConfig,
    reps: usize,
) -> Result<f64> {
    let group: &mut ParamGroup = groups
        .all_mut()
        .into_iter()
        .find(|g| g.name() == name)
        .context("group")?;
    let kernel = kernel_of(name);
    let hyper = hyper_of(cfg, kernel);
    let policy = policy_of(name);
    let launch = |g: &mut ParamGroup| -> Result<()> {
        match kernel {
            KernelRef::Dqn => {
                rt.dqn_adam_update(rt.stream(), g, &hyper, cfg.dqn_grad_scale, policy)?
            }
            KernelRef::Iqn => rt.iqn_adam(rt.stream(), g, &hyper, policy)?,
            KernelRef::Iql => {
                rt.iql_adam(rt.stream(), g, &hyper, cfg.hyper.iql_grad_clip, policy)?
            }
            KernelRef::Attn => rt.attn_adam(rt.stream(), g, &hyper, policy)?,
            KernelRef::Curiosity => rt.curiosity_adam(rt.stream(), g, &hyper, policy)?,
        };
        Ok(())
    };
    for _ in 0..3 {
        launch(group)?;
    }
    let mut times = vec![];
    for _ in 0..reps {
        let (start, stop) = (
            Event::new(EventFlags::DEFAULT)?,
            Event::new(EventFlags::DEFAULT)?,
        );
        start.record(rt.stream())?;
        launch(group)?;
        stop.record(rt.stream())?;
        stop.synchronize()?;
        times.push(stop.elapsed_time_f32(&start)? as f64 * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}
