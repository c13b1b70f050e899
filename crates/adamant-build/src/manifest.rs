//! What the PTX build needs from Cargo.toml files, read without a TOML dependency (this crate is
//! std only): a kernel crate's package and library names, which directory is the workspace
//! root, and whether that root defines the `[profile.ptx]` the build compiles with. Only plain
//! `[table]` headers and `key = value` lines are understood, which is how Cargo.toml files
//! name these.
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::BuildError;

/// The names of a kernel crate, from its own Cargo.toml.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrateNames {
    /// `[package] name`, what `cargo rustc -p` takes.
    pub package: String,
    /// `[lib] name`, else the package name with `-` as `_`: the stem of the `.s` file rustc
    /// writes and of the `.ptx` files the build writes.
    pub lib: String,
}

/// Reads `<dir>/Cargo.toml`.
pub fn crate_names(dir: &Path) -> Result<CrateNames, BuildError> {
    let path = dir.join("Cargo.toml");
    let text = fs::read_to_string(&path)
        .map_err(|e| BuildError::new(format!("cannot read {}: {e}", path.display())))?;
    names_from(&text).ok_or_else(|| {
        BuildError::new(format!(
            "{} has no `[package]` with `name = \"...\"`: the kernel crate must be a package",
            path.display()
        ))
    })
}

fn names_from(text: &str) -> Option<CrateNames> {
    let package = string_value(text, "package", "name")?;
    let lib = string_value(text, "lib", "name").unwrap_or_else(|| package.replace('-', "_"));
    Some(CrateNames { package, lib })
}

/// The profile the PTX build compiles the kernel crate with (`cargo rustc --profile ptx`), as
/// the root Cargo.toml of the workspace that holds the kernel crate must define it: fat LTO and
/// one codegen unit link `core` into the one module, so that no `.extern .func` is left for the
/// driver to fail on. Cargo reads profiles from the workspace root only.
pub const PTX_PROFILE: &str = "[profile.ptx]
inherits = \"release\"
lto = \"fat\"
codegen-units = 1
panic = \"abort\"
debug = 0
incremental = false
";

/// Checks that the workspace root `root` (of the kernel crate `package`) defines
/// [`PTX_PROFILE`]'s settings that the build depends on: the table, `inherits`, fat LTO
/// (`lto = "fat"` or `true`) and one codegen unit.
pub fn check_ptx_profile(root: &Path, package: &str) -> Result<(), BuildError> {
    let path = root.join("Cargo.toml");
    let text = fs::read_to_string(&path)
        .map_err(|e| BuildError::new(format!("cannot read {}: {e}", path.display())))?;
    ptx_profile_problem(&text).map_or(Ok(()), |problem| {
        Err(BuildError::new(format!(
            "{problem}, in {path}, the root manifest of the workspace that holds the kernel \
                 crate `{package}` (cargo reads profiles from there only). The PTX build \
                 compiles with that profile: fat LTO and one codegen unit link `core` into the \
                 one module.\n  fix: paste these lines into {path}:\n\n{PTX_PROFILE}",
            path = path.display(),
        )))
    })
}

/// What is missing from, or wrong in, the `[profile.ptx]` of the root manifest `text`.
fn ptx_profile_problem(text: &str) -> Option<String> {
    if !text.lines().filter_map(header).any(|h| h == "profile.ptx") {
        return Some("there is no `[profile.ptx]`".to_string());
    }
    // Without a comment after it.
    let value = |key| {
        raw_value(text, "profile.ptx", key)
            .map(|v| v.split_once('#').map_or(v, |(v, _)| v).trim().to_string())
    };
    if value("inherits").is_none() {
        return Some("`[profile.ptx]` has no `inherits = \"release\"`".to_string());
    }
    match value("lto").as_deref() {
        Some("\"fat\"" | "'fat'" | "true") => {}
        Some(other) => {
            return Some(format!(
                "`[profile.ptx]` has `lto = {other}`, not `lto = \"fat\"`"
            ))
        }
        None => return Some("`[profile.ptx]` has no `lto = \"fat\"`".to_string()),
    }
    match value("codegen-units").as_deref() {
        Some("1") => None,
        Some(other) => Some(format!(
            "`[profile.ptx]` has `codegen-units = {other}`, not `codegen-units = 1`"
        )),
        None => Some("`[profile.ptx]` has no `codegen-units = 1`".to_string()),
    }
}

/// The value of `key` in `[table]` as written: the text after its `=`, trimmed (a comment
/// included, if there is one).
fn raw_value<'t>(text: &'t str, table: &str, key: &str) -> Option<&'t str> {
    let mut current = "";
    for line in text.lines() {
        if let Some(h) = header(line) {
            current = h;
            continue;
        }
        if current != table {
            continue;
        }
        if let Some((k, value)) = line.split_once('=') {
            if k.trim() == key {
                return Some(value.trim());
            }
        }
    }
    None
}

