//! The register caps of a module's entries, written into its PTX as `.maxnreg` directives.
//!
//! Rust gives a kernel no launch bounds (CUDA's `__launch_bounds__`), so ptxas picks each
//! entry's register count alone, and for the multi-tensor optimizer entries it picks more than a
//! multiprocessor can hold three blocks of (`KernelDescriptor::max_registers` says why three and
//! which entries). The build writes the cap into the PTX before the module is checked, audited
//! and certified, so the certificate covers the PTX the driver compiles, every kernel crate built
//! with [`crate::KernelCrate`] gets the same caps, and no runtime option can drop them.
use adamant_abi::KernelDescriptor;

use crate::error::BuildError;
use crate::ptx;

/// `ptx` with `.maxnreg N` written on every entry of `kernels` that has a cap, between its
/// parameter list and its body.
///
/// # Errors
///
/// A [`BuildError`] naming the entry when a capped entry is not in the module, already carries a
/// `.maxnreg` of its own (the compiler writes none, so something else did), or does not read
/// back with exactly its cap once written.
pub fn write_register_caps(
    ptx_text: &str,
    kernels: &[&'static KernelDescriptor],
) -> Result<String, BuildError> {
    let capped: Vec<(&str, u32)> = kernels
        .iter()
        .filter_map(|k| k.max_registers().map(|cap| (k.name, cap)))
        .collect();
    if capped.is_empty() {
        return Ok(ptx_text.to_string());
    }
    let entries = ptx::entries(ptx_text);
    let mut lines: Vec<String> = ptx_text.lines().map(str::to_string).collect();
    // Insert from the last line up, so the earlier entries' line numbers stay valid.
    let mut inserts = Vec::with_capacity(capped.len());
    for &(name, cap) in &capped {
        let entry = entries
            .iter()
            .find(|e| e.name == name && e.complete)
            .ok_or_else(|| {
                BuildError::new(format!(
                    "cannot write the register cap of `{name}` ({cap}): the module has no \
                     complete entry of that name"
                ))
            })?;
        if let Some(own) = entry.directives.iter().find(|d| d.starts_with(".maxnreg")) {
            return Err(BuildError::new(format!(
                "`{name}` already carries `{own}`; the build writes its register cap ({cap}) \
                 itself and will not choose between two"
            )));
        }
        // The body's `{` is on the line before the body's first line (rustc writes `)` and `{`
        // on lines of their own); the directive goes on a line of its own just before it. The
        // read-back below refuses any other layout.
        let brace = entry.body_line.checked_sub(2).ok_or_else(|| {
            BuildError::new(format!(
                "`{name}`: its body starts on the module's first line"
            ))
        })?;
        if lines.get(brace).map(|l| l.trim()) != Some("{") {
            return Err(BuildError::new(format!(
                "cannot write the register cap of `{name}`: line {} is not its body's `{{` \
                 alone",
                brace + 1
            )));
        }
        inserts.push((brace, format!(".maxnreg {cap}")));
    }
    inserts.sort_by_key(|&(line, _)| std::cmp::Reverse(line));
    for (at, line) in inserts {
        lines.insert(at, line);
    }
    let mut written = lines.join("\n");
    if ptx_text.ends_with('\n') {
        written.push('\n');
    }
    let reread = ptx::entries(&written);
    for &(name, cap) in &capped {
        let directives = reread
            .iter()
            .find(|e| e.name == name)
            .map(|e| e.directives.clone())
            .unwrap_or_default();
        if directives != [format!(".maxnreg {cap}")] {
            return Err(BuildError::new(format!(
                "the register cap of `{name}` does not read back: its directives are \
                 {directives:?}, expected [\".maxnreg {cap}\"]"
            )));
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use adamant_abi::{self as abi, MULTI_TENSOR_MAX_REGISTERS};

    fn kernel(name: &str) -> &'static KernelDescriptor {
        abi::kernels()
            .into_iter()
            .find(|k| k.name == name)
            .unwrap_or_else(|| panic!("{name} is registered"))
    }

    fn header(name: &str) -> String {
        format!(".visible .entry {name}(\n\t.param .u64 {name}_param_0\n)\n{{\n\tret;\n}}\n")
    }

    #[test]
    fn only_the_multi_tensor_optimizer_entries_get_the_cap() {
        let names = [
            "attn_adam_kernel",
            "attn_adam_kernel_multi",
            "attn_adam_kernel_multi_stepped",
            "nan_check_kernel",
        ];
        let ptx: String = names.iter().map(|n| header(n)).collect();
        let kernels: Vec<_> = names.iter().map(|n| kernel(n)).collect();
        let written = write_register_caps(&ptx, &kernels).unwrap();
        let directives = |name: &str| {
            ptx::entries(&written)
                .into_iter()
                .find(|e| e.name == name)
                .unwrap()
                .directives
        };
        let cap = [format!(".maxnreg {MULTI_TENSOR_MAX_REGISTERS}")];
        assert_eq!(directives("attn_adam_kernel_multi"), cap);
        assert_eq!(directives("attn_adam_kernel_multi_stepped"), cap);
        assert!(directives("attn_adam_kernel").is_empty());
        assert!(directives("nan_check_kernel").is_empty());
        // Nothing else changed: removing the two lines gives the input back.
        assert_eq!(written.replace(&format!("{}\n", cap[0]), ""), ptx);
    }

    #[test]
    fn a_capped_entry_missing_or_already_capped_is_refused_by_name() {
        let multi = kernel("iqn_adam_kernel_multi");
        let err = write_register_caps(&header("other"), &[multi]).unwrap_err();
        assert!(err.message().contains("iqn_adam_kernel_multi"), "{err}");
        let own = header("iqn_adam_kernel_multi").replace(")\n{", ")\n.maxnreg 40\n{");
        let err = write_register_caps(&own, &[multi]).unwrap_err();
        assert!(err.message().contains(".maxnreg 40"), "{err}");
        let same_line = header("iqn_adam_kernel_multi").replace(")\n{", ") {");
        let err = write_register_caps(&same_line, &[multi]).unwrap_err();
        assert!(err.message().contains("iqn_adam_kernel_multi"), "{err}");
    }
}
