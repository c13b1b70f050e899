//! The 16-bit instructions on edge values, and the float conversions against the `half` crate
//! over every 16-bit pattern and a stride of f32 patterns with every tie and overflow edge.
use super::*;
use crate::audit::eval::apply;
use crate::ptx::Instruction;

fn inst(text: &str) -> Instruction {
    crate::ptx::instructions(&[format!("\t{text}")], 1)
        .pop()
        .expect("one instruction")
}

/// `opcode` run on `args` (operand names are placeholders: only their count matters).
fn run(opcode: &str, args: &[u32]) -> Result<u32, EvalError> {
    let sources: Vec<String> = (0..args.len()).map(|i| format!("%rs{}", i + 2)).collect();
    apply(
        &inst(&format!("{opcode} %rs1, {};", sources.join(", "))),
        args,
    )
}

fn ok(opcode: &str, args: &[u32]) -> u32 {
    run(opcode, args).unwrap_or_else(|e| panic!("{opcode} {args:x?}: {e}"))
}

#[test]
fn sixteen_bit_logic_and_moves_read_and_write_only_the_low_half() {
    // The upper half of a source (an immediate `-1` arrives as 0xffffffff) is not read, and a
    // result's upper half is zero.
    assert_eq!(ok("mov.b16", &[0xdead_beef]), 0xbeef);
    assert_eq!(ok("mov.s16", &[0xffff_ffff]), 0xffff);
    assert_eq!(ok("and.b16", &[0xffff_f0f0, 0x1234_ff00]), 0xf000);
    assert_eq!(ok("or.b16", &[0xffff_0001, 0x8000]), 0x8001);
    assert_eq!(ok("xor.b16", &[0xffff, 0xffff_00ff]), 0xff00);
    assert_eq!(ok("not.b16", &[0]), 0xffff);
    assert_eq!(ok("not.b16", &[0xffff_0000]), 0xffff);
    assert_eq!(ok("not.b16", &[0x8000]), 0x7fff);
    assert_eq!(ok("selp.b16", &[0x1_1234, 0x5678, 1]), 0x1234);
    assert_eq!(ok("selp.u16", &[0x1234, 0xffff_5678, 0]), 0x5678);
}

#[test]
fn sixteen_bit_shifts_clamp_the_amount_to_the_width() {
    for t in ["shl.b16"] {
        assert_eq!(ok(t, &[0x8001, 1]), 0x0002);
        assert_eq!(ok(t, &[0x0001, 15]), 0x8000);
        for amount in [16, 17, 31, 32, 0x8000_0000, u32::MAX] {
            assert_eq!(ok(t, &[0xffff, amount]), 0, "{t} by {amount}");
        }
    }
    for t in ["shr.b16", "shr.u16"] {
        // Logical: zeros come in, even for a value with its top bit set.
        assert_eq!(ok(t, &[0x8000, 15]), 1);
        assert_eq!(ok(t, &[0xffff_8000, 1]), 0x4000);
        for amount in [16, 17, 0x8000_0000, u32::MAX] {
            assert_eq!(ok(t, &[0xffff, amount]), 0, "{t} by {amount}");
        }
    }
    // Arithmetic: the sign bit fills, and past the width only the sign is left.
    assert_eq!(ok("shr.s16", &[0x8000, 1]), 0xc000);
    assert_eq!(ok("shr.s16", &[0x8000, 15]), 0xffff);
    assert_eq!(ok("shr.s16", &[0x7fff, 14]), 1);
    for amount in [16, 17, 0x8000_0000, u32::MAX] {
        assert_eq!(ok("shr.s16", &[0x8000, amount]), 0xffff);
        assert_eq!(ok("shr.s16", &[0x7fff, amount]), 0);
    }
    // The amount is a 32-bit operand: 0x10001 is not 1.
    assert_eq!(ok("shl.b16", &[1, 0x1_0001]), 0);
}

