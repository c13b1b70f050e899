//! An f64 reference of an optimizer launch's diagnostics record
//! (`adamant_device::diagnostics`), written from the facts' definitions: it runs the step in f64
//! ([`crate::reference::step`] with the clamp off gives the raw value, [`crate::reference::clamp`]
//! the stored one) and counts, element by element, what the record must say. It shares nothing
//! with the device's reductions.
use adamant_device::diagnostics::{TensorRecord, NO_INDEX};

use crate::reference::{self as r, Elem, Hyper, KernelRef};

/// What one tensor's record must hold. Indices are `None` where nothing was seen.
#[derive(Clone, Debug, PartialEq)]
pub struct ExpectedRecord {
    pub clamped: u32,
    pub first_clamped: Option<u64>,
    /// max |raw|; NaN if some raw value is NaN.
    pub max_raw: f64,
    pub raw_non_finite: u32,
    pub first_raw_non_finite: Option<u64>,
    /// max |p| after the clamp; NaN if some stored value is NaN.
    pub max_stored: f64,
    /// Per buffer in the kernel's order (`p`, `g`, `m`, `v`, then `v_max`): the non-finite count
    /// and the first non-finite index.
    pub buffers: Vec<(u32, Option<u64>)>,
}

/// The record of one step of `kernel` over `before` (the state before the step) with gradients
/// `g`, hyperparameters `hp` and clamp `bound` (0 = off).
pub fn expected_record(
    kernel: KernelRef,
    before: &[Elem],
    g: &[f32],
    hp: &Hyper,
    bound: f64,
) -> ExpectedRecord {
    assert_eq!(before.len(), g.len());
    let n_buffers = if kernel.amsgrad() { 5 } else { 4 };
    let mut rec = ExpectedRecord {
        clamped: 0,
        first_clamped: None,
        max_raw: 0.0,
        raw_non_finite: 0,
        first_raw_non_finite: None,
        max_stored: 0.0,
        buffers: vec![(0, None); n_buffers],
    };
    let note = |slot: &mut (u32, Option<u64>), i: usize, x: f64| {
        if !x.is_finite() {
            slot.0 += 1;
            slot.1.get_or_insert(i as u64);
        }
    };
    let max_abs = |acc: f64, x: f64| {
        if acc.is_nan() || x.is_nan() {
            f64::NAN
        } else {
            acc.max(x.abs())
        }
    };
    for (i, (&e, &g)) in before.iter().zip(g).enumerate() {
        let raw = r::step(kernel, e, g as f64, hp, 0.0);
        let stored = r::clamp(raw.p, bound);
        if bound > 0.0 && !raw.p.is_nan() && raw.p.abs() > bound {
            rec.clamped += 1;
            rec.first_clamped.get_or_insert(i as u64);
        }
        if !raw.p.is_finite() {
            rec.raw_non_finite += 1;
            rec.first_raw_non_finite.get_or_insert(i as u64);
        }
        rec.max_raw = max_abs(rec.max_raw, raw.p);
        rec.max_stored = max_abs(rec.max_stored, stored);
        let values = [stored, g as f64, raw.m, raw.v, raw.v_max];
        for (b, &x) in values.iter().enumerate().take(n_buffers) {
            note(&mut rec.buffers[b], i, x);
        }
    }
    rec
}

fn index(i: u64) -> Option<u64> {
    (i != NO_INDEX).then_some(i)
}

/// Whether an f32 maximum from the device matches the f64 one: both NaN, or within a relative
/// `1e-5` (the step's own f32 rounding is far below it; a wrong element or a missed one is not).
fn same_max(expected: f64, actual: f32) -> bool {
    if expected.is_nan() || actual.is_nan() {
        return expected.is_nan() && actual.is_nan();
    }
    let actual = actual as f64;
    (actual - expected).abs() <= 1e-5 * expected.abs().max(1e-30)
}

