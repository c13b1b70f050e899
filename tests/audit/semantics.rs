//! The clamp proof is semantic, not a pattern: on a one-entry module, clamps of other shapes that
//! compute the contract are accepted, and clamps that look alike but differ on one input are
//! refused at that input. The refused cases also pin the interpreter to PTX's semantics (`min`
//! and `max` drop a NaN operand and order -0 below +0; an integer compare of float bits treats
//! NaN as a huge number; `copysign d, a, b` takes b's magnitude and a's sign).
use adamant_build::audit::{audit, AuditReport, ClampFailure, Violation};
use adamant_device::abi::{
    KernelDescriptor, KernelKind, KernelParam, ParamRole, ParamType, Rounding, Storage,
};

static PARAMS: [KernelParam; 4] = [
    KernelParam {
        name: "p",
        ty: ParamType::Ptr,
        role: ParamRole::ParamBuffer,
        storage: Storage::F32,
        rounding: Rounding::Nearest,
    },
    KernelParam {
        name: "len",
        ty: ParamType::Usize,
        role: ParamRole::Len,
        storage: Storage::F32,
        rounding: Rounding::Nearest,
    },
    KernelParam {
        name: "records",
        ty: ParamType::Ptr,
        role: ParamRole::Records,
        storage: Storage::F32,
        rounding: Rounding::Nearest,
    },
    KernelParam {
        name: "weight_clamp_max_abs",
        ty: ParamType::F32,
        role: ParamRole::ClampBound,
        storage: Storage::F32,
        rounding: Rounding::Nearest,
    },
];

static TINY: KernelDescriptor = KernelDescriptor {
    set: adamant_device::abi::OWN_SET,
    defined_at: "audit_semantics (tests/audit/semantics.rs)",
    name: "tiny",
    kind: KernelKind::Optimizer,
    params: &PARAMS,
    record: &[],
};

/// A module with one optimizer entry: `x = p[tid]`, then `clamp` (PTX lines computing `%out`
/// from `%x` and the bound `%b`), then `p[tid] = %out`, then what every optimizer entry has: an
/// atomic into its records' accumulators and a store of its published record.
fn module(clamp: &str) -> String {
    format!(
        ".version 7.8\n.target sm_90\n.address_size 64\n\n\
         .visible .entry tiny(\n\t.param .u64 .ptr .align 1 tiny_param_0,\n\
         \t.param .u64 tiny_param_1,\n\t.param .u64 tiny_param_2,\n\t.param .f32 tiny_param_3\n)\n{{\n\
         \t.reg .pred %p<8>;\n\t.reg .b32 %r<32>;\n\t.reg .b64 %rd<8>;\n\
         \tld.param.b64 \t%rd1, [tiny_param_0];\n\tcvta.to.global.u64 \t%rd2, %rd1;\n\
         \tld.param.b32 \t%b, [tiny_param_3];\n\tmov.u32 \t%r1, %tid.x;\n\
         \tmul.wide.u32 \t%rd3, %r1, 4;\n\tadd.s64 \t%rd4, %rd2, %rd3;\n\
         \tld.global.b32 \t%x, [%rd4];\n{clamp}\n\tst.global.b32 \t[%rd4], %out;\n\
         \tld.param.b64 \t%rd5, [tiny_param_2];\n\tld.global.b64 \t%rd6, [%rd5];\n\
         \tatom.global.add.u32 \t%r9, [%rd6], 1;\n\tld.global.b64 \t%rd7, [%rd5+8];\n\
         \tst.global.b32 \t[%rd7], %r9;\n\tret;\n\n}}\n"
    )
}

fn run(clamp: &str) -> AuditReport {
    audit(&module(clamp), &[&TINY])
}

/// The clamp LLVM emits for `weight_clamp`: `|x| > b ? copysign(b, x) : x`, then `b > 0 ? .. : x`.
const CANONICAL: &str = "\tabs.f32 \t%a, %x;\n\tsetp.gt.f32 \t%p1, %a, %b;\n\
     \tcopysign.f32 \t%c, %x, %b;\n\tselp.f32 \t%s, %c, %x, %p1;\n\
     \tsetp.gt.f32 \t%p2, %b, 0f00000000;\n\tselp.f32 \t%out, %s, %x, %p2;";

/// The audit of [`CANONICAL`] with the line `from` replaced by `to` (which must be there).
fn run_variant(from: &str, to: &str) -> AuditReport {
    assert!(
        CANONICAL.contains(from),
        "no `{from}` in the canonical clamp"
    );
    run(&CANONICAL.replacen(from, to, 1))
}

/// The one failure of the entry's only store.
fn failure(report: &AuditReport) -> &ClampFailure {
    match report.violations.as_slice() {
        [Violation::ClampBypassed { failure, .. }] => failure,
        other => panic!("expected one ClampBypassed, got {other:?}\n{report}"),
    }
}

#[test]
fn the_compilers_clamp_is_accepted() {
    let report = run(CANONICAL);
    assert!(report.is_ok(), "{report}");
    assert!(report.entry("tiny").unwrap().clamp.unwrap().cases_evaluated > 1000);
}

#[test]
fn a_min_based_clamp_with_a_nan_guard_is_accepted() {
    // copysign(min(|x|, b), x), with NaN passed through and bound <= 0 (or NaN) off: the same
    // function in another shape.
    let report = run("\tabs.f32 \t%a, %x;\n\tmin.f32 \t%m, %a, %b;\n\
         \tcopysign.f32 \t%c, %x, %m;\n\tsetp.nan.f32 \t%p1, %x, %x;\n\
         \tselp.f32 \t%s, %x, %c, %p1;\n\tsetp.gt.f32 \t%p2, %b, 0f00000000;\n\
         \tselp.f32 \t%out, %s, %x, %p2;");
    assert!(report.is_ok(), "{report}");
}

