//! Replays the seed's failure on the GPU, with the NaN checker watching.
//!
//! In the seed, the IQN head's weights drifted because `iqn_adam_kernel` had no weight clamp;
//! no diagnostic covered them until slot 48 (`iqn_weight_max`) was added, and the first symptom
//! was a NaN further down the chain (slot 26, `grad_iqn @ W_iqn^T`). Here a training loop pushes
//! the IQN weights to drift with a gradient of constant sign that grows every step, steps the
//! IQN group in a captured `TrainingSession` (the whole step, with all 49 slots checked in one
//! launch, recorded once as a CUDA graph and replayed every step, the step advancing on the
//! device):
//!
//! 1. clamp disabled for the IQN group (the state before the fix): slot 48 must trip, naming
//!    `iqn_weight_max`, at the first step where a weight exceeds `1e3 × q_abs_ref_eff`, while
//!    every weight is still finite (checked by downloading them);
//! 2. clamp from the ISV (the fix): the weights must stay within `100 × q_abs_ref_eff` and every
//!    slot quiet for the whole run.
//!
//! Exits non-zero if either expectation fails. Without a GPU it fails with the runtime's
//! `NoDevice` error.
use std::process::ExitCode;

use adamant_rl::{
    slot, ClampPressureLog, GroupSizes, SessionConfig, TrainingGroups, TrainingSession, SEED_TABLE,
};
use adamant_runtime::nan_check::{q_abs_ref_eff, NanReport, SlotBindings, SlotId, Source};
use adamant_runtime::DeviceArray;
use adamant_runtime::{AdamHyper, Adamant, ClampPolicy, GroupBuffer, QAbsRef, StepBound};
use anyhow::{Context, Result};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The ISV's `Q_ABS_REF` for the whole replay.
const Q_ABS_REF: f32 = 1.0;
const STEPS: u64 = 1000;
/// A large learning rate: the replay needs the weights to cross 1e3 within `STEPS`.
const LR: f32 = 2.0;
/// IQN gradient at step t: `G0 × GROWTH^t`, always positive, so Adam keeps pushing the same way.
const G0: f32 = 1e-3;
const GROWTH: f32 = 1.01;
const IQN_PARAMS: usize = 1 << 16;
/// Every other group and activation buffer.
const OTHER_LEN: usize = 1 << 12;

/// The training step's groups and activations, every slot of the table bound to one of them
/// (the groups by the session, the activations here).
struct Model {
    groups: TrainingGroups,
    /// One buffer per activation slot (24..=35 and 46).
    activations: Vec<(SlotId, DeviceArray)>,
}

impl Model {
    fn new(rng: &mut SmallRng) -> Result<Model> {
        let sizes = GroupSizes {
            dqn_trunk: OTHER_LEN,
            dqn_heads: OTHER_LEN,
            iqn_online: IQN_PARAMS,
            iql: OTHER_LEN,
            attention: OTHER_LEN,
            tlob: OTHER_LEN,
            curiosity: OTHER_LEN,
            decision_transformer: OTHER_LEN,
        };
        let mut random = |n: usize, scale: f32| -> Vec<f32> {
            (0..n).map(|_| rng.gen_range(-scale..scale)).collect()
        };
        let groups = TrainingGroups::new(sizes, |_, len| random(len, 0.1))?;
        let mut activations = Vec::new();
        for spec in SEED_TABLE.slots() {
            if let Source::Activation { .. } = spec.source {
                let data = DeviceArray::from_host(&random(OTHER_LEN, 1.0))
                    .with_context(|| format!("allocating activation `{}`", spec.name))?;
                activations.push((SEED_TABLE.id(spec.index).expect("declared"), data));
            }
        }
        Ok(Model {
            groups,
            activations,
        })
    }
}

fn max_abs(values: &[f32]) -> f32 {
    values
        .iter()
        .fold(0.0f32, |m, v| if v.abs() > m { v.abs() } else { m })
}