/// Every difference between `actual` and `expected`, in words (empty when they agree).
pub fn differences(expected: &ExpectedRecord, actual: &TensorRecord) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |what: &str, ok: bool, e: String, a: String| {
        if !ok {
            out.push(format!("{what}: expected {e}, got {a}"));
        }
    };
    check(
        "clamped",
        expected.clamped == actual.clamped,
        expected.clamped.to_string(),
        actual.clamped.to_string(),
    );
    check(
        "first clamped",
        expected.first_clamped == index(actual.first_clamped),
        format!("{:?}", expected.first_clamped),
        format!("{:?}", index(actual.first_clamped)),
    );
    check(
        "raw non-finite",
        expected.raw_non_finite == actual.raw_non_finite,
        expected.raw_non_finite.to_string(),
        actual.raw_non_finite.to_string(),
    );
    check(
        "first raw non-finite",
        expected.first_raw_non_finite == index(actual.first_raw_non_finite),
        format!("{:?}", expected.first_raw_non_finite),
        format!("{:?}", index(actual.first_raw_non_finite)),
    );
    check(
        "max raw",
        same_max(expected.max_raw, actual.max_raw()),
        expected.max_raw.to_string(),
        actual.max_raw().to_string(),
    );
    check(
        "max stored",
        same_max(expected.max_stored, actual.max_stored()),
        expected.max_stored.to_string(),
        actual.max_stored().to_string(),
    );
    check(
        "buffer count",
        expected.buffers.len() == actual.n_buffers,
        expected.buffers.len().to_string(),
        actual.n_buffers.to_string(),
    );
    for (b, (e, a)) in expected.buffers.iter().zip(actual.buffers()).enumerate() {
        check(
            &format!("buffer {b} non-finite"),
            e.0 == a.non_finite,
            e.0.to_string(),
            a.non_finite.to_string(),
        );
        check(
            &format!("buffer {b} first non-finite"),
            e.1 == index(a.first_non_finite),
            format!("{:?}", e.1),
            format!("{:?}", index(a.first_non_finite)),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp() -> Hyper {
        Hyper::new(1e-3, 0.9, 0.999, 1e-8, 0.0, 1)
    }

    #[test]
    fn a_clean_step_records_nothing_but_its_maxima() {
        let before = [Elem::new(0.5, 0.0, 0.0, 0.0); 3];
        let rec = expected_record(KernelRef::Iqn, &before, &[1e-3; 3], &hp(), 100.0);
        assert_eq!((rec.clamped, rec.raw_non_finite), (0, 0));
        assert!(rec.buffers.iter().all(|b| *b == (0, None)));
        assert!((rec.max_stored - 0.499).abs() < 1e-6, "{}", rec.max_stored);
    }

    #[test]
    fn a_nan_gradient_reaches_every_buffer_it_flows_into() {
        let before = [Elem::new(0.5, 0.0, 0.0, 0.0); 4];
        let g = [0.0, f32::NAN, 0.0, f32::NAN];
        let rec = expected_record(KernelRef::Curiosity, &before, &g, &hp(), 100.0);
        // p, g, m, v and v_max: two non-finite each, the first at element 1.
        assert_eq!(rec.buffers, vec![(2, Some(1)); 5]);
        assert_eq!((rec.raw_non_finite, rec.first_raw_non_finite), (2, Some(1)));
        assert!(rec.max_raw.is_nan() && rec.max_stored.is_nan());
        assert_eq!(rec.clamped, 0, "the clamp leaves NaN alone");
    }

    #[test]
    fn weights_past_the_bound_are_clamped_and_an_infinite_one_is_counted_twice() {
        let before = [
            Elem::new(0.5, 0.0, 0.0, 0.0),
            Elem::new(150.0, 0.0, 0.0, 0.0),
            Elem::new(f64::INFINITY, 0.0, 0.0, 0.0),
        ];
        let rec = expected_record(KernelRef::Attn, &before, &[1e-3; 3], &hp(), 100.0);
        assert_eq!((rec.clamped, rec.first_clamped), (2, Some(1)));
        assert_eq!((rec.raw_non_finite, rec.first_raw_non_finite), (1, Some(2)));
        assert_eq!(rec.max_stored, 100.0);
        assert_eq!(rec.buffers[0], (0, None), "the stored weights are finite");
    }
}