#[test]
fn the_seeds_min_max_clamp_is_refused_at_nan() {
    // fminf(fmaxf(x, -b), b). For x = NaN and b = 0, PTX's max drops the NaN and gives -0 (which
    // min keeps, -0 < +0): the weight becomes -0 and the NaN is gone.
    let report = run("\tneg.f32 \t%n, %b;\n\tmax.f32 \t%t, %x, %n;\n\tmin.f32 \t%out, %t, %b;");
    match failure(&report) {
        ClampFailure::Wrong { x, bound, got, .. } => {
            assert!(f32::from_bits(*x).is_nan());
            assert_eq!(f32::from_bits(*bound), 0.0);
            assert_eq!(
                *got,
                (-0.0f32).to_bits(),
                "max/min must drop NaN and order -0 < +0"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_integer_compare_of_float_bits_is_refused_at_nan() {
    // |x| > b as u32 bit patterns: right for every number, but NaN's bits are above +inf's.
    let report = run_variant(
        "\tabs.f32 \t%a, %x;\n\tsetp.gt.f32 \t%p1, %a, %b;",
        "\tand.b32 \t%a, %x, 2147483647;\n\tsetp.gt.u32 \t%p1, %a, %b;",
    );
    match failure(&report) {
        ClampFailure::Wrong { x, got, bound, .. } => {
            assert!(f32::from_bits(*x).is_nan());
            assert_eq!(f32::from_bits(*got).abs(), f32::from_bits(*bound));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn copysign_with_swapped_operands_is_refused() {
    // `copysign d, b, x` is |x| with b's sign: for x = -inf it stores +inf's magnitude... wrong.
    let report = run_variant("copysign.f32 \t%c, %x, %b;", "copysign.f32 \t%c, %b, %x;");
    assert!(matches!(failure(&report), ClampFailure::Wrong { .. }));
}

#[test]
fn an_unordered_compare_is_refused_at_nan() {
    let report = run_variant("setp.gt.f32 \t%p1", "setp.gtu.f32 \t%p1");
    match failure(&report) {
        ClampFailure::Wrong { x, .. } => assert!(f32::from_bits(*x).is_nan()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_flushed_compare_is_refused_at_a_subnormal() {
    // .ftz flushes a subnormal |x| to 0 before the compare: with a subnormal bound below it, the
    // weight is left unclamped.
    let report = run_variant("setp.gt.f32 \t%p1", "setp.gt.ftz.f32 \t%p1");
    match failure(&report) {
        ClampFailure::Wrong { x, .. } => assert!(f32::from_bits(*x).is_subnormal()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_value_that_depends_on_more_than_x_and_the_bound_is_unprovable() {
    // The thread index slipped into the clamp: it could clamp only some threads.
    let report = run_variant(
        "selp.f32 \t%s, %c, %x, %p1;",
        "setp.ne.u32 \t%p3, %r1, 7;\n\tand.pred \t%p4, %p1, %p3;\n\tselp.f32 \t%s, %c, %x, %p4;",
    );
    assert!(matches!(failure(&report), ClampFailure::Unprovable { .. }));
}

#[test]
fn a_clamp_defined_under_a_guard_is_unprovable() {
    let report = run_variant(
        "selp.f32 \t%out, %s, %x, %p2;",
        "mov.b32 \t%out, %x;\n\t@%p2 mov.b32 \t%out, %s;",
    );
    assert!(matches!(failure(&report), ClampFailure::Unprovable { .. }));
}

/// The canonical module with `from` replaced by `to` in the records epilogue.
fn run_records_variant(from: &str, to: &str) -> AuditReport {
    let module = module(CANONICAL);
    assert!(module.contains(from), "no `{from}` in the module");
    audit(&module.replacen(from, to, 1), &[&TINY])
}

#[test]
fn an_entry_that_does_not_reduce_into_its_records_is_refused() {
    let report = run_records_variant("\tatom.global.add.u32 \t%r9, [%rd6], 1;\n", "");
    match report.violations.as_slice() {
        [Violation::RecordsNotWritten {
            atomics: 0,
            stores: 1,
            ..
        }] => {}
        other => panic!("expected RecordsNotWritten, got {other:?}\n{report}"),
    }
}

#[test]
fn an_entry_that_does_not_publish_its_records_is_refused() {
    let report = run_records_variant("\tst.global.b32 \t[%rd7], %r9;\n", "");
    match report.violations.as_slice() {
        [Violation::RecordsNotWritten {
            atomics: 1,
            stores: 0,
            ..
        }] => {}
        other => panic!("expected RecordsNotWritten, got {other:?}\n{report}"),
    }
}

#[test]
fn a_write_into_the_records_header_itself_is_refused() {
    // The header holds the two pointers the entry writes through: writing it would redirect them.
    let report = run_records_variant("[%rd7], %r9", "[%rd5], %r9");
    assert!(
        report
            .violations
            .iter()
            .any(|v| matches!(v, Violation::WriteToReadOnly { param, .. } if param == "records")),
        "{report}"
    );
}

#[test]
fn an_optimizer_descriptor_without_records_is_refused() {
    static NO_RECORDS: [KernelParam; 3] = [PARAMS[0], PARAMS[1], PARAMS[3]];
    static BARE: KernelDescriptor = KernelDescriptor {
        params: &NO_RECORDS,
        ..TINY
    };
    let ptx = module(CANONICAL).replace("\t.param .u64 tiny_param_2,\n", "");
    let report = audit(&ptx, &[&BARE]);
    assert!(
        report
            .violations
            .iter()
            .any(|v| matches!(v, Violation::RecordsMissing { .. })),
        "{report}"
    );
}