/// What one run saw.
struct RunOutcome {
    /// The first step whose check tripped, with its report and the weights' state then.
    trip: Option<Trip>,
    /// The first step at which a downloaded weight exceeded slot 48's threshold.
    first_over_threshold: Option<u64>,
    steps_run: u64,
    /// Largest |w| downloaded over the run.
    max_weight: f32,
    /// The clamp pressure of every step (every group), from the diagnostics records.
    pressure: ClampPressureLog,
}

struct Trip {
    step: u64,
    report: NanReport,
    all_weights_finite: bool,
    max_weight: f32,
}

fn run(adamant: &Adamant, policy: ClampPolicy, seed: u64) -> Result<RunOutcome> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let Model {
        groups,
        activations,
    } = Model::new(&mut rng)?;
    let mut bindings = SlotBindings::new(SEED_TABLE);
    for (id, data) in &activations {
        bindings.bind(*id, data)?;
    }
    // The IQN group's bound: from the device Q_ABS_REF (the fix), or the policy as given (the
    // state before the fix: disabled). Every other group keeps the seed's bound.
    let mut bounds = TrainingSession::default_bounds();
    bounds[2] = match policy {
        ClampPolicy::FromIsv { .. } => StepBound::FromQAbsRef,
        other => StepBound::Policy(other),
    };
    let cfg = SessionConfig::uniform(AdamHyper::new(LR, 0.9, 0.999, 1e-8, 0.0, 1)?);
    let q = QAbsRef::Owned { initial: Q_ABS_REF };
    let mut session =
        TrainingSession::with_bounds(adamant, groups, cfg, q, Some(bindings), bounds)?;
    // The whole step (advance, eight stepped launches, the 49-slot check) as one graph,
    // recorded once and replayed every step: t and the bias corrections advance on the device.
    session.capture()?;
    let threshold = iqn_weight_threshold();
    let mut outcome = RunOutcome {
        trip: None,
        first_over_threshold: None,
        steps_run: 0,
        max_weight: 0.0,
        pressure: ClampPressureLog::new(),
    };
    for step in 1..=STEPS {
        let gradient = G0 * GROWTH.powi(step as i32);
        session.upload(
            "iqn_online",
            GroupBuffer::Grads,
            &vec![gradient; IQN_PARAMS],
        )?;
        session.replay()?;
        // The replay wants the exact step, so it reads every report (a training loop would
        // read one every N steps or before halting); the report waits for this step's event.
        let report = session.report()?;
        anyhow::ensure!(
            report.states[2].step as u64 == step,
            "the captured step advanced"
        );
        outcome.pressure.push(&report);
        let report = report.nan;
        outcome.steps_run = step;

        let weights = session.download("iqn_online", GroupBuffer::Params)?;
        let max_weight = max_abs(&weights);
        outcome.max_weight = outcome.max_weight.max(max_weight);
        if max_weight > threshold && outcome.first_over_threshold.is_none() {
            outcome.first_over_threshold = Some(step);
        }
        if !report.is_quiet() {
            outcome.trip = Some(Trip {
                step,
                all_weights_finite: weights.iter().all(|w| w.is_finite()),
                max_weight,
                report,
            });
            break;
        }
        if step % 200 == 0 {
            println!("  step {step:4}: max |w| = {max_weight:.1}, all 49 slots quiet");
        }
    }
    Ok(outcome)
}

/// Slot 48's threshold at [`Q_ABS_REF`], from the slot table.
fn iqn_weight_threshold() -> f32 {
    slot::iqn_weight_max
        .spec()
        .check
        .threshold(q_abs_ref_eff(Q_ABS_REF))
        .expect("slot 48 has a max-abs check")
}

