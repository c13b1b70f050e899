//! The step's guard pass for a profiler: `ncu -k regex:'grad_guard|step_advance'
//! ./bench_guard_profile` sees three eager guard passes (each followed by its advance) over one
//! gradient of 2^10, 2^20 and 2^28 elements, then three over the RL set's eight groups judged in
//! one launch. It prints each pass's device time from events as well. Without a GPU it fails
//! with the runtime's `NoDevice` error.
use adamant::rl::GroupSizes;
use adamant::runtime::cust::event::{Event, EventFlags};
use adamant::runtime::{
    AdamHyper, Adamant, DeviceArray, GradientGuard, GuardSpec, QAbsRef, ReadBuffer, StepBound,
    StepSpec, StepStates,
};
use anyhow::Result;

/// One guard pass and the advance, `REPS` times, each timed with events.
const REPS: usize = 3;

fn profile(rt: &Adamant, what: &str, grads: &[&DeviceArray]) -> Result<()> {
    let dyns: Vec<&dyn ReadBuffer> = grads.iter().map(|g| *g as _).collect();
    let guard = GradientGuard::one_per_record(&dyns)?;
    let spec = StepSpec::adam(&AdamHyper::pytorch_defaults(1)?, StepBound::FromQAbsRef)?.guarded(
        GuardSpec {
            skip_non_finite: true,
            max_norm: Some(1e3),
            loss_scale: None,
        },
    )?;
    let states = StepStates::new(&vec![spec; grads.len()], QAbsRef::Owned { initial: 1.0 })?;
    let (start, end) = (
        Event::new(EventFlags::DEFAULT)?,
        Event::new(EventFlags::DEFAULT)?,
    );
    let bytes: usize = grads.iter().map(|g| 4 * g.len()).sum();
    for rep in 0..REPS {
        start.record(rt.stream())?;
        guard.enqueue(rt, rt.stream(), &states, 0)?;
        end.record(rt.stream())?;
        states.advance(rt, rt.stream())?;
        rt.synchronize()?;
        let us = end.elapsed_time_f32(&start)? as f64 * 1e3;
        println!(
            "guard {what} ({} records, {bytes} B) pass {rep}: {us:.1} µs, {:.0} GB/s read",
            grads.len(),
            bytes as f64 / us / 1e3
        );
    }
    anyhow::ensure!(
        states.read()?.iter().all(|s| s.step as usize == REPS),
        "every step was taken"
    );
    Ok(())
}

fn main() -> Result<()> {
    let rt = Adamant::new()?;
    for log2 in [10, 20, 28] {
        let g = DeviceArray::filled(1 << log2, 1e-3)?;
        profile(&rt, &format!("2^{log2}"), &[&g])?;
    }
    let grads = GroupSizes::RL_SET
        .in_order()
        .map(|n| DeviceArray::filled(n, 1e-3));
    let grads = grads
        .into_iter()
        .collect::<adamant::runtime::Result<Vec<_>>>()?;
    profile(&rt, "RL set", &grads.iter().collect::<Vec<_>>())?;
    Ok(())
}
