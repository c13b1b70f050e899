//! The host's writes of a record's scalars between steps: the shared `#[step]` fields (`lr`, the
//! betas) and the `#[hyper]` words of the record's kernel. Each is validated against the domains
//! that apply before anything is written, refused during a capture (a write recorded into a graph
//! would replay the same value every step), and enqueued as one stream-ordered word write, so the
//! next step on that stream (a graph replay included) reads it. The `#[derived]` words and the
//! bias corrections are the device's: a write of one is refused.
use std::mem::offset_of;

use adamant_device::abi::{ArgValue, Lifetime, OptimizerEntry, ParamType, RecordScalar};
use adamant_device::guard::{StepGuard, GUARD_CLIP};
use adamant_device::step::{StepRecord, StepState, SCALARS_OFFSET};
use cust::stream::Stream;

use super::spec::{check_max_norm, check_value, word, word_value};
use super::{check_field, refuse_capture, write_word, Mirror, StepStates};
use crate::error::{Error, Result};
use crate::hyper::AdamHyper;

/// The shared fields the host may set: `(name, offset in the record)`.
const SHARED: [(&str, usize); 3] = [
    ("lr", offset_of!(StepState, lr)),
    ("beta1", offset_of!(StepState, beta1)),
    ("beta2", offset_of!(StepState, beta2)),
];

impl StepStates {
    /// Sets record `index`'s learning rate for the steps that follow on `stream`: as
    /// [`StepStates::set_scalar`]`(stream, index, "lr", lr)`.
    ///
    /// # Errors
    ///
    /// As [`StepStates::set_scalar`].
    pub fn set_lr(&self, stream: &Stream, index: usize, lr: f32) -> Result<()> {
        self.set_scalar(stream, index, "lr", lr)
    }

    /// Sets scalar `name` of record `index` for the steps that follow on `stream`: one
    /// stream-ordered write of one word (no synchronisation), so the next advance and stepped
    /// launch on `stream`, replayed or eager, read it. `name` is a shared field (`lr`, `beta1`,
    /// `beta2`; a beta feeds the bias corrections from the next advance on), a `#[hyper]`
    /// scalar of the kernel the record was made for ([`StepSpec::with_kernel`]), or `max_norm`,
    /// the clipping threshold of a record guarded with one ([`StepSpec::guarded`]).
    ///
    /// [`StepSpec::with_kernel`]: crate::StepSpec::with_kernel
    /// [`StepSpec::guarded`]: crate::StepSpec::guarded
    ///
    /// # Errors
    ///
    /// Before anything is written: [`Error::StepIndex`]; [`Error::UnknownScalar`] for a name the
    /// record does not hold; [`Error::ComputedScalar`] for a bias correction, the step number
    /// or a `#[derived]` scalar; [`Error::ScalarKind`] for a value of the other type; [`Error::InvalidHyper`] or
    /// [`Error::InvalidScalar`] for a value outside the domain of the record's kernel or of an
    /// entry that has launched with the record; [`Error::Capture`] during a capture.
    /// [`Error::Cuda`] if the driver refuses the write.
    pub fn set_scalar(
        &self,
        stream: &Stream,
        index: usize,
        name: &str,
        value: impl Into<ArgValue>,
    ) -> Result<()> {
        let base = self.record_ptr(index)?;
        let mut mirror = self.mirror.lock().unwrap_or_else(|e| e.into_inner());
        let record = &mut mirror[index];
        let write = plan(record, index, name, value.into())?;
        refuse_capture(stream, "StepStates::set_scalar")?;
        write_word(
            base + write.offset as u64,
            write.bits,
            stream,
            "a step-state scalar",
        )?;
        write.apply(record);
        Ok(())
    }

