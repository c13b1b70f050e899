//! The nightly toolchain the device code is built with: a clean `rustup run nightly` command, the
//! pin check and the `rust-src` check, each failing with a message that names the fix.
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

/// A `Command` for the nightly toolchain with the outer build's variables removed: cargo passes
/// RUSTC, RUSTFLAGS, CARGO_ENCODED_RUSTFLAGS, RUSTUP_TOOLCHAIN, CARGO_TARGET_DIR... to build
/// scripts, and any of them would redirect or break the nested build.
pub fn nightly(program: &str) -> Command {
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
    cmd.args(["run", "nightly", program]);
    cmd
}

/// The nightly is installed, is the pinned one (or [`ALLOW_ANY_NIGHTLY_ENV`] is `1`), and has
/// `rust-src`.
pub fn check() -> Result<(), BuildError> {
    let output = nightly("rustc").arg("-vV").output();
    let output = match output {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            return Err(BuildError::new(format!(
                "the nightly toolchain is not installed ({}).\n  fix: rustup toolchain install \
                 nightly --component rust-src\n  adamant is pinned to {PINNED_NIGHTLY}.",
                String::from_utf8_lossy(&o.stderr).trim()
            )))
        }
        Err(e) => {
            return Err(BuildError::new(format!(
                "cannot run `rustup` ({e}); the PTX build needs rustup with a nightly \
                 toolchain.\n  fix: install rustup, then rustup toolchain install nightly \
                 --component rust-src"
            )))
        }
    };
    let version = String::from_utf8_lossy(&output.stdout);
    let allow_any = env::var(ALLOW_ANY_NIGHTLY_ENV).is_ok_and(|v| v == "1");
    if !version.contains(PINNED_NIGHTLY_COMMIT) && !allow_any {
        let found = version.lines().next().unwrap_or("?");
        return Err(BuildError::new(format!(
            "the `nightly` toolchain is `{found}`, but adamant's device code is pinned to \
             `{PINNED_NIGHTLY}` (core::arch::nvptx and the gpu intrinsics change between \
             nightlies).\n  fix: rustup toolchain install nightly-2026-05-20 --component rust-src \
             and make it the `nightly` toolchain, or set {ALLOW_ANY_NIGHTLY_ENV}=1 to try \
             another one"
        )));
    }
    let sysroot = nightly("rustc")
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .ok_or_else(|| BuildError::new("`rustc +nightly --print sysroot` failed"))?;
    let core_src = sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml");
    if !core_src.exists() {
        return Err(BuildError::new(
            "the nightly toolchain has no `rust-src` component, which -Zbuild-std=core needs \
             (the nvptx64-nvidia-cuda target ships no prebuilt core).\n  fix: rustup component \
             add rust-src --toolchain nightly",
        ));
    }
    Ok(())
}
