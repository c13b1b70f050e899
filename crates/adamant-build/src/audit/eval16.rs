//! The 16-bit half of the interpreter (`eval.rs`): integer instructions on `.b16`, `.u16` and
//! `.s16` values, and `cvt` between 16- and 32-bit integers and between `f32` and `f16`/`bf16`,
//! so a kernel that rounds its clamped update to a 16-bit type before storing it can be run too.
//!
//! A 16-bit value lives in the low half of its `u32` slot with the upper half zero: every 16-bit
//! source is read through `& 0xffff` (an immediate such as `-1` arrives sign-extended to 32 bits)
//! and every 16-bit result is normalised the same way. Shift amounts stay 32-bit, as in PTX.
//!
//! The float conversions are written from the IEEE 754 definitions in integer arithmetic, so
//! they depend on neither the host's float unit nor a library's choice of NaN.
use super::eval::{compare_int, need, setp, EvalError, Mods, Ty};

/// The bits of a 16-bit value in its slot.
const MASK: u32 = 0xffff;

/// What `cvt.rn.f16.f32` and `cvt.rn.bf16.f32` give for every NaN input: PTX's canonical NaN
/// of both 16-bit types (sign clear, every exponent and mantissa bit set), the payload dropped.
const CANONICAL_NAN_16: u32 = 0x7fff;

/// The 16-bit value `v` as a signed 32-bit value.
fn sext(v: u32) -> i32 {
    v as u16 as i16 as i32
}

/// Evaluates an instruction whose type is `.b16`, `.u16` or `.s16` (everything but `cvt`,
/// which [`cvt`] takes whatever its types).
pub(super) fn apply(op: &str, t: Ty, mods: &[&str], args: &[u32]) -> Result<u32, EvalError> {
    let signed = t == Ty::S16;
    if op == "setp" {
        // Sign- or zero-extending both sides keeps the 16-bit order, so the 32-bit comparison
        // decides it.
        return setp(mods, args, |cmp, a, b| {
            if signed {
                compare_int(cmp, sext(a) as u32, sext(b) as u32, true)
            } else {
                compare_int(cmp, a & MASK, b & MASK, false)
            }
        });
    }
    // Beyond its type, only `mul` takes a modifier here (`.lo`, `.hi`, `.wide`): any other one
    // (`.sat`, `.relu`, `.cc`...) could change the value, so it is refused, not ignored.
    let extra = Mods::of_slice(mods, |m| !is_type(m));
    let mul_mode = match (op, extra.as_slice()) {
        ("mul", [mode @ ("lo" | "hi" | "wide")]) => Some(*mode),
        (_, []) => None,
        _ => return Err(EvalError::NotEvaluated),
    };
    let v = |i: usize| args[i] & MASK;
    let s = |i: usize| sext(args[i]);
    let unsigned_or_signed = t == Ty::U16 || signed;
    let r = match op {
        "mov" => {
            need(args, 1)?;
            v(0)
        }
        "not" => {
            need(args, 1)?;
            !v(0)
        }
        "neg" => {
            need(args, 1)?;
            v(0).wrapping_neg()
        }
        "abs" if signed => {
            need(args, 1)?;
            // |-32768| does not fit: it stays -32768, as two's complement wraps.
            (v(0) as u16 as i16).wrapping_abs() as u16 as u32
        }
        "and" | "or" | "xor" => {
            need(args, 2)?;
            match op {
                "and" => v(0) & v(1),
                "or" => v(0) | v(1),
                _ => v(0) ^ v(1),
            }
        }
        "add" => {
            need(args, 2)?;
            v(0).wrapping_add(v(1))
        }
        "sub" => {
            need(args, 2)?;
            v(0).wrapping_sub(v(1))
        }
        "shl" => {
            // The amount is a `u32` operand; PTX clamps amounts past the width to the width.
            need(args, 2)?;
            if args[1] >= 16 {
                0
            } else {
                v(0) << args[1]
            }
        }
        "shr" if signed => {
            need(args, 2)?;
            // Arithmetic: an amount of 16 or more leaves only copies of the sign bit.
            (s(0) >> args[1].min(15)) as u32
        }
        "shr" => {
            need(args, 2)?;
            if args[1] >= 16 {
                0
            } else {
                v(0) >> args[1]
            }
        }
        // Signedness decides these, and `.b16` does not say it.
        "min" | "max" if unsigned_or_signed => {
            need(args, 2)?;
            let (a, b) = if signed {
                (s(0), s(1))
            } else {
                (v(0) as i32, v(1) as i32)
            };
            let pick_a = if op == "min" { a <= b } else { a >= b };
            if pick_a {
                v(0)
            } else {
                v(1)
            }
        }
        "mul" if unsigned_or_signed => {
            need(args, 2)?;
            // The full product of the two 16-bit values, as 32 bits.
            let product = if signed {
                s(0).wrapping_mul(s(1)) as u32
            } else {
                v(0) * v(1)
            };
            match mul_mode {
                Some("lo") => product,
                Some("hi") => product >> 16,
                // `.wide`: a 32-bit result, not normalised to 16 bits.
                Some(_) => return Ok(product),
                None => return Err(EvalError::NotEvaluated),
            }
        }
        "selp" => {
            need(args, 3)?;
            if args[2] != 0 {
                v(0)
            } else {
                v(1)
            }
        }
        _ => return Err(EvalError::NotEvaluated),
    };
    Ok(r & MASK)
}

