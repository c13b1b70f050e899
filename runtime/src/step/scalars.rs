//! The host's writes of a record's scalars between steps: the shared `#[step]` fields (`lr`, the
//! betas) and the `#[hyper]` words of the record's kernel. Each is validated against the domains
//! that apply before anything is written, refused during a capture (a write recorded into a graph
//! would replay the same value every step), and enqueued as one stream-ordered word write, so the
//! next step on that stream (a graph replay included) reads it. The `#[derived]` words and the
//! bias corrections are the device's: a write of one is refused.
use std::mem::offset_of;

use adamant_kernels::abi::{ArgValue, Lifetime, OptimizerEntry, ParamType, RecordScalar};
use adamant_kernels::step::{StepRecord, StepState, SCALARS_OFFSET};
use cust::stream::Stream;

use super::spec::{check_value, word};
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
    /// `beta2`; a beta feeds the bias corrections from the next advance on) or a `#[hyper]`
    /// scalar of the kernel the record was made for ([`StepSpec::with_kernel`]).
    ///
    /// [`StepSpec::with_kernel`]: crate::StepSpec::with_kernel
    ///
    /// # Errors
    ///
    /// Before anything is written: [`Error::StepIndex`]; [`Error::UnknownScalar`] for a name the
    /// record does not hold; [`Error::ComputedScalar`] for a bias correction or a `#[derived]`
    /// scalar; [`Error::ScalarKind`] for a value of the other type; [`Error::InvalidHyper`] or
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
        let value = value.into();
        let base = self.record_ptr(index)?;
        let mut mirror = self.mirror.lock().unwrap_or_else(|e| e.into_inner());
        let record = &mut mirror[index];
        if let Some((field, offset)) = SHARED.into_iter().find(|(f, _)| *f == name) {
            let v = f32_value(record, index, field, value)?;
            check_shared(record, field, v)?;
            refuse_capture(stream, "StepStates::set_scalar")?;
            write_word(
                base + offset as u64,
                v.to_bits(),
                stream,
                "writing a step state's shared field",
            )?;
            match field {
                "lr" => record.lr = v,
                "beta1" => record.beta1 = v,
                _ => record.beta2 = v,
            }
            return Ok(());
        }
        let scalar = find(record, index, name)?;
        let Lifetime::Hyper { slot, .. } = scalar.lifetime else {
            unreachable!("find returns hyperparameters only")
        };
        kind(record, index, scalar, value)?;
        check_value(record_kernel(record), &scalar, value)?;
        refuse_capture(stream, "StepStates::set_scalar")?;
        let offset = SCALARS_OFFSET + slot as usize * size_of::<u32>();
        let bits = word(value);
        write_word(
            base + offset as u64,
            bits,
            stream,
            "writing a step state's hyperparameter",
        )?;
        record.words[slot as usize] = bits;
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
        let hypers: Vec<&RecordScalar> = layout
            .iter()
            .filter(|r| matches!(r.lifetime, Lifetime::Hyper { .. }))
            .collect();
        let values = E::hyper_values(hyper);
        for (scalar, value) in hypers.iter().zip(&values) {
            check_value(E::DESCRIPTOR.name, scalar, *value)?;
        }
        refuse_capture(stream, "StepStates::set_hyper")?;
        for (scalar, value) in hypers.iter().zip(&values) {
            let slot = scalar.slot().expect("a hyperparameter has a word");
            let offset = SCALARS_OFFSET + slot * size_of::<u32>();
            write_word(
                base + offset as u64,
                word(*value),
                stream,
                "writing a step state's hyperparameter",
            )?;
            record.words[slot] = word(*value);
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
        let bits = record.words[scalar.slot().expect("a hyperparameter has a word")];
        Ok(match scalar.ty {
            ParamType::U32 => ArgValue::U32(bits),
            _ => ArgValue::F32(f32::from_bits(bits)),
        })
    }
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
