//! The checks `runtime/build.rs` applies to every freshly built PTX module (shared code in
//! `adamant_runtime::ptx`): no external functions, every declared kernel present.
use adamant_runtime::ptx::{check_module, entries, extern_functions, ModuleProblem};

const DECLARED: [&str; 2] = ["iqn_adam_kernel", "nan_check_kernel"];

fn module(body: &str) -> String {
    format!(".version 7.8\n.target sm_90\n.address_size 64\n\n{body}")
}

const ENTRY_A: &str = ".visible .entry iqn_adam_kernel(\n\t.param .u64 iqn_adam_kernel_param_0,\n\t.param .f32 iqn_adam_kernel_param_1\n)\n{\n\tret;\n}\n";
const ENTRY_B: &str =
    ".visible .entry nan_check_kernel(\n\t.param .u64 nan_check_kernel_param_0\n)\n{\n\tret;\n}\n";

#[test]
fn a_complete_module_passes() {
    let ptx = module(&format!("{ENTRY_A}\n{ENTRY_B}"));
    assert_eq!(check_module(&ptx, &DECLARED), Ok(()));
    let names: Vec<String> = entries(&ptx).into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["iqn_adam_kernel", "nan_check_kernel"]);
    // The real module passes too.
    let real: Vec<&str> = adamant_kernels::abi::kernels()
        .iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(check_module(adamant_runtime::PTX, &real), Ok(()));
}

#[test]
fn extern_functions_are_named() {
    let ptx = module(&format!(
        ".extern .func (.param .b32 func_retval0) vprintf(\n\t.param .b64 vprintf_param_0\n);\n\
         .extern .func _ZN4core9panicking5panic17h0E(\n\t.param .b64 p0\n);\n{ENTRY_A}\n{ENTRY_B}"
    ));
    assert_eq!(
        extern_functions(&ptx),
        ["vprintf", "_ZN4core9panicking5panic17h0E"]
    );
    let problem = check_module(&ptx, &DECLARED).unwrap_err();
    assert_eq!(
        problem,
        ModuleProblem::ExternFunctions(vec![
            "vprintf".into(),
            "_ZN4core9panicking5panic17h0E".into()
        ])
    );
    assert!(problem.to_string().contains("vprintf"), "{problem}");
    // A defined (not extern) function is fine.
    let defined = module(&format!(
        ".visible .func helper()\n{{\n\tret;\n}}\n{ENTRY_A}\n{ENTRY_B}"
    ));
    assert_eq!(check_module(&defined, &DECLARED), Ok(()));
}

#[test]
fn a_missing_entry_is_named_with_what_is_there() {
    let ptx = module(ENTRY_A);
    let problem = check_module(&ptx, &DECLARED).unwrap_err();
    assert_eq!(
        problem,
        ModuleProblem::MissingEntries {
            missing: vec!["nan_check_kernel".into()],
            present: vec!["iqn_adam_kernel".into()],
        }
    );
    let text = problem.to_string();
    assert!(
        text.contains("nan_check_kernel") && text.contains("iqn_adam_kernel"),
        "{text}"
    );
}