    /// Sets every `#[hyper]` scalar of record `index` from `hyper` (kernel `E`'s `Hyper`), for
    /// the steps that follow on `stream`: all are validated before any is written.
    ///
    /// # Errors
    ///
    /// [`Error::RecordKernel`] unless the record was made for `E` (or a kernel with its record
    /// layout); otherwise as [`StepStates::set_scalar`].
    pub fn set_hyper<E: OptimizerEntry>(
        &self,
        stream: &Stream,
        index: usize,
        hyper: &E::Hyper,
    ) -> Result<()> {
        let base = self.record_ptr(index)?;
        let mut mirror = self.mirror.lock().unwrap_or_else(|e| e.into_inner());
        let record = &mut mirror[index];
        let layout = E::STEPPED_DESCRIPTOR.record;
        if record.kernel.as_ref().map(|k| k.layout) != Some(layout) {
            return Err(Error::RecordKernel {
                kernel: E::DESCRIPTOR.name,
                index,
                made_for: made_for(record),
            });
        }
        let values = E::hyper_values(hyper);
        let writes = layout
            .iter()
            .filter(|r| matches!(r.lifetime, Lifetime::Hyper { .. }))
            .zip(values)
            .map(|(scalar, value)| plan(record, index, scalar.name, value))
            .collect::<Result<Vec<_>>>()?;
        refuse_capture(stream, "StepStates::set_hyper")?;
        for write in writes {
            write_word(
                base + write.offset as u64,
                write.bits,
                stream,
                "a step state's hyperparameter",
            )?;
            write.apply(record);
        }
        Ok(())
    }

    /// The value the host last gave scalar `name` of record `index` (a shared field or a
    /// `#[hyper]` scalar): what the next step reads once the write before it has run.
    ///
    /// # Errors
    ///
    /// [`Error::StepIndex`], [`Error::UnknownScalar`], and [`Error::ComputedScalar`] for a
    /// value the device computes (read those with [`StepStates::read_records`]).
    pub fn scalar(&self, index: usize, name: &str) -> Result<ArgValue> {
        self.record_ptr(index)?;
        let mirror = self.mirror.lock().unwrap_or_else(|e| e.into_inner());
        let record = &mirror[index];
        match name {
            "lr" => return Ok(ArgValue::F32(record.lr)),
            "beta1" => return Ok(ArgValue::F32(record.beta1)),
            "beta2" => return Ok(ArgValue::F32(record.beta2)),
            _ => {}
        }
        let scalar = find(record, index, name)?;
        Ok(word_value(&scalar, &record.words))
    }
}

/// One validated host write of a record scalar: the word's offset in the record, its bits, and
/// where the host's mirror keeps it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Write {
    offset: usize,
    bits: u32,
    target: Target,
}

/// Where a [`Write`] lands in the host's mirror of the record.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Target {
    Lr,
    Beta1,
    Beta2,
    /// Word `n` of the record's own scalars.
    Word(usize),
    /// The guard's clipping threshold (the device holds it; the host keeps no copy).
    MaxNorm,
}

impl Write {
    /// The mirror after the write.
    pub(super) fn apply(self, record: &mut Mirror) {
        let value = f32::from_bits(self.bits);
        match self.target {
            Target::Lr => record.lr = value,
            Target::Beta1 => record.beta1 = value,
            Target::Beta2 => record.beta2 = value,
            Target::Word(n) => record.words[n] = self.bits,
            Target::MaxNorm => {}
        }
    }
}

/// The write of `value` to scalar `name` of `record` (index `index`), validated: a shared field
/// or a `#[hyper]` word of the record's kernel, of its type, within every domain that applies.
pub(super) fn plan(record: &Mirror, index: usize, name: &str, value: ArgValue) -> Result<Write> {
    if let Some((field, offset)) = SHARED.into_iter().find(|(f, _)| *f == name) {
        let v = f32_value(record, index, field, value)?;
        check_shared(record, field, v)?;
        let target = match field {
            "lr" => Target::Lr,
            "beta1" => Target::Beta1,
            _ => Target::Beta2,
        };
        return Ok(Write {
            offset,
            bits: v.to_bits(),
            target,
        });
    }
    if name == "max_norm" {
        return max_norm_write(record, index, value);
    }
    let scalar = find(record, index, name)?;
    kind(record, index, scalar, value)?;
    check_value(record_kernel(record), &scalar, value)?;
    let slot = scalar
        .slot()
        .expect("find returns hyperparameters, which have a word");
    Ok(Write {
        offset: SCALARS_OFFSET + slot * size_of::<u32>(),
        bits: word(value),
        target: Target::Word(slot),
    })
}