#[test]
fn sixteen_bit_arithmetic_wraps_at_sixteen_bits() {
    assert_eq!(ok("add.u16", &[0xffff, 1]), 0);
    assert_eq!(ok("add.s16", &[0x7fff, 1]), 0x8000);
    assert_eq!(ok("add.s16", &[5, 0xffff_ffff]), 4); // 5 + -1
    assert_eq!(ok("sub.u16", &[0, 1]), 0xffff);
    assert_eq!(ok("sub.s16", &[0x8000, 1]), 0x7fff);
    assert_eq!(ok("neg.s16", &[1]), 0xffff);
    assert_eq!(ok("neg.s16", &[0x8000]), 0x8000);
    assert_eq!(ok("neg.s16", &[0]), 0);
    assert_eq!(ok("abs.s16", &[0xffff]), 1);
    assert_eq!(ok("abs.s16", &[0x8000]), 0x8000);
    assert_eq!(ok("mul.lo.u16", &[0xffff, 0xffff]), 1);
    assert_eq!(ok("mul.lo.s16", &[0x0100, 0x0100]), 0);
    assert_eq!(ok("mul.hi.u16", &[0xffff, 0xffff]), 0xfffe);
    assert_eq!(ok("mul.hi.s16", &[0xffff, 0xffff]), 0); // -1 * -1 = 1
    assert_eq!(ok("mul.hi.s16", &[0x8000, 0x7fff]), 0xc000); // -2^30 + 2^15
    assert_eq!(ok("mul.wide.u16", &[0xffff, 0xffff]), 0xfffe_0001);
    assert_eq!(ok("mul.wide.s16", &[0xffff, 2]), 0xffff_fffe);
    assert_eq!(ok("mul.wide.s16", &[0x8000, 0x8000]), 0x4000_0000);
}

#[test]
fn sixteen_bit_min_max_and_comparisons_follow_the_signedness() {
    assert_eq!(ok("min.u16", &[0x8000, 1]), 1);
    assert_eq!(ok("min.s16", &[0x8000, 1]), 0x8000);
    assert_eq!(ok("max.u16", &[0x8000, 0x7fff]), 0x8000);
    assert_eq!(ok("max.s16", &[0x8000, 0x7fff]), 0x7fff);
    assert_eq!(ok("max.s16", &[0xffff_ffff, 0]), 0); // -1 < 0, upper half not read
    let setp = |op: &str, a: u32, b: u32| ok(&format!("setp.{op}"), &[a, b]);
    // -1 against 1: below as signed, above as unsigned.
    let (minus_one, one) = (0xffff, 1);
    for (op, signed, unsigned) in [
        ("eq", 0, 0),
        ("ne", 1, 1),
        ("lt", 1, 0),
        ("le", 1, 0),
        ("gt", 0, 1),
        ("ge", 0, 1),
    ] {
        assert_eq!(
            setp(&format!("{op}.s16"), minus_one, one),
            signed,
            "{op}.s16"
        );
        assert_eq!(
            setp(&format!("{op}.u16"), minus_one, one),
            unsigned,
            "{op}.u16"
        );
    }
    for (op, expected) in [("lo", 0), ("ls", 0), ("hi", 1), ("hs", 1)] {
        assert_eq!(
            setp(&format!("{op}.u16"), minus_one, one),
            expected,
            "{op}.u16"
        );
        assert_eq!(
            setp(&format!("{op}.b16"), minus_one, one),
            expected,
            "{op}.b16"
        );
    }
    // The upper halves are not compared: both are 0x1234.
    assert_eq!(setp("eq.b16", 0xffff_1234, 0x1234), 1);
    assert_eq!(setp("lt.s16", 0x0001_ffff, 0), 1);
    assert_eq!(setp("ge.s16", 0x8000, 0x8000), 1);
    // Combined with a predicate.
    assert_eq!(ok("setp.lt.and.s16", &[0xffff, 0, 0]), 0);
    assert_eq!(ok("setp.lt.or.u16", &[0xffff, 0, 1]), 1);
    assert_eq!(ok("setp.eq.xor.s16", &[3, 3, 1]), 0);
}