/// Whether the modifier `m` names a type.
fn is_type(m: &str) -> bool {
    matches!(
        m,
        "b16" | "u16" | "s16" | "b32" | "u32" | "s32" | "f16" | "bf16" | "f32" | "f16x2" | "bf16x2"
    )
}

/// A 16-bit IEEE-style float format.
#[derive(Clone, Copy)]
struct Half {
    exp_bits: u32,
    man_bits: u32,
}

const F16: Half = Half {
    exp_bits: 5,
    man_bits: 10,
};
const BF16: Half = Half {
    exp_bits: 8,
    man_bits: 7,
};

impl Half {
    /// The code of +infinity (every exponent bit set, mantissa zero).
    fn inf(self) -> u32 {
        ((1 << self.exp_bits) - 1) << self.man_bits
    }

    /// The exponent of the smallest normal number (`1 - bias`), also that of the subnormals'
    /// scale.
    fn emin(self) -> i32 {
        2 - (1 << (self.exp_bits - 1))
    }
}

/// `sig >> shift` rounded to nearest, ties to even (`shift > 0`).
fn round_shift(sig: u32, shift: i32) -> u32 {
    if shift >= 32 {
        // `sig` < 2^24 is below half the unit: it rounds to 0.
        return 0;
    }
    let kept = sig >> shift;
    let rest = sig & ((1u32 << shift) - 1);
    let half = 1u32 << (shift - 1);
    kept + u32::from(rest > half || (rest == half && kept & 1 == 1))
}

/// `cvt.rn.{f16,bf16}.f32`: the f32 `bits` rounded to the nearest value of `fmt`, ties to even,
/// past the largest finite value to infinity, into the subnormals exactly; every NaN gives
/// [`CANONICAL_NAN_16`].
fn narrow(bits: u32, fmt: Half) -> u32 {
    let sign = (bits >> 16) & 0x8000;
    let exp = (bits >> 23) & 0xff;
    let man = bits & 0x7f_ffff;
    if exp == 0xff {
        return if man != 0 {
            CANONICAL_NAN_16
        } else {
            sign | fmt.inf()
        };
    }
    // The magnitude as `sig * 2^e`, `sig` an integer (no implicit bit for a subnormal).
    let (sig, e) = if exp == 0 {
        (man, -149)
    } else {
        (man | 0x80_0000, exp as i32 - 150)
    };
    if sig == 0 {
        return sign;
    }
    // The exponent of the leading bit, and the one the result's leading bit can have: no lower
    // than the smallest normal's, below which the spacing of the subnormals stays.
    let top = e + 31 - sig.leading_zeros() as i32;
    let scale = top.max(fmt.emin());
    let shift = scale - fmt.man_bits as i32 - e;
    // A narrower mantissa always drops bits of an f32 (`shift` >= 13).
    debug_assert!(shift > 0);
    let rounded = round_shift(sig, shift);
    // The rounded significand added to the exponent field: a carry out of the mantissa (to the
    // next binade, or from the subnormals to the smallest normal) lands in the exponent, and
    // past the largest finite value the code reaches infinity, where it is held.
    let code = (((scale - fmt.emin()) as u32) << fmt.man_bits) + rounded;
    sign | code.min(fmt.inf())
}

