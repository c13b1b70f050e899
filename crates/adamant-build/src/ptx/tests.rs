//! The reader on tricky PTX (the same cases are checked against ptxas in
//! tests/audit/ptx_vs_ptxas.rs).
use super::*;

fn names(ptx: &str) -> Vec<String> {
    entries(ptx).into_iter().map(|e| e.name).collect()
}

#[test]
fn entries_in_comments_and_strings_are_not_entries() {
    let ptx = "/* .visible .entry hidden() { ret; } */\n\
               // .visible .entry hidden2() { ret; }\n\
               .file 1 \"a/*b.entry x() {\"\n\
               .visible .entry a() { .pragma \"nounroll; .entry z() {\"; ret; }\n";
    assert_eq!(names(ptx), ["a"]);
    let a = &entries(ptx)[0];
    assert!(a.complete);
    assert_eq!(a.line, 4);
    assert_eq!(a.instructions().len(), 1);
}

#[test]
fn comment_markers_inside_other_comments() {
    // `/*` in a line comment opens nothing; `//` in a block comment hides nothing after it.
    assert_eq!(names("// /*\n.entry d() { ret; }\n// */"), ["d"]);
    assert_eq!(names("/* // */ .entry e() { ret; }"), ["e"]);
    // Block comments do not nest.
    assert_eq!(names("/* /* */ .entry t() { ret; }"), ["t"]);
}

#[test]
fn names_after_line_breaks_and_comments() {
    let ptx = ".visible .entry\nb() { ret; }\n.visible .entry /* x */ c // y\n() { ret; }";
    let e = entries(ptx);
    assert_eq!(names(ptx), ["b", "c"]);
    assert_eq!((e[0].line, e[1].line), (1, 3));
    assert!(e.iter().all(|e| e.complete));
    assert_eq!(names(".visible.entry/**/a(){ret;}"), ["a"]);
    assert_eq!(names(".entry p { ret; }"), ["p"]);
}

#[test]
fn linkage_directives_and_two_entries_on_a_line() {
    let ptx = ".weak .entry h() { ret; } .entry i() { ret; } .visible .entry j() { ret; }";
    let e = entries(ptx);
    assert_eq!(names(ptx), ["h", "i", "j"]);
    assert_eq!(
        e.iter().map(|e| e.linkage).collect::<Vec<_>>(),
        [Some(Linkage::Weak), None, Some(Linkage::Visible)]
    );
}

#[test]
fn performance_directives_and_braces_in_comments() {
    let ptx = ".visible .entry j(\n  .param .u64 .ptr .align 1 j_param_0, // (\n  \
               .param .align 16 .b8 j_param_1[16]\n)\n.maxntid 256, 1, 1\n.minnctapersm 2\n\
               .pragma \"nounroll\";\n{\n  // }\n  /* } { */ ret;\n}\n\
               .entry k() .reqntid 128 .maxnreg 32 { ret; }\n";
    let e = entries(ptx);
    assert_eq!(names(ptx), ["j", "k"]);
    assert_eq!(
        e[0].params,
        [
            PtxParam {
                ty: ".u64".into(),
                name: "j_param_0".into()
            },
            PtxParam {
                ty: ".b8".into(),
                name: "j_param_1".into()
            }
        ]
    );
    assert_eq!(
        e[0].directives,
        [
            ".maxntid 256, 1, 1",
            ".minnctapersm 2",
            ".pragma \"nounroll\""
        ]
    );
    assert_eq!(e[1].directives, [".reqntid 128", ".maxnreg 32"]);
    let inst = e[0].instructions();
    assert_eq!(inst.len(), 1);
    assert_eq!((inst[0].opcode.as_str(), inst[0].line), ("ret", 10));
}

