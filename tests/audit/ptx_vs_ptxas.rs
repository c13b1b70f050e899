//! The reader sees the entries ptxas sees: each tricky module below is assembled by NVIDIA's
//! ptxas (`-v` names every entry it compiles) and read by `adamant_build::ptx`, and both must
//! find the same entry names. Every module must be valid PTX that ptxas accepts, or the
//! comparison would mean nothing; a case ptxas rejects fails the test.
//!
//! These tests need ptxas (scripts/setup.sh installs it from the PyPI wheel nvidia-cuda-nvcc, or
//! set ADAMANT_PTXAS). Without it they fail; they are never skipped.
use std::collections::BTreeSet;

use adamant_build::ptx;
use adamant_build::ptxas::{self, Ptxas};

fn ptxas() -> Ptxas {
    Ptxas::locate().unwrap_or_else(|e| {
        panic!(
            "ptxas is required for this test and was not found: {e}\n(run scripts/setup.sh, or \
             set ADAMANT_PTXAS=/path/to/ptxas)"
        )
    })
}

fn module(body: &str) -> String {
    format!(".version 7.8\n.target sm_90\n.address_size 64\n\n{body}\n")
}

/// (what the case is about, module body, the entries both must see).
const CASES: &[(&str, &str, &[&str])] = &[
    (
        ".entry in a block comment",
        "/* .visible .entry hidden() { ret; } */\n.visible .entry a() { ret; }",
        &["a"],
    ),
    (
        ".entry in a line comment",
        "// .visible .entry hidden() { ret; }\n.visible .entry a() { ret; }",
        &["a"],
    ),
    (
        "name on the line after .entry",
        ".visible .entry\nb()\n{\n\tret;\n}",
        &["b"],
    ),
    (
        "comments between .entry, its name and its parameters",
        ".visible .entry /* x */ c // y\n() { ret; }\n.visible .entry/**/c2(){ret;}",
        &["c", "c2"],
    ),
    (
        "/* inside a line comment opens nothing",
        "// /*\n.visible .entry d() { ret; }\n// */",
        &["d"],
    ),
    (
        "// inside a block comment hides nothing after the comment",
        "/* // */ .visible .entry e() { ret; }",
        &["e"],
    ),
    (
        "block comments do not nest",
        "/* /* */ .visible .entry t() { ret; }\n/* .entry u() { ret; } /* */",
        &["t"],
    ),
    (
        "two entries on one line",
        ".visible .entry f() { ret; } .visible .entry g() { ret; }",
        &["f", "g"],
    ),
    (
        "linkage: .weak, .visible, none; .visible.entry with no space",
        ".weak .entry h() { ret; }\n.entry i() { ret; }\n.visible.entry j() { ret; }",
        &["h", "i", "j"],
    ),
    (
        "performance directives and a .pragma between ) and {",
        ".visible .entry k(.param .u64 k_p) .maxntid 256, 1, 1 .minnctapersm 2 { ret; }\n\
         .visible .entry l()\n.reqntid 128\n.maxnreg 32\n{ ret; }\n\
         .visible .entry m() .pragma \"nounroll\"; { ret; }",
        &["k", "l", "m"],
    ),
    (
        "braces in comments inside a body",
        ".visible .entry n() {\n\t// }\n\t/* } { */ ret;\n\t// .visible .entry o() {\n}",
        &["n"],
    ),
    (
        "parentheses and braces in comments in a parameter list",
        ".visible .entry p(\n\t.param .u64 p_0, // ) {\n\t.param .f32 /* ) */ p_1\n)\n{ ret; }",
        &["p"],
    ),
    (
        ".entry in strings of .file and .pragma (one spanning lines)",
        ".file 1 \"a/*b.entry x() {\"\n.file 2 \"c\n.entry y() { ret; }\n\"\n\
         .visible .entry q() { .pragma \"nounroll\"; ret; }",
        &["q"],
    ),
    (
        "no parameter list; a declaration before the definition",
        ".visible .entry r { ret; }\n.visible .entry s();\n.visible .entry s() { ret; }",
        &["r", "s"],
    ),
    (
        "identifiers starting with $, _ and %",
        ".visible .entry $v() { ret; }\n.visible .entry _w() { ret; }\n.visible .entry %x() { ret; }",
        &["$v", "_w", "%x"],
    ),
    (
        "a body with scopes, vectors, labels, guards and a called .func",
        ".func (.param .b32 rv) helper(.param .b32 x) { st.param.b32 [rv], 1; ret; }\n\
         .visible .entry y(.param .u64 y_p) {\n\t.reg .b32 %r<5>; .reg .b64 %rd<2>; .reg .pred %p<2>;\n\
         \tld.param.u64 %rd1, [y_p];\n\t{ .reg .b32 t; mov.u32 t, %tid.x; }\n\
         \tsetp.eq.u32 %p1, %r1, 0;\n\t@!%p1 bra $L__BB0_1;\n\
         \t{ .param .b32 a; .param .b32 rv; st.param.b32 [a], %r1; \
         call.uni (rv), helper, (a); ld.param.b32 %r2, [rv]; }\n\
         \tst.global.v4.u32 [%rd1+16], {%r1, %r2, %r3, %r4};\n$L__BB0_1:\n\tret;\n}",
        &["y"],
    ),
];