/// The workspace root of the package in `dir`: the nearest directory, `dir` included, whose
/// Cargo.toml has a `[workspace]` table; `dir` itself when none has (a package on its own).
/// `package.workspace = ".."` pointers are not followed.
pub fn workspace_root(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|d| {
            fs::read_to_string(d.join("Cargo.toml")).is_ok_and(|text| has_workspace_table(&text))
        })
        .unwrap_or(dir)
        .to_path_buf()
}

fn has_workspace_table(text: &str) -> bool {
    text.lines()
        .filter_map(header)
        .any(|h| h == "workspace" || h.starts_with("workspace."))
}

/// The table a `[name]` or `[[name]]` line opens.
fn header(line: &str) -> Option<&str> {
    let line = line.trim();
    let inner = line.strip_prefix('[')?;
    let end = inner.find(']')?;
    Some(inner[..end].trim_start_matches('[').trim())
}

/// The string value of `key` in `[table]`.
fn string_value(text: &str, table: &str, key: &str) -> Option<String> {
    let value = raw_value(text, table, key)?;
    let quote = value.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let rest = &value[1..];
    rest.find(quote).map(|end| rest[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_package_and_the_lib_table() {
        let kernels = include_str!("../../adamant-kernels/Cargo.toml");
        assert_eq!(
            names_from(kernels),
            Some(CrateNames {
                package: "adamant-kernels".into(),
                lib: "adamant_kernels".into()
            })
        );
        let renamed = "[package]\nname = 'my-kernels' # a comment\n[lib]\nname = \"mk\"\n";
        assert_eq!(names_from(renamed).unwrap().lib, "mk");
        // A `name` in another table is not the package's.
        let other = "[dependencies]\nname = \"x\"\n[package]\nversion = \"1\"\n";
        assert_eq!(names_from(other), None);
    }

    #[test]
    fn workspace_tables_are_recognised() {
        assert!(has_workspace_table(include_str!("../../../Cargo.toml")));
        assert!(has_workspace_table(
            "[workspace.package]\nedition = \"2021\"\n"
        ));
        assert!(!has_workspace_table(include_str!("../Cargo.toml")));
    }

    #[test]
    fn a_missing_or_wrong_ptx_profile_names_the_lines_to_paste() {
        let dir = std::env::temp_dir().join(format!("adamant-profile-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let manifest = dir.join("Cargo.toml");
        let workspace = "[workspace]\nmembers = [\"kernels\"]\n";
        fs::write(&manifest, workspace).unwrap();
        let err = check_ptx_profile(&dir, "my-kernels").unwrap_err();
        let message = err.message();
        assert!(
            message.starts_with(&format!(
                "there is no `[profile.ptx]`, in {}, the root manifest of the workspace that \
                 holds the kernel crate `my-kernels`",
                manifest.display()
            )),
            "{message}"
        );
        // The exact lines, ready to paste, end the message.
        assert!(
            message.ends_with(&format!(
                "fix: paste these lines into {}:\n\n{PTX_PROFILE}",
                manifest.display()
            )),
            "{message}"
        );
        // Pasted, they pass.
        fs::write(&manifest, format!("{workspace}\n{PTX_PROFILE}")).unwrap();
        assert!(check_ptx_profile(&dir, "my-kernels").is_ok());
        // A profile that would leave `core` outside the module is named by its key.
        let thin = PTX_PROFILE.replace("lto = \"fat\"", "lto = \"thin\" # faster");
        fs::write(&manifest, format!("{workspace}\n{thin}")).unwrap();
        let err = check_ptx_profile(&dir, "my-kernels").unwrap_err();
        assert!(
            err.message()
                .starts_with("`[profile.ptx]` has `lto = \"thin\"`, not `lto = \"fat\"`"),
            "{err}"
        );
        let units = PTX_PROFILE.replace("codegen-units = 1", "codegen-units = 16");
        fs::write(&manifest, format!("{workspace}\n{units}")).unwrap();
        assert!(check_ptx_profile(&dir, "k")
            .unwrap_err()
            .message()
            .starts_with("`[profile.ptx]` has `codegen-units = 16`"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_ptx_profile_is_the_one_this_workspace_and_the_readme_use() {
        assert!(include_str!("../../../Cargo.toml").contains(PTX_PROFILE));
        assert!(include_str!("../../../README.md").contains(&format!("```toml\n{PTX_PROFILE}```")));
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        assert!(check_ptx_profile(&root, "adamant-kernels").is_ok());
    }

    #[test]
    fn the_workspace_root_is_the_nearest_directory_with_a_workspace_table() {
        let build = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(
            workspace_root(build),
            build.parent().unwrap().parent().unwrap()
        );
    }
}