#[test]
fn body_lines_keep_module_line_numbers() {
    let ptx = "\n.entry a(.param .u64 a_p)\n{\n\t.reg .b64 %rd<3>;\n\
               \tld.param.u64 %rd1, [a_p];\n$L__BB0_1:\n\tst.global.u32 [%rd1+-12],\n\t\t%r1;\n}\n";
    let e = &entries(ptx)[0];
    assert_eq!(e.body_line, 4);
    assert_eq!(e.body[0], "\t.reg .b64 %rd<3>;");
    let inst = e.instructions();
    assert_eq!(inst.len(), 2);
    assert_eq!(inst[0].line, 5);
    assert_eq!(inst[1].line, 7);
    assert_eq!(inst[1].text, "st.global.u32 [%rd1+-12], %r1");
    // Body on the brace's line.
    let e = &entries(".entry a() { mov.u32 %r1, 0;\n ret; }")[0];
    assert_eq!((e.body_line, e.instructions()[1].line), (1, 2));
}

#[test]
fn instructions_guards_vectors_addresses_calls() {
    let body = [
        "@%p1 bra $L__BB0_2;".to_string(),
        "@!%p2 st.global.v4.b32 [%rd28], {%r39, %r57, %r75, %r93};".into(),
        "L1: ld.param.u64 %rd1, [name+4]; mov.u32 %r1, %tid.x;".into(),
        "setp.lt.f32 %p1|%p2, %f1, 0f3F800000; add.s32 %r2, %r1, -12;".into(),
        "call.uni (retval0), helper, (param0, param1);".into(),
        "{ .reg .b32 t; ld.global.L2::evict_last.u32 t, [%rd1]; } atom.global.add.u32 _, [%rd2], 1;"
            .into(),
        "ld.global.nc.u32 %r3, [%rd1 + 0x10]; // st.global.u32 [%rd1], %r1;".into(),
    ];
    let inst = instructions(&body, 10);
    let ops: Vec<&str> = inst.iter().map(|i| i.opcode.as_str()).collect();
    assert_eq!(
        ops,
        [
            "bra",
            "st.global.v4.b32",
            "ld.param.u64",
            "mov.u32",
            "setp.lt.f32",
            "add.s32",
            "call.uni",
            "ld.global.L2::evict_last.u32",
            "atom.global.add.u32",
            "ld.global.nc.u32"
        ]
    );
    assert_eq!(inst[0].guard.as_deref(), Some("%p1"));
    assert!(!inst[0].guard_negated());
    assert_eq!(inst[0].operands, [Operand::Symbol("$L__BB0_2".into())]);
    assert_eq!(inst[1].guard.as_deref(), Some("%p2"));
    assert!(inst[1].guard_negated());
    assert_eq!(inst[1].line, 11);
    assert_eq!(inst[1].operands[1].elements().len(), 4);
    assert_eq!(
        inst[1].operands[0],
        Operand::Address {
            base: Box::new(Operand::Register("%rd28".into())),
            offset: 0
        }
    );
    assert_eq!(inst[2].operands[1].to_string(), "[name+4]");
    assert_eq!(inst[2].operands[1].symbols(), ["name"]);
    assert_eq!(inst[3].operands[1], Operand::Register("%tid.x".into()));
    assert_eq!(inst[4].operands[0].registers(), ["%p1", "%p2"]);
    assert_eq!(inst[4].operands[2], Operand::Immediate("0f3F800000".into()));
    assert_eq!(inst[5].operands[2], Operand::Immediate("-12".into()));
    assert_eq!(inst[6].operands.len(), 3);
    assert_eq!(inst[6].operands[1], Operand::Symbol("helper".into()));
    assert_eq!(inst[6].operands[2].symbols(), ["param0", "param1"]);
    assert_eq!(inst[8].operands[0], Operand::Symbol("_".into()));
    assert_eq!(inst[9].operands[1].to_string(), "[%rd1+16]");
    assert_eq!(inst[9].line, 16);
    let negative = instructions(&["ld.global.u32 %r1, [%rd26+-12];".into()], 1);
    assert_eq!(negative[0].operands[1].to_string(), "[%rd26+-12]");
}

