//! An interpreter for the PTX instructions a clamp is made of, so the audit can run the device
//! code's own clamp on a table of inputs. It knows a small set of opcodes on 32-bit and
//! predicate values, with PTX's semantics (NaN in comparisons, `min`/`max` dropping a NaN
//! operand, `.ftz`, `.sat`), and on 16-bit values (`eval16.rs`); anything else is refused, so a
//! clamp it cannot evaluate is unproven, never assumed right.
use super::eval16;
use crate::ptx::{Instruction, Operand};

/// PTX's canonical NaN (what `min.NaN`, `max.NaN` return).
const CANONICAL_NAN: u32 = 0x7fff_ffff;

/// Why the interpreter could not run an instruction of a clamp's slice (the instruction itself
/// and its line come with it, in [`Unprovable::Evaluation`](super::clamp::Unprovable)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EvalError {
    /// A 64-bit or 8-bit type: only 32-bit, 16-bit and predicate types are evaluated.
    WideType,
    /// Arithmetic on `f16`, `bf16`, `f16x2` or `bf16x2` values: of the 16-bit float types, only
    /// the conversions to and from `f32` are evaluated.
    HalfFloat,
    /// A vector destination (`mov.b32 {%rs1, %rs2}, %r1`): the interpreter gives one value per
    /// instruction, and could not tell which element a register is.
    VectorDestination,
    /// No type suffix the interpreter knows.
    NoType,
    /// A comparison operator it does not know.
    UnknownComparison {
        /// The operator, e.g. `lg`.
        op: String,
    },
    /// A `setp` on predicates.
    PredicateComparison,
    /// A `testp` test it does not know.
    UnknownTest {
        /// The test.
        test: String,
    },
    /// Not as many source operands as the instruction takes.
    OperandCount {
        /// Sources the instruction takes.
        expected: usize,
        /// Sources it has.
        got: usize,
    },
    /// An instruction the interpreter does not evaluate at all.
    NotEvaluated,
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvalError::WideType => {
                f.write_str("only 32-bit, 16-bit and predicate types are evaluated")
            }
            EvalError::HalfFloat => f.write_str(
                "of the 16-bit float types, only conversions to and from f32 are evaluated",
            ),
            EvalError::VectorDestination => f.write_str(
                "an instruction that defines several registers at once is not evaluated",
            ),
            EvalError::NoType => f.write_str("it has no type the audit evaluates"),
            EvalError::UnknownComparison { op } => write!(f, "unknown comparison `{op}`"),
            EvalError::PredicateComparison => f.write_str("setp on predicates is not evaluated"),
            EvalError::UnknownTest { test } => write!(f, "unknown testp `{test}`"),
            EvalError::OperandCount { expected, got } => {
                write!(f, "expected {expected} source operands, found {got}")
            }
            EvalError::NotEvaluated => f.write_str("the audit does not evaluate this instruction"),
        }
    }
}

/// The type an instruction operates on, from its last type modifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ty {
    F32,
    B32,
    U32,
    S32,
    Pred,
    B16,
    U16,
    S16,
    /// `f16`, `bf16`, `f16x2`, `bf16x2`: only `cvt` takes them.
    HalfFloat,
}

fn ty(inst: &Instruction) -> Result<Ty, EvalError> {
    let mods = || inst.opcode.split('.').skip(1);
    let wide = mods().any(|m| matches!(m, "f64" | "b64" | "u64" | "s64" | "b8" | "u8" | "s8"));
    if wide {
        return Err(EvalError::WideType);
    }
    mods()
        .filter_map(|m| match m {
            "f32" => Some(Ty::F32),
            "b32" => Some(Ty::B32),
            "u32" => Some(Ty::U32),
            "s32" => Some(Ty::S32),
            "pred" => Some(Ty::Pred),
            "b16" => Some(Ty::B16),
            "u16" => Some(Ty::U16),
            "s16" => Some(Ty::S16),
            "f16" | "bf16" | "f16x2" | "bf16x2" => Some(Ty::HalfFloat),
            _ => None,
        })
        .last()
        .ok_or(EvalError::NoType)
}

/// `Ok` if the instruction has `n` source operands.
pub(super) fn need(args: &[u32], n: usize) -> Result<(), EvalError> {
    if args.len() == n {
        Ok(())
    } else {
        Err(EvalError::OperandCount {
            expected: n,
            got: args.len(),
        })
    }
}

fn f(bits: u32) -> f32 {
    f32::from_bits(bits)
}

fn ftz(bits: u32, on: bool) -> u32 {
    if on && f(bits).is_subnormal() {
        bits & 0x8000_0000
    } else {
        bits
    }
}

