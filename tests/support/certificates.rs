//! Helpers of the certificate tests: a module made of edited copies of real build output, and
//! the one PTX edit they share (an entry's clamp bound replaced by 0).

use adamant_runtime::AuditedModule;
use serde_json::Value;

/// `ptx` and `certificate` as a module, whatever they hold.
pub fn module(ptx: String, certificate: String) -> AuditedModule {
    let (ptx, certificate) = (leak(ptx), leak(certificate));
    // SAFETY: these are edited or mismatched build outputs on purpose, handed to `verify`, which
    // must refuse them; no test loads them or launches from them.
    unsafe { AuditedModule::from_build_output(ptx, certificate) }
}

/// `real` with its certificate's JSON edited by `edit`.
pub fn with_certificate(real: &AuditedModule, edit: impl FnOnce(&mut Value)) -> AuditedModule {
    let mut json: Value = serde_json::from_str(real.certificate()).unwrap();
    edit(&mut json);
    module(real.ptx().to_string(), json.to_string())
}

/// The certified entry called `name`.
pub fn entry<'a>(certificate: &'a mut Value, name: &str) -> &'a mut Value {
    certificate["kernels"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|k| k["name"] == name)
        .unwrap_or_else(|| panic!("no entry {name} in the certificate"))
}

/// `ptx` with the load of entry `name`'s last parameter, its clamp bound, replaced by the
/// constant 0 (a disabled clamp, whatever the launch passes): a one-line edit the audit
/// refuses.
pub fn bound_zeroed(ptx: &str, name: &str, params: usize) -> String {
    let param = format!("[{name}_param_{}]", params - 1);
    let start = ptx
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("no entry {name}"));
    let at = start + ptx[start..].find(&param).expect("the bound is loaded");
    let line_start = ptx[..at].rfind('\n').unwrap() + 1;
    let line_end = at + ptx[at..].find('\n').unwrap();
    let line = &ptx[line_start..line_end];
    // `ld.param.b32 	%rN, [<name>_param_K];` becomes `mov.b32 	%rN, 0;`.
    let register = line
        .split_whitespace()
        .nth(1)
        .expect("ld.param has a destination")
        .trim_end_matches(',');
    assert!(line.trim_start().starts_with("ld.param."), "{line}");
    format!(
        "{}\tmov.b32 \t{register}, 0;{}",
        &ptx[..line_start],
        &ptx[line_end..]
    )
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}