#[test]
fn functions_with_linkage_returns_and_declarations() {
    let ptx = ".extern .func (.param .b32 func_retval0) vprintf(\n\t.param .b64 p0,\n\t.param .b64 p1\n);\n\
               .visible .func (.param .b32 rv) f1(.param .b32 x) { st.param.b32 [rv], 1; ret; }\n\
               .func f2() .noreturn { trap; }\n.weak .func f3(.reg .b32 r);\n\
               .visible .entry a() { call f2; ret; }";
    let f = functions(ptx);
    let summary: Vec<_> = f
        .iter()
        .map(|f| (f.name.as_str(), f.linkage, f.defined, f.line))
        .collect();
    assert_eq!(
        summary,
        [
            ("vprintf", Some(Linkage::Extern), false, 1),
            ("f1", Some(Linkage::Visible), true, 5),
            ("f2", None, true, 6),
            ("f3", Some(Linkage::Weak), false, 7),
        ]
    );
    assert_eq!(f[0].returns[0].name, "func_retval0");
    assert_eq!(f[0].params.len(), 2);
    assert_eq!(f[1].instructions().len(), 2);
    assert_eq!(f[2].directives, [".noreturn"]);
    assert_eq!(f[3].params[0].ty, ".b32");
    assert!(f.iter().all(|f| f.complete));
    assert_eq!(names(ptx), ["a"]);
    assert_eq!(extern_functions(ptx), ["vprintf"]);
}

#[test]
fn variables_with_state_spaces() {
    let ptx = ".extern .shared .align 8 .b8 gpu_launch_sized_workgroup_mem[];\n\
               .global .align 4 .u32 table[4] = {1, 2, 3, 4}, other;\n\
               .const .f32 k = 0f3F800000;\n\
               .entry a() {\n .local .align 4 .b8 __local_depot0[16];\n\
               { .shared .u32 s[2][8]; }\n .param .b32 arg;\n .reg .b32 %r<4>;\n ret;\n}\n";
    let v = variables(ptx);
    let summary: Vec<_> = v
        .iter()
        .map(|v| (v.name.as_str(), v.space, v.linkage, v.line))
        .collect();
    assert_eq!(
        summary,
        [
            (
                "gpu_launch_sized_workgroup_mem",
                StateSpace::Shared,
                Some(Linkage::Extern),
                1
            ),
            ("table", StateSpace::Global, None, 2),
            ("other", StateSpace::Global, None, 2),
            ("k", StateSpace::Const, None, 3),
        ]
    );
    assert_eq!(v[0].dims, [None]);
    assert_eq!(v[0].align, Some(8));
    assert_eq!(
        (v[1].dims.as_slice(), v[1].initialized),
        (&[Some(4)][..], true)
    );
    assert!(!v[2].initialized);
    let e = &entries(ptx)[0];
    let locals: Vec<_> = e
        .variables
        .iter()
        .map(|v| (v.name.as_str(), v.space, v.line))
        .collect();
    assert_eq!(
        locals,
        [
            ("__local_depot0", StateSpace::Local, 5),
            ("s", StateSpace::Shared, 6),
            ("arg", StateSpace::Param, 7)
        ]
    );
    assert_eq!(
        e.variable("s").map(|v| v.dims.clone()),
        Some(vec![Some(2), Some(8)])
    );
    assert_eq!(e.instructions().len(), 1);
}

#[test]
fn malformed_entries_are_incomplete_not_lost() {
    for (ptx, name) in [
        (".entry", ""),
        (".entry (", ""),
        (".visible .entry x(\n", "x"),
        (".visible .entry x() {", "x"),
        (
            ".visible .entry x() { ret;\n.visible .entry y() { ret; }",
            "x",
        ),
    ] {
        let e = entries(ptx);
        assert_eq!(e[0].name, name, "{ptx:?}");
        assert!(!e[0].complete, "{ptx:?}");
    }
    // The entry after an unclosed body is still seen, with its linkage.
    let e = entries(".visible .entry x() { ret;\n.visible .entry y() { ret; }");
    assert_eq!(e.len(), 2);
    assert!(e[1].complete && e[1].linkage == Some(Linkage::Visible));
    assert_eq!(e[0].body, [" ret;"]);
    // A `.pragma` with no `;` in a header does not swallow the body or the next entry.
    let e = entries(".entry a() .pragma \"x\" { ret; }\n.entry b() { ret; }");
    assert_eq!((e.len(), e[0].directives[0].as_str()), (2, ".pragma \"x\""));
    // A stray brace at module scope hides nothing after it.
    assert_eq!(
        names("{ .entry a() { ret; }\n.entry b() { ret; }"),
        ["a", "b"]
    );
    assert_eq!(
        names(".section .debug_str { $x: .b8 1 }\n.entry b() { ret; }"),
        ["b"]
    );
    // A declaration with its definition is one entry, as for ptxas.
    assert_eq!(names(".entry q();\n.entry q() { ret; }"), ["q"]);
}