#[test]
fn integer_conversions_extend_by_the_source_type_and_saturate_on_request() {
    let cvt = |op: &str, x: u32| ok(&format!("cvt.{op}"), &[x]);
    assert_eq!(cvt("u32.u16", 0xffff), 0xffff);
    assert_eq!(cvt("s32.s16", 0xffff), 0xffff_ffff);
    assert_eq!(cvt("s32.s16", 0x7fff), 0x7fff);
    assert_eq!(cvt("s32.s16", 0x1_8000), 0xffff_8000);
    // The source's signedness decides the extension, not the destination's.
    assert_eq!(cvt("u32.s16", 0x8000), 0xffff_8000);
    assert_eq!(cvt("s32.u16", 0x8000), 0x8000);
    // Narrowing keeps the low half...
    assert_eq!(cvt("u16.u32", 0x1234_5678), 0x5678);
    assert_eq!(cvt("s16.s32", 0xffff_7fff), 0x7fff);
    assert_eq!(cvt("u16.s32", 0xffff_ffff), 0xffff);
    // ...or, with `.sat`, clamps to the destination's range.
    assert_eq!(cvt("sat.u16.u32", 0x1_0000), 0xffff);
    assert_eq!(cvt("sat.u16.s32", 0xffff_ffff), 0);
    assert_eq!(cvt("sat.s16.s32", 0xffff_7fff), 0x8000);
    assert_eq!(cvt("sat.s16.s32", 0x8000), 0x7fff);
    assert_eq!(cvt("sat.s16.s32", 0xffff_fffe), 0xfffe);
    assert_eq!(cvt("sat.s16.u32", 0x8000_0000), 0x7fff);
    assert_eq!(cvt("sat.u32.s16", 0x8000), 0);
    assert_eq!(cvt("sat.s32.u32", 0x8000_0000), 0x7fff_ffff);
    assert_eq!(cvt("sat.u32.s32", 0x8000_0000), 0);
    assert_eq!(cvt("u16.s16", 0xffff), 0xffff);
    assert_eq!(cvt("sat.u16.s16", 0xffff), 0);
    assert_eq!(cvt("sat.s16.u16", 0xffff), 0x7fff);
    assert_eq!(cvt("u32.s32", 0xffff_ffff), 0xffff_ffff);
}

/// Every `stride`-th f32 pattern, and every pattern within `radius` of each of `centres` (both
/// signs): the narrowing's edges.
fn f32_patterns(stride: u32, centres: &[u32], radius: u32) -> Vec<u32> {
    let mut out: Vec<u32> = (0..=u32::MAX).step_by(stride as usize).collect();
    for &c in centres {
        for bits in c.saturating_sub(radius)..=c.saturating_add(radius) {
            out.extend([bits, bits | 0x8000_0000]);
        }
    }
    out
}

/// What `narrow` must give for `bits`: `half`'s value, except that every NaN gives PTX's
/// canonical 0x7fff where `half` keeps the sign and payload.
fn expect_narrow(bits: u32, reference: u16, nan_mask: u16, inf: u16) -> u32 {
    let x = f32::from_bits(bits);
    if x.is_nan() {
        assert!(reference & 0x7fff > inf && reference & nan_mask != 0);
        CANONICAL_NAN_16
    } else {
        u32::from(reference)
    }
}

#[test]
fn cvt_rn_bf16_f32_rounds_like_ieee_round_to_nearest_even() {
    // Ties sit where the 16 dropped bits are 0x8000; around the largest finite bf16 (0x7f7f)
    // rounding reaches infinity; around 0x00800000 lie the subnormal/normal boundary.
    let centres = [
        0x3f80_8000,
        0x3f81_8000,
        0x7f7f_8000,
        0x7f7e_8000,
        0x7f7f_ffff,
        0x0080_0000,
        0x007f_8000,
        0x0000_8000,
        0x0001_8000,
        0x7f80_0000,
    ];
    let cvt = inst("cvt.rn.bf16.f32 %rs1, %f1;");
    for bits in f32_patterns(251, &centres, 0x1_0000) {
        let reference = half::bf16::from_f32(f32::from_bits(bits)).to_bits();
        let expected = expect_narrow(bits, reference, 0x7f, 0x7f80);
        let got = apply(&cvt, &[bits]).expect("evaluated");
        assert_eq!(got, expected, "cvt.rn.bf16.f32 of {bits:#010x}");
    }
}

