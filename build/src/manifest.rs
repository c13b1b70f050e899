//! What the PTX build needs from Cargo.toml files, read without a TOML dependency (this crate is
//! std only): a kernel crate's package and library names, and which directory is the workspace
//! root. Only plain `[table]` headers and `key = "string"` lines are understood, which is how
//! Cargo.toml files name these.
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
    let mut current = String::new();
    for line in text.lines() {
        if let Some(h) = header(line) {
            current = h.to_string();
            continue;
        }
        if current != table {
            continue;
        }
        let Some((k, value)) = line.split_once('=') else {
            continue;
        };
        if k.trim() != key {
            continue;
        }
        let value = value.trim();
        let quote = value.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        let rest = &value[1..];
        return rest.find(quote).map(|end| rest[..end].to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_package_and_the_lib_table() {
        let kernels = include_str!("../../kernels-rs/Cargo.toml");
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
        assert!(has_workspace_table(include_str!("../../Cargo.toml")));
        assert!(has_workspace_table(
            "[workspace.package]\nedition = \"2021\"\n"
        ));
        assert!(!has_workspace_table(include_str!("../Cargo.toml")));
    }

    #[test]
    fn the_workspace_root_is_the_nearest_directory_with_a_workspace_table() {
        let build = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(workspace_root(build), build.parent().unwrap());
    }
}