/// `cvt.f32.{f16,bf16}`: the exact f32 of the 16-bit value `h` (an f16 subnormal becomes a normal
/// f32, a bf16 subnormal an f32 subnormal). A NaN comes out as IEEE 754 converts one: its sign
/// and payload kept (shifted to the top of the f32 mantissa) and quieted (the mantissa's top bit
/// set), as the `half` crate widens too. Which NaN the GPU gives is not pinned down here; a clamp
/// only compares a widened value, and a comparison reads no NaN's bits.
fn widen(h: u32, fmt: Half) -> u32 {
    let h = h & MASK;
    let sign = (h & 0x8000) << 16;
    let exp = (h >> fmt.man_bits) & ((1 << fmt.exp_bits) - 1);
    let man = h & ((1 << fmt.man_bits) - 1);
    if exp == (1 << fmt.exp_bits) - 1 {
        let quiet = if man == 0 { 0 } else { 0x40_0000 };
        return sign | 0x7f80_0000 | quiet | (man << (23 - fmt.man_bits));
    }
    let (sig, e) = if exp == 0 {
        (man, fmt.emin() - fmt.man_bits as i32)
    } else {
        (
            man | (1 << fmt.man_bits),
            exp as i32 + fmt.emin() - 1 - fmt.man_bits as i32,
        )
    };
    if sig == 0 {
        return sign;
    }
    let lead = 31 - sig.leading_zeros() as i32;
    let top = e + lead;
    if top >= -126 {
        let mantissa = (sig << (23 - lead)) & 0x7f_ffff;
        sign | (((top + 127) as u32) << 23) | mantissa
    } else {
        // Below f32's smallest normal: an f32 subnormal, whose unit is 2^-149.
        sign | (sig << (e + 149))
    }
}

/// An integer type of `cvt`: its width and signedness.
fn int_type(m: &str) -> Option<(u32, bool)> {
    match m {
        "u16" => Some((16, false)),
        "s16" => Some((16, true)),
        "u32" => Some((32, false)),
        "s32" => Some((32, true)),
        _ => None,
    }
}

/// `cvt.dtype.atype` between integers: the source's value (sign- or zero-extended as its own
/// type says), clamped to the destination's range with `.sat`, else kept modulo 2^width.
fn int_cvt(x: u32, from: (u32, bool), to: (u32, bool), sat: bool) -> u32 {
    let value: i64 = match from {
        (16, true) => sext(x) as i64,
        (16, false) => (x & MASK) as i64,
        (_, true) => x as i32 as i64,
        _ => x as i64,
    };
    let (bits, signed) = to;
    let value = if sat {
        let (lo, hi) = if signed {
            (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
        } else {
            (0, (1i64 << bits) - 1)
        };
        value.clamp(lo, hi)
    } else {
        value
    };
    let r = value as u32;
    if bits == 16 {
        r & MASK
    } else {
        r
    }
}

/// Evaluates `cvt`: between the 16- and 32-bit integer types, `f32` to `f16`/`bf16` (and to the
/// packed `f16x2`/`bf16x2`) with `.rn`, and `f16`/`bf16` to `f32`. Anything else, and every
/// modifier whose exact meaning is not implemented (`.ftz`, `.relu`, `.satfinite`, other
/// roundings, `.sat` on a float), is refused.
pub(super) fn cvt(mods: &[&str], args: &[u32]) -> Result<u32, EvalError> {
    let types = Mods::of_slice(mods, is_type);
    let others = Mods::of_slice(mods, |m| !is_type(m));
    let [to, from] = types.as_slice() else {
        return Err(EvalError::NotEvaluated);
    };
    if let (Some(to), Some(from)) = (int_type(to), int_type(from)) {
        let sat = match others.as_slice() {
            [] => false,
            ["sat"] => true,
            _ => return Err(EvalError::NotEvaluated),
        };
        need(args, 1)?;
        return Ok(int_cvt(args[0], from, to, sat));
    }
    let format = |m: &str| match m {
        "f16" | "f16x2" => F16,
        _ => BF16,
    };
    match (*to, *from, others.as_slice()) {
        ("f16" | "bf16", "f32", ["rn"]) => {
            need(args, 1)?;
            Ok(narrow(args[0], format(to)))
        }
        // `d[31:16]` from the first source, `d[15:0]` from the second.
        ("f16x2" | "bf16x2", "f32", ["rn"]) => {
            need(args, 2)?;
            let fmt = format(to);
            Ok(narrow(args[0], fmt) << 16 | narrow(args[1], fmt))
        }
        ("f32", "f16" | "bf16", []) => {
            need(args, 1)?;
            Ok(widen(args[0], format(from)))
        }
        _ => Err(EvalError::NotEvaluated),
    }
}

#[cfg(test)]
#[path = "eval16_tests.rs"]
mod tests;