/// The write of a clipping record's `max_norm` (its guard's threshold): finite and `> 0`.
fn max_norm_write(record: &Mirror, index: usize, value: ArgValue) -> Result<Write> {
    if record.guard_mode & GUARD_CLIP == 0 {
        return Err(Error::UnknownScalar {
            index,
            kernel: made_for(record),
            name: "max_norm".into(),
            known: "no `max_norm`: the record does not clip (StepSpec::guarded with a max_norm)"
                .into(),
        });
    }
    let scalar = RecordScalar {
        name: "max_norm",
        ty: ParamType::F32,
        lifetime: Lifetime::Step,
    };
    kind(record, index, scalar, value)?;
    let ArgValue::F32(v) = value else {
        unreachable!("`kind` refuses any other type")
    };
    check_max_norm(v)?;
    Ok(Write {
        offset: offset_of!(StepRecord, guard) + offset_of!(StepGuard, max_norm),
        bits: v.to_bits(),
        target: Target::MaxNorm,
    })
}

/// The name of the kernel `record` was made for (for errors).
fn record_kernel(record: &Mirror) -> &'static str {
    record.kernel.as_ref().map_or("no kernel", |k| k.name())
}

/// The kernel `record` was made for, in words.
pub(super) fn made_for(record: &Mirror) -> String {
    record
        .kernel
        .as_ref()
        .map_or_else(|| "no kernel".to_string(), |k| format!("`{}`", k.name()))
}

