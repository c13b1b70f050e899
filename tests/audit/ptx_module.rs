//! The checks the PTX build (`adamant_build::KernelCrate`, from `runtime/build.rs`) applies to every freshly built PTX module (shared code in
//! `adamant_build::ptx`, reused by the audit): the entries are exactly the declared kernels,
//! each once; no `.func` of any kind; no inline assembly.
use adamant_build::ptx::{
    check_module, entries, extern_functions, inline_asm_markers, module_problems, ModuleProblem,
};

const DECLARED: [&str; 2] = ["iqn_adam_kernel", "nan_check_kernel"];

fn module(body: &str) -> String {
    format!(".version 7.8\n.target sm_90\n.address_size 64\n\n{body}")
}

const ENTRY_A: &str = ".visible .entry iqn_adam_kernel(\n\t.param .u64 iqn_adam_kernel_param_0,\n\t.param .f32 iqn_adam_kernel_param_1\n)\n{\n\tret;\n}\n";
const ENTRY_B: &str =
    ".visible .entry nan_check_kernel(\n\t.param .u64 nan_check_kernel_param_0\n)\n{\n\tret;\n}\n";

fn both() -> String {
    format!("{ENTRY_A}\n{ENTRY_B}")
}

/// The problems of `module(body)` against [`DECLARED`], as messages.
fn messages(body: &str) -> Vec<String> {
    module_problems(&module(body), &DECLARED)
        .iter()
        .map(|p| p.to_string())
        .collect()
}

#[test]
fn a_complete_module_passes() {
    let ptx = module(&both());
    assert_eq!(check_module(&ptx, &DECLARED), Ok(()));
    let names: Vec<String> = entries(&ptx).into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["iqn_adam_kernel", "nan_check_kernel"]);
}

#[test]
fn the_embedded_module_passes() {
    let real: Vec<&str> = adamant_device::abi::kernels()
        .iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(check_module(adamant_runtime::PTX, &real), Ok(()));
    assert!(inline_asm_markers(adamant_runtime::PTX).is_empty());
}

#[test]
fn extern_functions_are_named() {
    let ptx = module(&format!(
        ".extern .func (.param .b32 func_retval0) vprintf(\n\t.param .b64 vprintf_param_0\n);\n\
         .extern\n.func _ZN4core9panicking5panic17h0E(\n\t.param .b64 p0\n);\n{}",
        both()
    ));
    assert_eq!(
        extern_functions(&ptx),
        ["vprintf", "_ZN4core9panicking5panic17h0E"]
    );
    let problems = check_module(&ptx, &DECLARED).unwrap_err();
    assert_eq!(
        problems,
        [
            ModuleProblem::ExternFunction {
                name: "vprintf".into(),
                line: 5
            },
            ModuleProblem::ExternFunction {
                name: "_ZN4core9panicking5panic17h0E".into(),
                line: 9
            }
        ]
    );
    assert!(problems[0].to_string().contains("vprintf"), "{problems:?}");
}

#[test]
fn functions_are_refused_defined_or_declared() {
    let problems = module_problems(
        &module(&format!(
            ".visible .func helper()\n{{\n\tret;\n}}\n.func (.param .b32 rv) proto(.param .b32 x);\n{}",
            both()
        )),
        &DECLARED,
    );
    assert_eq!(
        problems,
        [
            ModuleProblem::Function {
                name: "helper".into(),
                line: 5,
                defined: true
            },
            ModuleProblem::Function {
                name: "proto".into(),
                line: 9,
                defined: false
            }
        ]
    );
    let text = problems[0].to_string();
    assert!(
        text.contains("helper") && text.contains("the audit does not see"),
        "{text}"
    );
    // In a comment it is no function.
    assert!(messages(&format!("/* .func helper() {{ ret; }} */\n{}", both())).is_empty());
    let alias = messages(&format!(".func f() {{ ret; }}\n.alias g, f;\n{}", both()));
    assert!(alias.iter().any(|m| m.contains(".alias g, f")), "{alias:?}");
}

#[test]
fn inline_asm_markers_are_refused_wherever_they_are() {
    // What the NVPTX backend writes around an `asm!` block (see ptx::INLINE_ASM_MARKER).
    let body = ENTRY_A.replace(
        "\tret;",
        "\t// begin inline asm\n\tmov.f32 %r1, 0f7F800000;\n\t// end inline asm\n\tret;",
    );
    let problems = module_problems(&module(&format!("{body}\n{ENTRY_B}")), &DECLARED);
    assert_eq!(
        problems,
        [
            ModuleProblem::InlineAsm {
                line: 10,
                text: "// begin inline asm".into()
            },
            ModuleProblem::InlineAsm {
                line: 12,
                text: "// end inline asm".into()
            }
        ]
    );
    assert!(problems[0].to_string().contains("asm!"), "{problems:?}");
    // Inside a block comment, with other case: still refused (the search is on the raw text).
    assert_eq!(
        messages(&format!("/* Begin Inline Asm */\n{}", both())).len(),
        1
    );
}

#[test]
fn an_undeclared_entry_is_named() {
    let extra = ".weak .entry\nsoft_update(.param .u64 p)\n.maxntid 64, 1, 1\n{\n\tret;\n}\n";
    let problems = module_problems(&module(&format!("{}{extra}", both())), &DECLARED);
    assert_eq!(
        problems,
        [ModuleProblem::UndeclaredEntry {
            name: "soft_update".into(),
            line: 19
        }]
    );
    assert!(problems[0].to_string().contains("soft_update"));
    // The same entry in a comment is not one.
    assert!(messages(&format!("{}/*{extra}*/", both())).is_empty());
}

#[test]
fn duplicate_and_malformed_entries() {
    let problems = module_problems(&module(&format!("{}{ENTRY_B}", both())), &DECLARED);
    assert_eq!(
        problems,
        [ModuleProblem::DuplicateEntry {
            name: "nan_check_kernel".into(),
            lines: vec![13, 19]
        }]
    );
    let cut = messages(&format!("{}.visible .entry iqn_adam_kernel(", ENTRY_B));
    assert!(cut.iter().any(|m| m.contains("cut short")), "{cut:?}");
    let open = messages(&format!("{}/* never closed", both()));
    assert!(open.iter().any(|m| m.contains("never closed")), "{open:?}");
}

#[test]
fn a_missing_entry_is_named_with_what_is_there() {
    let ptx = module(ENTRY_A);
    let problems = check_module(&ptx, &DECLARED).unwrap_err();
    assert_eq!(
        problems,
        [ModuleProblem::MissingEntries {
            missing: vec!["nan_check_kernel".into()],
            present: vec!["iqn_adam_kernel".into()],
        }]
    );
    let text = problems[0].to_string();
    assert!(
        text.contains("nan_check_kernel") && text.contains("iqn_adam_kernel"),
        "{text}"
    );
    // An entry hidden in a comment does not count as present.
    let hidden = module(&format!("{ENTRY_A}/*\n{ENTRY_B}*/"));
    assert!(check_module(&hidden, &DECLARED).is_err());
}
