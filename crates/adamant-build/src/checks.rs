//! The checks the PTX build runs on a kernel crate, before and after compiling it: its sources
//! hold no assembly ([`source_check`]), and the module it compiled to is exactly the declared
//! kernels ([`ptx::check_module`]) and passes the whole PTX audit ([`audit`]). Each failure lists
//! every problem, not only the first.
use std::fs;
use std::path::Path;

use adamant_abi::KernelDescriptor;

use crate::audit::{self, AuditReport};
use crate::error::BuildError;
use crate::{ptx, source_check};

/// A kernel crate holds only macro-generated entries and plain Rust: no assembly macros in any
/// `.rs` file under `dir`.
pub fn sources(dir: &Path) -> Result<(), BuildError> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        let Ok(entries) = fs::read_dir(&path) else {
            continue;
        };
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                files.push(p);
            }
        }
    }
    let mut problems = Vec::new();
    for p in files {
        let text = fs::read_to_string(&p)
            .map_err(|e| BuildError::new(format!("cannot read {}: {e}", p.display())))?;
        match source_check::assembly_macros(&text) {
            Ok(found) => problems.extend(
                found
                    .into_iter()
                    .map(|n| format!("  - {}: `{n}`", p.display())),
            ),
            Err(e) => problems.push(format!("  - {}: {e}", p.display())),
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(BuildError::new(format!(
        "the kernel crate uses inline or module-level assembly, which the PTX audit cannot \
         check (adamant's kernels are plain Rust):\n{}",
        problems.join("\n")
    )))
}

/// Refuses a module that is not exactly `kernels`: an entry no descriptor declares, a declared
/// kernel with no entry, a duplicate, any `.func` (extern or not) or inline assembly; then runs
/// the PTX audit, whose report is returned when it passes.
pub fn module(ptx_text: &str, kernels: &[&KernelDescriptor]) -> Result<AuditReport, BuildError> {
    let expected: Vec<&str> = kernels.iter().map(|k| k.name).collect();
    if let Err(problems) = ptx::check_module(ptx_text, &expected) {
        let list: Vec<String> = problems.iter().map(|p| format!("  - {p}")).collect();
        return Err(BuildError::new(format!(
            "the PTX module is not what the kernel descriptors declare ({} problem{}):\n{}",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" },
            list.join("\n")
        )));
    }
    let report = audit::audit(ptx_text, kernels);
    if !report.is_ok() {
        let list: Vec<String> = report
            .violations
            .iter()
            .map(|v| format!("  - {v}"))
            .collect();
        return Err(BuildError::new(format!(
            "the PTX audit found {} violation(s) in the module just built (see the README's \
             threat model):\n{}",
            report.violations.len(),
            list.join("\n")
        )));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_sources_pass_and_assembly_is_listed_by_file() {
        // adamant's kernels and everything every kernel crate's module compiles with them: a
        // `KernelCrate` checks its own crate's sources, so the SDK's are checked here (and the
        // module check refuses assembly in the PTX whatever its source).
        for krate in ["adamant-kernels", "adamant-device", "adamant-abi"] {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join(krate)
                .join("src");
            assert!(dir.is_dir(), "{}", dir.display());
            assert_eq!(sources(&dir), Ok(()), "{krate}");
        }

        let dir = std::env::temp_dir().join(format!("adamant-build-check-{}", std::process::id()));
        fs::create_dir_all(dir.join("nested")).unwrap();
        fs::write(dir.join("nested/bad.rs"), "core::arch::global_asm!(\"\");").unwrap();
        let err = sources(&dir).unwrap_err();
        fs::remove_dir_all(&dir).unwrap();
        assert!(err.message().contains("bad.rs: `global_asm`"), "{err}");
    }

    #[test]
    fn a_module_without_the_declared_kernels_lists_what_is_missing() {
        let kernels = adamant_abi::kernels();
        let ptx = ".version 7.8\n.target sm_90\n.address_size 64\n";
        let err = module(ptx, &kernels).unwrap_err();
        assert!(
            err.message()
                .starts_with("the PTX module is not what the kernel descriptors declare"),
            "{err}"
        );
        assert!(err.message().contains("iqn_adam_kernel"), "{err}");
    }
}
