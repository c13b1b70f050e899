//! The nightly toolchain the device code is built with: which one (the `ADAMANT_NIGHTLY`
//! variable, else the dated pin if it is installed, else `nightly`), a clean `rustup run`
//! command, the pin check and the `rust-src` check, each failing with a message that names a fix
//! that works (rustup cannot make another toolchain "the `nightly`", so the fixes name the
//! toolchain to install and the variable to point at it).
use std::env;
use std::path::PathBuf;
use std::process::Command;

use crate::error::BuildError;

/// The nightly the device code is written against (`core::arch::nvptx` and the gpu intrinsics
/// change between nightlies). `ADAMANT_ALLOW_ANY_NIGHTLY=1` skips the check.
pub const PINNED_NIGHTLY_COMMIT: &str = "e50aa6fba4e63ab34c72bf9acfd2c307c1155d1a";
/// `rustc -vV`'s first line for [`PINNED_NIGHTLY_COMMIT`].
pub const PINNED_NIGHTLY: &str = "rustc 1.97.0-nightly (e50aa6fba 2026-05-19)";
/// The variable that lets another nightly through the pin check (`=1`).
pub const ALLOW_ANY_NIGHTLY_ENV: &str = "ADAMANT_ALLOW_ANY_NIGHTLY";
/// The variable that names the toolchain to build with (a rustup toolchain name).
pub const NIGHTLY_ENV: &str = "ADAMANT_NIGHTLY";
/// The dated rustup toolchain of [`PINNED_NIGHTLY`] (nightlies are dated the day after their
/// commit).
pub const PINNED_TOOLCHAIN: &str = "nightly-2026-05-20";

/// A `Command` for the nightly toolchain with the outer build's variables removed: cargo passes
/// RUSTC, RUSTFLAGS, CARGO_ENCODED_RUSTFLAGS, RUSTUP_TOOLCHAIN, CARGO_TARGET_DIR... to build
/// scripts, and any of them would redirect or break the nested build.
pub fn nightly(toolchain: &str, program: &str) -> Command {
    let mut cmd = Command::new("rustup");
    cmd.env_clear();
    for var in [
        "PATH",
        "HOME",
        "RUSTUP_HOME",
        "CARGO_HOME",
        "TMPDIR",
        "USER",
    ] {
        if let Some(value) = env::var_os(var) {
            cmd.env(var, value);
        }
    }
    cmd.args(["run", toolchain, program]);
    cmd
}

/// `rustc -vV` of `toolchain`, if rustup has it.
fn version_of(toolchain: &str) -> Result<Option<String>, BuildError> {
    match nightly(toolchain, "rustc").arg("-vV").output() {
        Ok(o) if o.status.success() => Ok(Some(String::from_utf8_lossy(&o.stdout).into_owned())),
        Ok(_) => Ok(None),
        Err(e) => Err(BuildError::new(format!(
            "cannot run `rustup` ({e}); the PTX build needs rustup with a nightly toolchain.\n  \
             fix: install rustup, then rustup toolchain install {PINNED_TOOLCHAIN} --component \
             rust-src"
        ))),
    }
}

/// The toolchain to build with: `$ADAMANT_NIGHTLY` if set; else [`PINNED_TOOLCHAIN`] if rustup
/// has it; else `nightly`. It must be the pinned one (or [`ALLOW_ANY_NIGHTLY_ENV`] is `1`) and
/// have `rust-src`. Returns its rustup name.
pub fn check() -> Result<String, BuildError> {
    let chosen = env::var(NIGHTLY_ENV).ok().filter(|v| !v.trim().is_empty());
    let (toolchain, version) = match chosen {
        Some(name) => {
            let version = version_of(&name)?;
            (name, version)
        }
        None => match version_of(PINNED_TOOLCHAIN)? {
            Some(v) => (PINNED_TOOLCHAIN.to_string(), Some(v)),
            None => ("nightly".to_string(), version_of("nightly")?),
        },
    };
    let Some(version) = version else {
        return Err(BuildError::new(format!(
            "the toolchain `{toolchain}` is not installed.\n  fix: rustup toolchain install \
             {PINNED_TOOLCHAIN} --component rust-src (it is then found without further \
             settings; {NIGHTLY_ENV}=<toolchain> picks another)\n  adamant is pinned to \
             {PINNED_NIGHTLY}."
        )));
    };
    let allow_any = env::var(ALLOW_ANY_NIGHTLY_ENV).is_ok_and(|v| v == "1");
    if !version.contains(PINNED_NIGHTLY_COMMIT) && !allow_any {
        let found = version.lines().next().unwrap_or("?");
        return Err(BuildError::new(format!(
            "the toolchain `{toolchain}` is `{found}`, but adamant's device code is pinned to \
             `{PINNED_NIGHTLY}` (core::arch::nvptx and the gpu intrinsics change between \
             nightlies).\n  fix: rustup toolchain install {PINNED_TOOLCHAIN} --component \
             rust-src (the build then uses it by itself), or set {NIGHTLY_ENV} to a toolchain \
             that is that nightly, or set {ALLOW_ANY_NIGHTLY_ENV}=1 to try `{toolchain}` as it is"
        )));
    }
    let sysroot = nightly(&toolchain, "rustc")
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .ok_or_else(|| {
            BuildError::new(format!(
                "`rustup run {toolchain} rustc --print sysroot` failed"
            ))
        })?;
    let core_src = sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml");
    if !core_src.exists() {
        return Err(BuildError::new(format!(
            "the toolchain `{toolchain}` has no `rust-src` component, which -Zbuild-std=core \
             needs (the nvptx64-nvidia-cuda target ships no prebuilt core).\n  fix: rustup \
             component add rust-src --toolchain {toolchain}"
        )));
    }
    Ok(toolchain)
}