fn ptxas_entries(ptxas: &Ptxas, what: &str, ptx: &str) -> ptxas::PtxasReport {
    ptxas.compile(ptx, ptxas::DEFAULT_ARCH).unwrap_or_else(|e| {
        panic!("ptxas rejects the case `{what}`, so it compares nothing: {e}\n{ptx}")
    })
}

#[test]
fn the_reader_sees_the_entries_ptxas_compiles() {
    let ptxas = ptxas();
    for (what, body, expected) in CASES {
        let ptx = module(body);
        let report = ptxas_entries(&ptxas, what, &ptx);
        let theirs: BTreeSet<String> = report.entries().map(|f| f.name.clone()).collect();
        let read = ptx::parse(&ptx);
        let ours: BTreeSet<String> = read.entries.iter().map(|e| e.name.clone()).collect();
        let expected: BTreeSet<String> = expected.iter().map(|s| s.to_string()).collect();
        assert_eq!(theirs, expected, "ptxas on `{what}`:\n{}", report.output);
        assert_eq!(ours, theirs, "reader vs ptxas on `{what}`");
        assert_eq!(
            read.entries.len(),
            ours.len(),
            "`{what}`: an entry seen twice"
        );
        assert!(
            read.entries.iter().all(|e| e.complete),
            "`{what}`: {:?}",
            read.entries
        );
        assert!(
            read.lex_errors.is_empty(),
            "`{what}`: {:?}",
            read.lex_errors
        );
        // Every function ptxas compiled (it drops uncalled ones) is one the reader found.
        let functions: BTreeSet<String> = read.functions.iter().map(|f| f.name.clone()).collect();
        for f in report.functions.iter().filter(|f| !f.is_entry) {
            assert!(
                functions.contains(&f.name),
                "`{what}`: ptxas compiled .func {}",
                f.name
            );
        }
    }
}

#[test]
fn the_reader_sees_the_entries_of_the_embedded_module() {
    let report = ptxas_entries(&ptxas(), "the embedded module", adamant_runtime::PTX);
    let theirs: BTreeSet<String> = report.entries().map(|f| f.name.clone()).collect();
    let ours: BTreeSet<String> = ptx::entries(adamant_runtime::PTX)
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(ours, theirs);
    assert!(ours.len() >= 11, "{ours:?}");
}

/// The reader's rules where ptxas has the last word: no string escapes (so this module, whose
/// `\"` would be an escape in C, is rejected), and an unterminated comment is an error for both.
#[test]
fn ptxas_rejects_what_the_reader_calls_a_lexical_error() {
    let ptxas = ptxas();
    for body in [
        ".file 1 \"a\\\"b\"\n.visible .entry a() { ret; }",
        ".visible .entry a() { ret; }\n/* never closed",
    ] {
        let ptx = module(body);
        assert!(
            ptxas.compile(&ptx, ptxas::DEFAULT_ARCH).is_err(),
            "ptxas accepts {body:?}"
        );
        assert!(
            !ptx::parse(&ptx).lex_errors.is_empty(),
            "the reader accepts {body:?}"
        );
    }
}