#[test]
fn lexical_errors_are_reported() {
    assert_eq!(parse(".entry a() { ret; }\n/* open").lex_errors.len(), 1);
    assert_eq!(parse(".file 1 \"open").lex_errors[0].line, 1);
}

/// A small deterministic generator (no dependency: this crate runs in build scripts, with `std` only).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

#[test]
fn random_and_truncated_inputs_never_panic() {
    let sample = ".version 7.8\n.target sm_90\n.address_size 64\n\
        .extern .shared .align 8 .b8 smem[];\n.global .u32 t[2] = {1, 2};\n\
        .func (.param .b32 rv) f(.param .b32 x) { ret; }\n\
        .visible .entry k(\n\t.param .u64 .ptr .align 1 k_param_0\n) .maxntid 128, 1, 1\n{\n\
        \t.reg .b64 %rd<3>; // c\n\t/* d */ ld.param.u64 %rd1, [k_param_0];\n\
        @!%p1 bra $L__BB0_1;\n$L__BB0_1:\n\tst.global.v2.u32 [%rd1+-8], {%r1, %r2};\n\
        \tcall.uni (rv), f, (x);\n\t.pragma \"nounroll\";\n\tret;\n}\n";
    let pieces = [
        "{", "}", "(", ")", "[", "]", ";", ",", "@", "%", "|", "\n", ".", ":", "!", "/*", "*/",
        "//", "\"", ".entry", ".func", ".visible", ".extern", ".shared", "+-", "é", "\u{0}", "0x",
        "1e-", "_", "$",
    ];
    // Every prefix (truncation at each character boundary).
    for (i, _) in sample.char_indices() {
        let _ = module_problems(&sample[..i], &["k"]);
        for e in entries(&sample[..i]) {
            let _ = e.instructions();
        }
    }
    let mut rng = Lcg(0xada_0a17);
    for _ in 0..2000 {
        let mut text: Vec<String> = sample.chars().map(String::from).collect();
        for _ in 0..1 + rng.next(12) {
            let at = rng.next(text.len());
            match rng.next(3) {
                0 => {
                    let end = (at + 1 + rng.next(40)).min(text.len());
                    text.drain(at..end);
                }
                1 => text.insert(at, pieces[rng.next(pieces.len())].to_string()),
                _ => {
                    let end = (at + 1 + rng.next(30)).min(text.len());
                    let copy: Vec<String> = text[at..end].to_vec();
                    let to = rng.next(text.len());
                    text.splice(to..to, copy);
                }
            }
            if text.is_empty() {
                break;
            }
        }
        let text: String = text.concat();
        let m = parse(&text);
        for e in &m.entries {
            let _ = e.instructions();
            assert!(e.line >= 1 && e.body_line >= e.line, "{text:?}");
        }
        for f in &m.functions {
            let _ = f.instructions();
        }
        for p in module_problems(&text, &["k"]) {
            let _ = p.to_string();
        }
    }
    // Pure noise.
    for _ in 0..500 {
        let len = rng.next(200);
        let text: String = (0..len).map(|_| pieces[rng.next(pieces.len())]).collect();
        let _ = module_problems(&text, &[]);
        for e in entries(&text) {
            let _ = e.instructions();
        }
    }
}