/// Parses an immediate operand as a 32-bit pattern for type `ty`.
pub(super) fn immediate(text: &str, ty_f32: bool) -> Option<u32> {
    let t = text.trim();
    if let Some(hex) = t.strip_prefix("0f").or_else(|| t.strip_prefix("0F")) {
        return u32::from_str_radix(hex, 16).ok();
    }
    let (negative, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t),
    };
    let int = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i64::from_str_radix(hex.trim_end_matches(['U', 'u']), 16).ok()
    } else {
        digits.trim_end_matches(['U', 'u']).parse::<i64>().ok()
    };
    match int {
        Some(v) => {
            let v = if negative { -v } else { v };
            if ty_f32 && t.contains('.') {
                None
            } else {
                Some(v as u32)
            }
        }
        None if ty_f32 => t.parse::<f32>().ok().map(f32::to_bits),
        None => None,
    }
}

/// Float comparison `op` of PTX `setp`/`testp`.
fn compare_f32(op: &str, a: f32, b: f32) -> Result<bool, EvalError> {
    let unordered = a.is_nan() || b.is_nan();
    Ok(match op {
        "eq" => !unordered && a == b,
        "ne" => !unordered && a != b,
        "lt" => !unordered && a < b,
        "le" => !unordered && a <= b,
        "gt" => !unordered && a > b,
        "ge" => !unordered && a >= b,
        "equ" => unordered || a == b,
        "neu" => unordered || a != b,
        "ltu" => unordered || a < b,
        "leu" => unordered || a <= b,
        "gtu" => unordered || a > b,
        "geu" => unordered || a >= b,
        "num" => !unordered,
        "nan" => unordered,
        other => {
            return Err(EvalError::UnknownComparison {
                op: other.to_string(),
            })
        }
    })
}

pub(super) fn compare_int(op: &str, a: u32, b: u32, signed: bool) -> Result<bool, EvalError> {
    let (sa, sb) = (a as i32, b as i32);
    Ok(match op {
        "eq" => a == b,
        "ne" => a != b,
        "lt" if signed => sa < sb,
        "le" if signed => sa <= sb,
        "gt" if signed => sa > sb,
        "ge" if signed => sa >= sb,
        "lt" | "lo" => a < b,
        "le" | "ls" => a <= b,
        "gt" | "hi" => a > b,
        "ge" | "hs" => a >= b,
        other => {
            return Err(EvalError::UnknownComparison {
                op: other.to_string(),
            })
        }
    })
}

/// `min`/`max` of PTX: a NaN operand is dropped (both NaN: canonical NaN), `-0 < +0`; with
/// `.NaN`, any NaN operand gives the canonical NaN.
fn min_max(a: u32, b: u32, max: bool, nan_propagates: bool) -> u32 {
    let (x, y) = (f(a), f(b));
    match (x.is_nan(), y.is_nan()) {
        (true, true) => return CANONICAL_NAN,
        (true, false) | (false, true) if nan_propagates => return CANONICAL_NAN,
        (true, false) => return b,
        (false, true) => return a,
        (false, false) => {}
    }
    // Order with -0 below +0.
    let key = |v: u32| -> i64 {
        let s = v as i32 as i64;
        if s < 0 {
            -(s & 0x7fff_ffff) - 1
        } else {
            s
        }
    };
    let pick_a = if max {
        key(a) >= key(b)
    } else {
        key(a) <= key(b)
    };
    if pick_a {
        a
    } else {
        b
    }
}

/// `setp.cmp[.bool].type p, a, b[, c]`: `compare(cmp, a, b)`, combined with the predicate `c`
/// by the boolean operator if there is one.
pub(super) fn setp(
    mods: &[&str],
    args: &[u32],
    compare: impl FnOnce(&str, u32, u32) -> Result<bool, EvalError>,
) -> Result<u32, EvalError> {
    let cmp = mods.first().copied().unwrap_or("");
    let bool_op = mods
        .get(1)
        .copied()
        .filter(|m| matches!(*m, "and" | "or" | "xor"));
    need(args, if bool_op.is_some() { 3 } else { 2 })?;
    let r = compare(cmp, args[0], args[1])?;
    let c = args.get(2).map(|&c| c != 0);
    Ok(match (bool_op, c) {
        (Some("and"), Some(c)) => r && c,
        (Some("or"), Some(c)) => r || c,
        (Some("xor"), Some(c)) => r ^ c,
        _ => r,
    } as u32)
}