/// `record`'s `#[hyper]` scalar `name`, or why the host cannot set it.
fn find(record: &Mirror, index: usize, name: &str) -> Result<RecordScalar> {
    let layout = record.kernel.as_ref().map_or(&[][..], |k| k.layout);
    let computed = |by: String| Error::ComputedScalar {
        index,
        kernel: made_for(record),
        name: name.to_string(),
        by,
    };
    if name == "bias_correction1" || name == "bias_correction2" {
        return Err(computed("every advance (1 - beta^t)".into()));
    }
    if name == "step" {
        return Err(computed("every advance (the step number t)".into()));
    }
    match layout.iter().find(|r| r.name == name) {
        Some(r) if matches!(r.lifetime, Lifetime::Hyper { .. }) => Ok(*r),
        Some(r) if matches!(r.lifetime, Lifetime::Derived { .. }) => {
            let schedule = record.kernel.as_ref().and_then(|k| k.schedule);
            Err(computed(format!(
                "the kernel's schedule `{}`",
                schedule.map_or("?", |d| d.name)
            )))
        }
        _ => {
            let mut known: Vec<&str> = SHARED.iter().map(|(f, _)| *f).collect();
            known.extend(
                layout
                    .iter()
                    .filter(|r| matches!(r.lifetime, Lifetime::Hyper { .. }))
                    .map(|r| r.name),
            );
            Err(Error::UnknownScalar {
                index,
                kernel: made_for(record),
                name: name.to_string(),
                known: known
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        }
    }
}

/// `value` has `scalar`'s type.
fn kind(record: &Mirror, index: usize, scalar: RecordScalar, value: ArgValue) -> Result<()> {
    let given = match value {
        ArgValue::F32(_) => "f32",
        ArgValue::U32(_) => "u32",
        ArgValue::Ptr(_) => "pointer",
        ArgValue::Usize(_) => "usize",
    };
    let expected = match scalar.ty {
        ParamType::U32 => "u32",
        _ => "f32",
    };
    if given == expected {
        return Ok(());
    }
    Err(Error::ScalarKind {
        index,
        kernel: made_for(record),
        name: scalar.name.to_string(),
        expected,
        given,
    })
}

/// A shared field's value, which is an `f32`.
fn f32_value(record: &Mirror, index: usize, field: &'static str, value: ArgValue) -> Result<f32> {
    let scalar = RecordScalar {
        name: field,
        ty: ParamType::F32,
        lifetime: Lifetime::Step,
    };
    kind(record, index, scalar, value)?;
    match value {
        ArgValue::F32(v) => Ok(v),
        _ => unreachable!("`kind` refuses any other type"),
    }
}

/// A shared field's new value against the Adam rates' ranges, the record kernel's domain for it
/// and each launched entry's.
fn check_shared(record: &Mirror, field: &'static str, value: f32) -> Result<()> {
    let rates = AdamHyper {
        lr: if field == "lr" { value } else { record.lr },
        beta1: if field == "beta1" {
            value
        } else {
            record.beta1
        },
        beta2: if field == "beta2" {
            value
        } else {
            record.beta2
        },
        eps: 1.0,
        weight_decay: 0.0,
        step: 1,
    };
    rates.validate_rates()?;
    if let Some(k) = &record.kernel {
        check_field(k.kernel, field, value)?;
    }
    for user in &record.users {
        check_field(user, field, value)?;
    }
    Ok(())
}

// A record's words follow the shared part (the offsets above are into `StepRecord`).
const _: () = assert!(offset_of!(StepRecord, state) == 0);

#[cfg(test)]
mod tests {
    use adamant_kernels::optimizers::iqn_adam_kernel;
    use adamant_kernels::soft_update::soft_update_kernel;

    use super::*;
    use crate::clamp_policy::ClampPolicy;
    use crate::step::{StepBound, StepSpec};

    /// The mirror of a record made for `iqn_adam_kernel` (eps 1e-8, no decay, lr 1e-3).
    fn iqn_record() -> Mirror {
        let spec = StepSpec::adam(
            &AdamHyper::pytorch_defaults(1).unwrap(),
            StepBound::Policy(ClampPolicy::Fixed { bound: 1.0 }),
        )
        .and_then(|s| {
            s.with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper {
                eps: 1e-8,
                weight_decay: 0.0,
            })
        })
        .unwrap();
        let words = spec.words();
        Mirror::of(&spec, words, 1.0)
    }

    #[test]
    fn a_hyperparameter_goes_to_its_word_and_a_shared_field_to_the_state() {
        let mut record = iqn_record();
        assert_eq!(f32::from_bits(record.words[0]), 1e-8);
        let eps = plan(&record, 0, "eps", ArgValue::F32(1e-6)).unwrap();
        assert_eq!(eps.offset, SCALARS_OFFSET);
        assert_eq!(eps.bits, 1e-6f32.to_bits());
        let wd = plan(&record, 0, "weight_decay", ArgValue::F32(0.01)).unwrap();
        assert_eq!(wd.offset, SCALARS_OFFSET + 4);
        let lr = plan(&record, 0, "lr", ArgValue::F32(3e-4)).unwrap();
        assert_eq!(lr.offset, offset_of!(StepState, lr));
        let beta2 = plan(&record, 0, "beta2", ArgValue::F32(0.99)).unwrap();
        assert_eq!(beta2.offset, offset_of!(StepState, beta2));
        for write in [eps, wd, lr, beta2] {
            write.apply(&mut record);
        }
        assert_eq!(f32::from_bits(record.words[0]), 1e-6);
        assert_eq!(f32::from_bits(record.words[1]), 0.01);
        assert_eq!((record.lr, record.beta2), (3e-4, 0.99));
    }

    /// A record made for a kernel with stochastic stores: its seed is a `u32` word of its own
    /// (any value), written where the stepped entry reads it; the step number beside it is the
    /// advance's, which the host cannot set.
    #[test]
    fn a_rounding_seed_is_a_word_and_the_step_number_is_the_advances() {
        use adamant_kernels::half_weights::adamw_bf16_sr;
        let spec = StepSpec::adam(
            &AdamHyper::pytorch_defaults(1).unwrap(),
            StepBound::Policy(ClampPolicy::Fixed { bound: 1.0 }),
        )
        .and_then(|s| {
            s.with_kernel::<adamw_bf16_sr::Entry>(adamw_bf16_sr::Hyper {
                eps: 1e-8,
                weight_decay: 0.01,
                rounding_seed: 2026,
            })
        })
        .unwrap();
        let mut record = Mirror::of(&spec, spec.words(), 1.0);
        // eps, weight_decay, rounding_seed: the record's first three words, in declared order.
        assert_eq!(record.words[2], 2026);
        let seed = plan(&record, 0, "rounding_seed", ArgValue::U32(u32::MAX)).unwrap();
        assert_eq!(seed.offset, SCALARS_OFFSET + 8);
        seed.apply(&mut record);
        assert_eq!(record.words[2], u32::MAX);
        assert!(matches!(
            plan(&record, 0, "rounding_seed", ArgValue::F32(1.0)),
            Err(Error::ScalarKind { .. })
        ));
        assert!(matches!(
            plan(&record, 0, "step", ArgValue::U32(3)),
            Err(Error::ComputedScalar { .. })
        ));
    }

    #[test]
    fn bad_writes_are_refused_naming_the_kernel_and_scalar() {
        let record = iqn_record();
        // Outside the kernel's domain (eps > 0), or not finite.
        for bad in [0.0f32, -1.0, f32::NAN, f32::INFINITY] {
            match plan(&record, 0, "eps", ArgValue::F32(bad)) {
                Err(Error::InvalidScalar {
                    kernel: "iqn_adam_kernel",
                    name: "eps",
                    ..
                }) => {}
                other => panic!("eps = {bad}: {other:?}"),
            }
        }
        assert!(matches!(
            plan(&record, 0, "lr", ArgValue::F32(-1.0)),
            Err(Error::InvalidHyper { field: "lr", .. })
        ));
        assert!(matches!(
            plan(&record, 0, "beta1", ArgValue::F32(1.0)),
            Err(Error::InvalidHyper { field: "beta1", .. })
        ));
        // A name the kernel does not have, listing the ones it does.
        match plan(&record, 2, "momentum", ArgValue::F32(0.9)) {
            Err(Error::UnknownScalar {
                index: 2,
                kernel,
                name,
                known,
            }) => {
                assert_eq!(
                    (kernel.as_str(), name.as_str()),
                    ("`iqn_adam_kernel`", "momentum")
                );
                assert!(
                    known.contains("`eps`") && known.contains("`weight_decay`"),
                    "{known}"
                );
            }
            other => panic!("{other:?}"),
        }
        // What the device computes: the bias corrections and the step number.
        assert!(matches!(
            plan(&record, 0, "bias_correction1", ArgValue::F32(0.5)),
            Err(Error::ComputedScalar { .. })
        ));
        assert!(matches!(
            plan(&record, 0, "step", ArgValue::U32(7)),
            Err(Error::ComputedScalar { .. })
        ));
        // The wrong type.
        assert!(matches!(
            plan(&record, 0, "eps", ArgValue::U32(1)),
            Err(Error::ScalarKind {
                expected: "f32",
                given: "u32",
                ..
            })
        ));
        assert!(matches!(
            plan(&record, 0, "lr", ArgValue::U32(1)),
            Err(Error::ScalarKind { .. })
        ));
    }

    #[test]
    fn a_clipping_records_max_norm_is_a_guard_word() {
        let spec = StepSpec::adam(
            &AdamHyper::pytorch_defaults(1).unwrap(),
            StepBound::FromQAbsRef,
        )
        .unwrap();
        let clipping = spec
            .clone()
            .guarded(crate::GuardSpec {
                skip_non_finite: true,
                max_norm: Some(1.0),
                loss_scale: None,
            })
            .unwrap();
        let record = Mirror::of(&clipping, clipping.words(), 100.0);
        let write = plan(&record, 0, "max_norm", ArgValue::F32(0.5)).unwrap();
        assert_eq!(write.offset, 64 + 16);
        assert_eq!(write.bits, 0.5f32.to_bits());
        for bad in [0.0f32, -1.0, f32::NAN, f32::INFINITY] {
            assert!(matches!(
                plan(&record, 0, "max_norm", ArgValue::F32(bad)),
                Err(Error::InvalidGuard {
                    field: "max_norm",
                    ..
                })
            ));
        }
        // A record that skips but does not clip has no threshold to set.
        let skipping = spec.guarded(crate::GuardSpec::SKIP_NON_FINITE).unwrap();
        let record = Mirror::of(&skipping, skipping.words(), 100.0);
        assert!(matches!(
            plan(&record, 0, "max_norm", ArgValue::F32(1.0)),
            Err(Error::UnknownScalar { .. })
        ));
    }

    #[test]
    fn a_guard_must_do_something_with_a_usable_threshold() {
        let spec = StepSpec::adam(
            &AdamHyper::pytorch_defaults(1).unwrap(),
            StepBound::FromQAbsRef,
        )
        .unwrap();
        for bad in [
            Some(0.0f32),
            Some(-2.0),
            Some(f32::NAN),
            Some(f32::INFINITY),
        ] {
            let guard = crate::GuardSpec {
                skip_non_finite: true,
                max_norm: bad,
                loss_scale: None,
            };
            assert!(matches!(
                spec.clone().guarded(guard),
                Err(Error::InvalidGuard {
                    field: "max_norm",
                    ..
                })
            ));
        }
        let nothing = crate::GuardSpec {
            skip_non_finite: false,
            max_norm: None,
            loss_scale: None,
        };
        assert!(matches!(
            spec.clone().guarded(nothing),
            Err(Error::InvalidGuard { field: "guard", .. })
        ));
        // A guarded record starts vouching for no step: its first advance needs a guard run.
        let guarded = spec.guarded(crate::GuardSpec::SKIP_NON_FINITE).unwrap();
        let g = guarded.step_guard().unwrap();
        assert_eq!((g.mode, g.epoch, g.clip_coef), (1, 0, 1.0));
    }

    /// Loss scaling: a first scale that is not finite and `> 0`, or a growth interval of 0, is
    /// a typed error naming the field; a valid one always skips overflows (the skip bit is set
    /// even when the spec does not ask for it) and starts the record at its scale.
    #[test]
    fn a_loss_scale_is_validated_and_implies_the_skip() {
        use adamant_device::guard::{GUARD_LOSS_SCALE, GUARD_SKIP_NON_FINITE};
        let spec = StepSpec::adam(
            &AdamHyper::pytorch_defaults(1).unwrap(),
            StepBound::FromQAbsRef,
        )
        .unwrap();
        let with = |initial: f32, growth_interval: u32| crate::GuardSpec {
            skip_non_finite: false,
            max_norm: None,
            loss_scale: Some(crate::LossScale {
                initial,
                growth_interval,
            }),
        };
        for bad in [0.0f32, -1.0, f32::NAN, f32::INFINITY] {
            assert!(
                matches!(
                    spec.clone().guarded(with(bad, 10)),
                    Err(Error::InvalidGuard {
                        field: "loss_scale.initial",
                        ..
                    })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            spec.clone().guarded(with(1024.0, 0)),
            Err(Error::InvalidGuard {
                field: "loss_scale.growth_interval",
                ..
            })
        ));
        let g = spec.guarded(with(1024.0, 7)).unwrap().step_guard().unwrap();
        assert_eq!(g.mode, GUARD_LOSS_SCALE | GUARD_SKIP_NON_FINITE);
        assert_eq!(
            (g.loss_scale, g.growth_interval, g.clean_steps),
            (1024.0, 7, 0)
        );
        assert_eq!(
            crate::GuardSpec::LOSS_SCALED.mode().unwrap() & GUARD_LOSS_SCALE,
            GUARD_LOSS_SCALE
        );
    }

    #[test]
    fn a_record_without_a_kernel_takes_the_shared_fields_only() {
        let spec = StepSpec::adam(
            &AdamHyper::pytorch_defaults(1).unwrap(),
            StepBound::FromQAbsRef,
        )
        .unwrap();
        let record = Mirror::of(&spec, spec.words(), 100.0);
        assert_eq!(record.words, [0; adamant_device::step::RECORD_SCALARS]);
        assert!(plan(&record, 0, "lr", ArgValue::F32(1e-2)).is_ok());
        assert!(matches!(
            plan(&record, 0, "eps", ArgValue::F32(1e-8)),
            Err(Error::UnknownScalar { .. })
        ));
    }

    #[test]
    fn a_record_is_made_only_with_hyperparameters_in_their_domains() {
        let spec = StepSpec::adam(
            &AdamHyper::pytorch_defaults(1).unwrap(),
            StepBound::FromQAbsRef,
        )
        .unwrap();
        let refused = spec
            .clone()
            .with_kernel::<soft_update_kernel::Entry>(soft_update_kernel::Hyper { tau: 1.5 });
        assert!(matches!(
            refused,
            Err(Error::InvalidScalar {
                kernel: "soft_update_kernel",
                name: "tau",
                ..
            })
        ));
        let made = spec
            .with_kernel::<soft_update_kernel::Entry>(soft_update_kernel::Hyper { tau: 0.25 })
            .unwrap();
        assert_eq!(f32::from_bits(made.words()[0]), 0.25);
    }
}