fn main() -> Result<ExitCode> {
    let adamant = Adamant::new().context("the NaN sentinel replay runs on a CUDA GPU")?;
    let threshold = iqn_weight_threshold();
    let fixed = ClampPolicy::from_isv(Q_ABS_REF);
    let bound = fixed.bound()?;
    println!(
        "nan_sentinel on {}: IQN group of {IQN_PARAMS} weights, gradient {G0:e} × {GROWTH}^t \
         (constant sign), lr {LR}, Q_ABS_REF {Q_ABS_REF}; one captured TrainingSession step \
         (advance, 8 launches, 49-slot check) replayed every step; slot 48 `iqn_weight_max` threshold {threshold:e}",
        adamant.device_name()
    );
    let mut failures = Vec::new();

    println!("\nrun 1: clamp disabled for the IQN group (replaying the state before the fix)");
    let before = run(
        &adamant,
        ClampPolicy::disabled("replaying the state before the fix"),
        1,
    )?;
    match &before.trip {
        Some(trip) => {
            println!("  step {}: {}", trip.step, trip.report);
            println!(
                "  weights at step {}: {}, max |w| = {:e}",
                trip.step,
                if trip.all_weights_finite {
                    "all finite"
                } else {
                    "NOT all finite"
                },
                trip.max_weight
            );
            let names: Vec<&str> = trip.report.tripped().map(|s| s.name.as_str()).collect();
            if names != ["iqn_weight_max"] {
                failures.push(format!(
                    "run 1 tripped {names:?}, expected only iqn_weight_max"
                ));
            }
            if !trip.all_weights_finite {
                failures.push("run 1 tripped only after a weight became non-finite".to_string());
            }
            if before.first_over_threshold != Some(trip.step) {
                failures.push(format!(
                    "run 1 tripped at step {} but a weight first exceeded {threshold:e} at {:?}",
                    trip.step, before.first_over_threshold
                ));
            }
        }
        None => failures.push(format!(
            "run 1: slot 48 never tripped in {} steps (max |w| {:e})",
            before.steps_run, before.max_weight
        )),
    }

    println!("\nrun 2: clamp from the ISV (the fix): bound {bound:e}");
    let after = run(&adamant, fixed, 1)?;
    match &after.trip {
        Some(trip) => failures.push(format!(
            "run 2 tripped at step {}: {}",
            trip.step, trip.report
        )),
        None => println!(
            "  {} steps, every slot quiet after every step; max |w| over the run = {:e}",
            after.steps_run, after.max_weight
        ),
    }
    if after.max_weight > bound {
        failures.push(format!(
            "run 2: a weight reached {:e}, above the clamp bound {bound:e}",
            after.max_weight
        ));
    }
    if after.steps_run != STEPS {
        failures.push(format!(
            "run 2 stopped after {} of {STEPS} steps",
            after.steps_run
        ));
    }

    // The IQN group's clamp pressure, step by step, in both runs (the plot in docs/).
    let iqn = |log: &ClampPressureLog| log.group("iqn_online").last().cloned();
    if let (Some(off), Some(on)) = (iqn(&before.pressure), iqn(&after.pressure)) {
        println!(
            "\nclamp pressure of iqn_online at the last step: off (step {}): max raw |w| {:e}; \
             on (step {}): {} of {} weights caught, max raw |w| {:e} = {:.4} × the bound",
            off.step,
            off.max_raw,
            on.step,
            on.clamped,
            on.len,
            on.max_raw,
            on.overshoot()
        );
    }
    if let Ok(path) = std::env::var("ADAMANT_PRESSURE_CSV") {
        let mut csv = String::from("run,");
        let header_and_rows = |log: &ClampPressureLog| log.to_csv();
        let off = header_and_rows(&before.pressure);
        let on = header_and_rows(&after.pressure);
        csv.push_str(off.lines().next().unwrap_or_default());
        csv.push('\n');
        for (run, text) in [("clamp_off", &off), ("clamp_on", &on)] {
            for line in text.lines().skip(1) {
                csv.push_str(&format!("{run},{line}\n"));
            }
        }
        std::fs::write(&path, csv).with_context(|| format!("writing {path}"))?;
        println!("clamp pressure written to {path}");
    }

    println!();
    if failures.is_empty() {
        let step = before.trip.as_ref().map(|t| t.step).unwrap_or_default();
        println!(
            "OK: without the clamp, slot 48 named iqn_weight_max at step {step}, before any \
             weight was non-finite; with the clamp, {STEPS} steps stayed quiet within ±{bound:e}"
        );
        Ok(ExitCode::SUCCESS)
    } else {
        for failure in &failures {
            eprintln!("FAILED: {failure}");
        }
        Ok(ExitCode::FAILURE)
    }
}