#[test]
fn cvt_rn_f16_f32_rounds_like_ieee_round_to_nearest_even() {
    // 65504 (0x477fe000) is the largest f16; 65520 (0x477ff000) is the tie that rounds to
    // infinity; 2^-14 (0x38800000) the smallest normal, 2^-24 (0x33800000) the smallest
    // subnormal and 2^-25 (0x33000000) the tie that rounds to zero; 0x3f801000 a tie at 1.
    let centres = [
        0x477f_e000,
        0x477f_f000,
        0x4780_0000,
        0x3880_0000,
        0x387f_e000,
        0x3380_0000,
        0x3300_0000,
        0x33c0_0000,
        0x3f80_1000,
        0x3f80_3000,
        0x0000_0000,
        0x7f80_0000,
    ];
    let cvt = inst("cvt.rn.f16.f32 %rs1, %f1;");
    for bits in f32_patterns(251, &centres, 0x4000) {
        let reference = half::f16::from_f32(f32::from_bits(bits)).to_bits();
        let expected = expect_narrow(bits, reference, 0x3ff, 0x7c00);
        let got = apply(&cvt, &[bits]).expect("evaluated");
        assert_eq!(got, expected, "cvt.rn.f16.f32 of {bits:#010x}");
    }
}

#[test]
fn narrowing_edges_by_hand() {
    let bf16 = |bits: u32| ok("cvt.rn.bf16.f32", &[bits]);
    let f16 = |bits: u32| ok("cvt.rn.f16.f32", &[bits]);
    assert_eq!(bf16(0x3f80_8000), 0x3f80); // tie, even stays
    assert_eq!(bf16(0x3f81_8000), 0x3f82); // tie, odd goes up
    assert_eq!(bf16(0x3f80_8001), 0x3f81);
    assert_eq!(bf16(0x7f7f_8000), 0x7f80); // tie past the largest finite: infinity
    assert_eq!(bf16(0xff7f_7fff), 0xff7f);
    assert_eq!(bf16(0x0000_8000), 0x0000); // subnormal tie, even
    assert_eq!(bf16(0x0001_8000), 0x0002);
    assert_eq!(bf16(0x807f_ffff), 0x8080); // up to the smallest normal
    assert_eq!(f16(0x477f_efff), 0x7bff); // just under 65520
    assert_eq!(f16(0x477f_f000), 0x7c00); // 65520: the tie goes to infinity
    assert_eq!(f16(0xc780_0000), 0xfc00); // -65536
    assert_eq!(f16(0x7f7f_ffff), 0x7c00);
    assert_eq!(f16(0x3300_0000), 0x0000); // 2^-25: tie with zero, even
    assert_eq!(f16(0x3300_0001), 0x0001);
    assert_eq!(f16(0x33c0_0000), 0x0002); // 3 * 2^-25: tie, odd goes up
    assert_eq!(f16(0x387f_f000), 0x0400); // rounds up to the smallest normal
    assert_eq!(f16(0x8000_0001), 0x8000); // an f32 subnormal: signed zero
    for nan in [
        0x7fc0_0000,
        0xffc0_0000,
        0x7f80_0001,
        0xffff_ffff,
        0x7fa0_0000,
    ] {
        assert_eq!(bf16(nan), CANONICAL_NAN_16, "{nan:#x}");
        assert_eq!(f16(nan), CANONICAL_NAN_16, "{nan:#x}");
    }
    // Packed: the first source in the upper half.
    let one = 1f32.to_bits();
    let two = 2f32.to_bits();
    assert_eq!(ok("cvt.rn.bf16x2.f32", &[one, two]), 0x3f80_4000);
    assert_eq!(ok("cvt.rn.f16x2.f32", &[one, two]), 0x3c00_4000);
}