/// Up to [`Mods::CAP`] items of an opcode's modifiers, on the stack: the interpreter runs every
/// instruction of a clamp on tens of thousands of cases, and a heap list per instruction and
/// case was most of its time.
pub(super) struct Mods<'a> {
    items: [&'a str; Mods::CAP],
    len: usize,
}

impl<'a> Mods<'a> {
    const CAP: usize = 8;

    /// The modifiers of `opcode` (everything after its first `.`) for which `keep` holds. More
    /// than [`Mods::CAP`] is no opcode the interpreter knows: the extra ones are kept as one
    /// `"?"`, which no rule accepts.
    pub(super) fn of(opcode: &'a str, keep: impl Fn(&str) -> bool) -> Self {
        let mut m = Mods {
            items: [""; Mods::CAP],
            len: 0,
        };
        for item in opcode.split('.').skip(1).filter(|x| keep(x)) {
            if m.len == Mods::CAP {
                m.items[Mods::CAP - 1] = "?";
                break;
            }
            m.items[m.len] = item;
            m.len += 1;
        }
        m
    }

    /// The items of `mods` (at most [`Mods::CAP`], as [`Mods::of`] makes them) for which
    /// `keep` holds.
    pub(super) fn of_slice(mods: &[&'a str], keep: impl Fn(&str) -> bool) -> Self {
        let mut m = Mods {
            items: [""; Mods::CAP],
            len: 0,
        };
        for &item in mods.iter().filter(|x| keep(x)).take(Mods::CAP) {
            m.items[m.len] = item;
            m.len += 1;
        }
        m
    }

    pub(super) fn as_slice(&self) -> &[&'a str] {
        &self.items[..self.len]
    }
}

/// Evaluates one instruction given its source operands' values (registers already looked up,
/// immediates parsed). Returns the destination's value.
pub(super) fn apply(inst: &Instruction, args: &[u32]) -> Result<u32, EvalError> {
    let op = inst.op();
    let mods = Mods::of(&inst.opcode, |_| true);
    let mods = mods.as_slice();
    let has = |m: &str| mods.contains(&m);
    let t = ty(inst)?;
    if matches!(inst.operands.first(), Some(Operand::Vector(_))) {
        return Err(EvalError::VectorDestination);
    }
    if op == "cvt" {
        return eval16::cvt(mods, args);
    }
    match t {
        Ty::B16 | Ty::U16 | Ty::S16 => return eval16::apply(op, t, mods, args),
        Ty::HalfFloat => return Err(EvalError::HalfFloat),
        _ => {}
    }
    // Modifiers that change a 32-bit result and are not implemented (`max.relu.s32`,
    // `min.xorsign.abs.f32`): refused rather than read past.
    if mods
        .iter()
        .any(|m| matches!(*m, "relu" | "xorsign" | "abs" | "satfinite" | "oob"))
    {
        return Err(EvalError::NotEvaluated);
    }
    let ftz_on = has("ftz");
    let need = |n: usize| need(args, n);
    let rounding_ok = !mods.iter().any(|m| {
        matches!(
            *m,
            "rz" | "rm" | "rp" | "approx" | "full" | "rni" | "rzi" | "rmi" | "rpi"
        )
    });
    let float_result = |v: f32| -> u32 {
        let mut bits = ftz(v.to_bits(), ftz_on);
        if has("sat") {
            let x = f(bits);
            bits = if x.is_nan() || x <= 0.0 {
                0
            } else if x >= 1.0 {
                1.0f32.to_bits()
            } else {
                bits
            };
        }
        bits
    };
    let fa = |i: usize| f(ftz(args[i], ftz_on));
    match (op, t) {
        ("mov", _) => {
            need(1)?;
            Ok(args[0])
        }
        ("abs", Ty::F32) => {
            need(1)?;
            Ok(ftz(args[0], ftz_on) & 0x7fff_ffff)
        }
        ("neg", Ty::F32) => {
            need(1)?;
            Ok(ftz(args[0], ftz_on) ^ 0x8000_0000)
        }
        ("abs", Ty::S32) => {
            need(1)?;
            Ok((args[0] as i32).wrapping_abs() as u32)
        }
        ("neg", Ty::S32) => {
            need(1)?;
            Ok((args[0] as i32).wrapping_neg() as u32)
        }
        ("copysign", Ty::F32) => {
            // `copysign d, a, b`: b's magnitude with a's sign.
            need(2)?;
            Ok((args[1] & 0x7fff_ffff) | (args[0] & 0x8000_0000))
        }
        ("selp", _) => {
            need(3)?;
            Ok(if args[2] != 0 { args[0] } else { args[1] })
        }
        ("min" | "max", Ty::F32) => {
            need(2)?;
            let r = min_max(
                ftz(args[0], ftz_on),
                ftz(args[1], ftz_on),
                op == "max",
                has("NaN"),
            );
            Ok(r)
        }
        ("min" | "max", Ty::U32 | Ty::S32) => {
            need(2)?;
            let signed = t == Ty::S32;
            let a_less = if signed {
                (args[0] as i32) < (args[1] as i32)
            } else {
                args[0] < args[1]
            };
            Ok(if (op == "min") == a_less {
                args[0]
            } else {
                args[1]
            })
        }
        ("add" | "sub" | "mul" | "div", Ty::F32) if rounding_ok => {
            need(2)?;
            let (a, b) = (fa(0), fa(1));
            Ok(float_result(match op {
                "add" => a + b,
                "sub" => a - b,
                "mul" => a * b,
                _ => a / b,
            }))
        }
        ("fma" | "mad", Ty::F32) if rounding_ok => {
            need(3)?;
            Ok(float_result(fa(0).mul_add(fa(1), fa(2))))
        }
        ("sqrt", Ty::F32) if rounding_ok => {
            need(1)?;
            Ok(float_result(fa(0).sqrt()))
        }
        ("and" | "or" | "xor", Ty::B32 | Ty::U32 | Ty::S32 | Ty::Pred) => {
            need(2)?;
            Ok(match op {
                "and" => args[0] & args[1],
                "or" => args[0] | args[1],
                _ => args[0] ^ args[1],
            })
        }
        ("not", Ty::Pred) => {
            need(1)?;
            Ok((args[0] == 0) as u32)
        }
        ("not", Ty::B32 | Ty::U32 | Ty::S32) => {
            need(1)?;
            Ok(!args[0])
        }
        ("add" | "sub", Ty::S32) if has("sat") => {
            // `.sat` (s32 only): clamped to the s32 range instead of wrapping.
            need(2)?;
            let (a, b) = (args[0] as i32, args[1] as i32);
            Ok(if op == "add" {
                a.saturating_add(b)
            } else {
                a.saturating_sub(b)
            } as u32)
        }
        ("add" | "sub", Ty::U32 | Ty::S32 | Ty::B32) if !has("sat") => {
            need(2)?;
            Ok(if op == "add" {
                args[0].wrapping_add(args[1])
            } else {
                args[0].wrapping_sub(args[1])
            })
        }
        ("shl", _) => {
            need(2)?;
            Ok(if args[1] >= 32 { 0 } else { args[0] << args[1] })
        }
        ("shr", Ty::S32) => {
            need(2)?;
            Ok(((args[0] as i32) >> args[1].min(31)) as u32)
        }
        ("shr", _) => {
            need(2)?;
            Ok(if args[1] >= 32 { 0 } else { args[0] >> args[1] })
        }
        ("bfe", Ty::U32) => {
            // PTX's bit-field extract: `len` bits of `a` from bit `pos` (both taken from their
            // low 8 bits), zero-filled past bit 31 (unsigned: no sign to replicate). LLVM
            // extracts a bf16 rounding's parity bit (`bfe.u32 %r, %r, 16, 1`) this way.
            need(3)?;
            let (pos, len) = (args[1] & 0xff, args[2] & 0xff);
            let shifted = if pos >= 32 { 0 } else { args[0] >> pos };
            Ok(if len >= 32 {
                shifted
            } else {
                shifted & ((1u32 << len) - 1)
            })
        }
        ("setp", Ty::Pred) => Err(EvalError::PredicateComparison),
        ("setp", _) => setp(mods, args, |cmp, a, b| match t {
            Ty::F32 => compare_f32(cmp, f(ftz(a, ftz_on)), f(ftz(b, ftz_on))),
            Ty::S32 => compare_int(cmp, a, b, true),
            _ => compare_int(cmp, a, b, false),
        }),
        ("testp", Ty::F32) => {
            need(1)?;
            let x = f(args[0]);
            let test = mods.first().copied().unwrap_or("");
            Ok(match test {
                "finite" => x.is_finite(),
                "infinite" => x.is_infinite(),
                "number" => !x.is_nan(),
                "notanumber" => x.is_nan(),
                "normal" => x.is_normal(),
                "subnormal" => x.is_subnormal(),
                other => {
                    return Err(EvalError::UnknownTest {
                        test: other.to_string(),
                    })
                }
            } as u32)
        }
        _ => Err(EvalError::NotEvaluated),
    }
}

/// Whether `operand` is something [`apply`] can take as a source: a register or an immediate.
pub(super) fn is_value(operand: &Operand) -> bool {
    matches!(operand, Operand::Register(_) | Operand::Immediate(_))
}

/// Whether the instruction's operands are plain (no vector destination, no negated predicate,
/// which the reader does not keep).
pub(super) fn plain_operands(inst: &Instruction) -> bool {
    !inst.text.contains('!') && !inst.text.contains('|')
}

/// Whether `inst` is an `f32` instruction (for parsing its immediates).
pub(super) fn is_f32(inst: &Instruction) -> bool {
    inst.opcode.split('.').any(|m| m == "f32")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inst(text: &str) -> Instruction {
        crate::ptx::instructions(&[format!("\t{text}")], 1)
            .pop()
            .expect("one instruction")
    }

    #[test]
    fn what_the_interpreter_cannot_run_is_a_typed_error() {
        let cases = [
            (
                "add.s64 \t%rd1, %rd2, %rd3;",
                vec![1, 2],
                EvalError::WideType,
            ),
            (
                "add.f32 \t%f1, %f2;",
                vec![1],
                EvalError::OperandCount {
                    expected: 2,
                    got: 1,
                },
            ),
            (
                "setp.eq.pred \t%p1, %p2, %p3;",
                vec![0, 1],
                EvalError::PredicateComparison,
            ),
            (
                "rcp.approx.f32 \t%f1, %f2;",
                vec![1],
                EvalError::NotEvaluated,
            ),
        ];
        for (text, args, expected) in cases {
            assert_eq!(apply(&inst(text), &args), Err(expected.clone()), "{text}");
        }
        // Something it does run, for contrast: an f32 add of two values.
        let sum = apply(
            &inst("add.f32 \t%f1, %f2, %f3;"),
            &[1.5f32.to_bits(), 2.0f32.to_bits()],
        );
        assert_eq!(sum, Ok(3.5f32.to_bits()));
    }

    #[test]
    fn bit_field_extract_takes_len_bits_from_pos() {
        let run = |args: &[u32]| apply(&inst("bfe.u32 \t%r1, %r2, %r3, %r4;"), args);
        // The parity bit of a bf16 rounding: bit 16.
        assert_eq!(run(&[0x3f81_0000, 16, 1]), Ok(1));
        assert_eq!(run(&[0x3f80_ffff, 16, 1]), Ok(0));
        assert_eq!(run(&[0xdead_beef, 4, 8]), Ok(0xee));
        // Past bit 31 the field is zero-filled; a length of 0 extracts nothing.
        assert_eq!(run(&[0xffff_ffff, 28, 8]), Ok(0xf));
        assert_eq!(run(&[0xffff_ffff, 40, 8]), Ok(0));
        assert_eq!(run(&[0xffff_ffff, 3, 0]), Ok(0));
        assert_eq!(run(&[0x8000_0001, 0, 32]), Ok(0x8000_0001));
        // Only the low 8 bits of the position and the length count.
        assert_eq!(run(&[0xf0, 0x104, 0x204]), Ok(0xf));
        // The signed form replicates a sign bit: not implemented, so refused.
        let signed = apply(&inst("bfe.s32 \t%r1, %r2, %r3, %r4;"), &[1, 0, 1]);
        assert!(signed.is_err());
    }

    #[test]
    fn integer_saturation_is_evaluated_and_unknown_value_modifiers_are_refused() {
        let run = |text: &str, args: &[u32]| apply(&inst(text), args);
        // `.sat` clamps to the s32 range where plain `add` wraps.
        let max = i32::MAX as u32;
        assert_eq!(run("add.s32 \t%r1, %r2, %r3;", &[max, 1]), Ok(0x8000_0000));
        assert_eq!(run("add.sat.s32 \t%r1, %r2, %r3;", &[max, 1]), Ok(max));
        let min = i32::MIN as u32;
        assert_eq!(run("sub.sat.s32 \t%r1, %r2, %r3;", &[min, 1]), Ok(min));
        assert_eq!(run("add.sat.s32 \t%r1, %r2, %r3;", &[5, u32::MAX]), Ok(4));
        // These change the result in ways not implemented: refused, not read past.
        for text in [
            "max.relu.s32 \t%r1, %r2, %r3;",
            "min.xorsign.abs.f32 \t%f1, %f2, %f3;",
            "add.sat.u32 \t%r1, %r2, %r3;",
        ] {
            assert_eq!(run(text, &[1, 2]), Err(EvalError::NotEvaluated), "{text}");
        }
    }
}
