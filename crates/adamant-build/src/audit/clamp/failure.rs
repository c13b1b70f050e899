//! Why a value stored to a parameter buffer is not proven clamped.
use adamant_abi::{Rounding, Storage};

use super::Unprovable;

/// Why a value stored to a parameter buffer is not proven clamped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClampFailure {
    /// The value does not depend on the bound parameter at all.
    NoBound,
    /// The instructions between the bound and the store could not be evaluated.
    Unprovable { reason: Unprovable },
    /// Evaluated, the device code gives another value than the contract for one input.
    Wrong {
        x: u32,
        bound: u32,
        /// The tensor's scale, in a multi-tensor entry.
        scale: Option<u32>,
        got: u32,
        expected: u32,
        /// The parameter buffer's storage type (`got` and `expected` are its bits).
        storage: Storage,
        /// How the store rounds to `storage` (the descriptor's).
        rounding: Rounding,
        /// A stochastic store's random word in this case.
        word: Option<u32>,
    },
    /// A multi-tensor entry's stored value is not clamped with a per-tensor scale.
    NoTensorScale,
    /// A multi-tensor entry's value is clamped with the scale of another index than the one its
    /// parameter-buffer pointer was loaded at.
    OtherTensor {
        scale_line: usize,
        scale_index: String,
        pointer_index: String,
    },
    /// A fused entry's value is clamped with the bound of another tensor's step record than the
    /// one at its parameter-buffer pointer's index.
    OtherTensorBound {
        bound_line: usize,
        bound_index: String,
        pointer_index: String,
    },
}

fn show(bits: u32) -> String {
    let v = f32::from_bits(bits);
    if v.is_nan() {
        format!("NaN (0x{bits:08x})")
    } else {
        format!("{v:e}")
    }
}

/// A stored value: an f32, or the bits of a 16-bit storage type with their value.
fn show_stored(bits: u32, storage: Storage) -> String {
    match storage {
        Storage::F32 => show(bits),
        Storage::Bf16 => format!("bf16 0x{bits:04x} ({})", show(bits << 16)),
        Storage::F16 => format!("f16 0x{bits:04x}"),
        Storage::Bf16Remainder => format!("remainder 0x{bits:04x}"),
    }
}

/// What the contract adds for a 16-bit storage type (and a stochastic store's word).
fn storage_clause(storage: Storage, rounding: Rounding, word: Option<u32>) -> String {
    match (storage, word) {
        (Storage::F32, _) => String::new(),
        (Storage::Bf16Remainder, _) => ", split into a bf16 high half (to nearest, ties away, \
                                         held within the bound) and the 16-bit remainder the \
                                         master keeps below it,"
            .to_string(),
        (_, None) if rounding == Rounding::TiesAway => ", rounded to nearest with ties away from \
                                                        zero (the high half of a split master) \
                                                        and, past the bound, its neighbour \
                                                        toward zero,"
            .to_string(),
        (_, None) => ", rounded to nearest even in the storage type and, past the bound, its \
                      neighbour toward zero,"
            .to_string(),
        (_, Some(w)) => format!(
            ", rounded stochastically with the random word 0x{w:08x} (up when the dropped bits \
             plus the word's low 16 bits reach 2^16) and, past the bound, its neighbour toward \
             zero,"
        ),
    }
}

impl std::fmt::Display for ClampFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClampFailure::NoBound => f.write_str(
                "the value does not depend on the clamp bound (the last parameter): no clamp",
            ),
            ClampFailure::Unprovable { reason } => {
                write!(f, "the clamp cannot be proven: {reason}")
            }
            ClampFailure::Wrong {
                x,
                bound,
                scale: None,
                got,
                expected,
                storage,
                rounding,
                word,
            } => write!(
                f,
                "the clamp computes the wrong value: for x = {} and bound = {} the device code \
                 stores {}, the contract `bound > 0 && |x| > bound ? copysign(bound, x) : x`{} \
                 gives {}",
                show(*x),
                show(*bound),
                show_stored(*got, *storage),
                storage_clause(*storage, *rounding, *word),
                show_stored(*expected, *storage)
            ),
            ClampFailure::Wrong {
                x,
                bound,
                scale: Some(scale),
                got,
                expected,
                storage,
                rounding,
                word,
            } => write!(
                f,
                "the clamp computes the wrong value: for x = {}, bound = {} and tensor scale = {} \
                 the device code stores {}, the contract (`b = min(bound × scale, 1e18)`, \
                 then `b > 0 && |x| > b ? copysign(b, x) : x`{}) gives {}",
                show(*x),
                show(*bound),
                show(*scale),
                show_stored(*got, *storage),
                storage_clause(*storage, *rounding, *word),
                show_stored(*expected, *storage)
            ),
            ClampFailure::NoTensorScale => f.write_str(
                "the value is not clamped with its tensor's bound: a multi-tensor entry must \
                 scale the bound by the tensor's `weight_clamp_scales` entry",
            ),
            ClampFailure::OtherTensor {
                scale_line,
                scale_index,
                pointer_index,
            } => write!(
                f,
                "the value is clamped with another tensor's bound: its scale is loaded (line \
                 {scale_line}) at index `{scale_index}`, its parameter-buffer pointer at index \
                 `{pointer_index}`"
            ),
            ClampFailure::OtherTensorBound {
                bound_line,
                bound_index,
                pointer_index,
            } => write!(
                f,
                "the value is clamped with another tensor's bound: its bound is read (line \
                 {bound_line}) from the step record whose pointer is loaded at index \
                 `{bound_index}`, its parameter-buffer pointer at index `{pointer_index}`"
            ),
        }
    }
}