#[test]
fn widening_is_exact_for_every_sixteen_bit_pattern() {
    for h in 0..=0xffffu32 {
        let bf = half::bf16::from_bits(h as u16).to_f32();
        assert_eq!(
            ok("cvt.f32.bf16", &[h]),
            bf.to_bits(),
            "cvt.f32.bf16 of {h:#06x}"
        );
        let hf = half::f16::from_bits(h as u16).to_f32();
        assert_eq!(
            ok("cvt.f32.f16", &[h]),
            hf.to_bits(),
            "cvt.f32.f16 of {h:#06x}"
        );
    }
    // The upper half of the slot is not read.
    assert_eq!(ok("cvt.f32.bf16", &[0xffff_3f80]), 1f32.to_bits());
    // A NaN keeps sign and payload and is quieted; an f16 subnormal becomes a normal f32.
    assert_eq!(ok("cvt.f32.bf16", &[0xff81]), 0xffc1_0000);
    assert_eq!(ok("cvt.f32.f16", &[0x7c01]), 0x7fc0_2000);
    assert_eq!(ok("cvt.f32.f16", &[0x0001]), 0x3380_0000);
    assert_eq!(ok("cvt.f32.bf16", &[0x0001]), 0x0001_0000);
    // And what goes out comes back: every non-NaN 16-bit value survives the round trip.
    for h in 0..=0xffffu32 {
        let back = ok("cvt.rn.bf16.f32", &[ok("cvt.f32.bf16", &[h])]);
        if h & 0x7fff <= 0x7f80 {
            assert_eq!(back, h, "bf16 {h:#06x}");
        }
        let back = ok("cvt.rn.f16.f32", &[ok("cvt.f32.f16", &[h])]);
        if h & 0x7fff <= 0x7c00 {
            assert_eq!(back, h, "f16 {h:#06x}");
        }
    }
}

#[test]
fn what_the_sixteen_bit_interpreter_refuses_is_a_typed_error() {
    let refused = [
        // 8- and 64-bit stay out.
        ("cvt.u32.u8", vec![1], EvalError::WideType),
        ("cvt.u16.u64", vec![1], EvalError::WideType),
        ("add.u64", vec![1, 2], EvalError::WideType),
        // Float arithmetic on 16-bit floats.
        ("add.rn.f16", vec![1, 2], EvalError::HalfFloat),
        ("setp.lt.bf16", vec![1, 2], EvalError::HalfFloat),
        ("fma.rn.bf16x2", vec![1, 2, 3], EvalError::HalfFloat),
        // Modifiers whose exact meaning is not implemented.
        ("cvt.rn.relu.bf16.f32", vec![1], EvalError::NotEvaluated),
        ("cvt.rn.satfinite.f16.f32", vec![1], EvalError::NotEvaluated),
        ("cvt.rz.bf16.f32", vec![1], EvalError::NotEvaluated),
        ("cvt.rn.ftz.f16.f32", vec![1], EvalError::NotEvaluated),
        ("cvt.bf16.f32", vec![1], EvalError::NotEvaluated),
        ("cvt.ftz.f32.f16", vec![1], EvalError::NotEvaluated),
        ("cvt.rn.f32.bf16", vec![1], EvalError::NotEvaluated),
        ("cvt.rni.u16.u32", vec![1], EvalError::NotEvaluated),
        ("cvt.rni.s32.f32", vec![1], EvalError::NotEvaluated),
        ("cvt.rn.bf16.f16", vec![1], EvalError::NotEvaluated),
        ("add.sat.s16", vec![1, 2], EvalError::NotEvaluated),
        ("min.relu.s16", vec![1, 2], EvalError::NotEvaluated),
        ("mul.u16", vec![1, 2], EvalError::NotEvaluated),
        // Signedness unknown.
        ("min.b16", vec![1, 2], EvalError::NotEvaluated),
        ("mul.hi.b16", vec![1, 2], EvalError::NotEvaluated),
        (
            "add.u16",
            vec![1],
            EvalError::OperandCount {
                expected: 2,
                got: 1,
            },
        ),
        (
            "cvt.rn.bf16x2.f32",
            vec![1],
            EvalError::OperandCount {
                expected: 2,
                got: 1,
            },
        ),
    ];
    for (opcode, args, expected) in refused {
        assert_eq!(run(opcode, &args), Err(expected), "{opcode}");
    }
    // A vector destination defines two registers: one value cannot stand for both.
    let unpack = inst("mov.b32 {%rs1, %rs2}, %r1;");
    assert_eq!(apply(&unpack, &[1]), Err(EvalError::VectorDestination));
}
