//! Builds `kernels-rs` into one PTX module with the stock nightly NVPTX backend, checks it, embeds
//! it (OUT_DIR) and writes a copy to `<target-dir>/ptx/adamant_kernels.ptx`.
//!
//! Recipe (README, "How the PTX is built"): `cargo +nightly rustc --profile ptx --target
//! nvptx64-nvidia-cuda -Zbuild-std=core --crate-type cdylib -- --emit=asm -Zno-link` in a target
//! directory of its own, with a clean environment so nothing from the outer build leaks in.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{exit, Command, Stdio};

// The module check, the whole PTX audit and the source check run here, on the module just built
// (adamant-build): a kernel whose stores are not attributed or not clamped fails `cargo build`,
// not only `adamant audit`.
use adamant_build::{audit, ptx, source_check};

/// The nightly the device code is written against (`core::arch::nvptx` and the gpu intrinsics
/// change between nightlies). `ADAMANT_ALLOW_ANY_NIGHTLY=1` skips the check.
const PINNED_NIGHTLY_COMMIT: &str = "e50aa6fba4e63ab34c72bf9acfd2c307c1155d1a";
const PINNED_NIGHTLY: &str = "rustc 1.97.0-nightly (e50aa6fba 2026-05-19)";
const TARGET: &str = "nvptx64-nvidia-cuda";
const RUSTFLAGS: [&str; 3] = [
    "-Zunstable-options",
    "-Cpanic=immediate-abort",
    "-Ctarget-cpu=sm_90",
];

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest_dir.parent().unwrap().to_path_buf();
    // adamant-build is a build-dependency: a change to it rebuilds this script, which reruns it.
    for path in [
        "kernels-rs/src",
        "kernels-rs/Cargo.toml",
        "codegen/src",
        "codegen/Cargo.toml",
        "Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", workspace.join(path).display());
    }
    println!("cargo:rerun-if-env-changed=ADAMANT_ALLOW_ANY_NIGHTLY");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");

    check_sources(&workspace.join("kernels-rs/src"));
    check_toolchain();
    let target_dir = env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| {
            if p.is_absolute() {
                p
            } else {
                workspace.join(p)
            }
        })
        .unwrap_or_else(|| workspace.join("target"));
    let ptx_text = build_ptx(&workspace, &target_dir.join("ptx-build"));
    check_ptx(&ptx_text);

    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    write(&out_dir.join("adamant_kernels.ptx"), &ptx_text);
    let published = target_dir.join("ptx").join("adamant_kernels.ptx");
    write(&published, &ptx_text);
    println!("cargo:rustc-env=ADAMANT_PTX_PATH={}", published.display());
}

fn fail(message: &str) -> ! {
    eprintln!("\nerror: adamant PTX build: {message}\n");
    exit(1);
}

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)
            .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", dir.display())));
    }
    // Only write when the content changed, so the file's mtime means something.
    if fs::read_to_string(path).ok().as_deref() != Some(text) {
        fs::write(path, text)
            .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", path.display())));
    }
}

/// A `Command` for the nightly toolchain with the outer build's variables removed: cargo passes
/// RUSTC, RUSTFLAGS, CARGO_ENCODED_RUSTFLAGS, RUSTUP_TOOLCHAIN, CARGO_TARGET_DIR... to build
/// scripts, and any of them would redirect or break the nested build.
fn nightly(program: &str) -> Command {
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

fn check_toolchain() {
    let output = nightly("rustc").arg("-vV").output();
    let output = match output {
        Ok(o) if o.status.success() => o,
        Ok(o) => fail(&format!(
            "the nightly toolchain is not installed ({}).\n  fix: rustup toolchain install nightly \
             --component rust-src\n  adamant is pinned to {PINNED_NIGHTLY}.",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => fail(&format!(
            "cannot run `rustup` ({e}); the PTX build needs rustup with a nightly toolchain.\n  \
             fix: install rustup, then rustup toolchain install nightly --component rust-src"
        )),
    };
    let version = String::from_utf8_lossy(&output.stdout);
    let allow_any = env::var("ADAMANT_ALLOW_ANY_NIGHTLY").is_ok_and(|v| v == "1");
    if !version.contains(PINNED_NIGHTLY_COMMIT) && !allow_any {
        let found = version.lines().next().unwrap_or("?");
        fail(&format!(
            "the `nightly` toolchain is `{found}`, but adamant's device code is pinned to \
             `{PINNED_NIGHTLY}` (core::arch::nvptx and the gpu intrinsics change between \
             nightlies).\n  fix: rustup toolchain install nightly-2026-05-20 --component rust-src \
             and make it the `nightly` toolchain, or set ADAMANT_ALLOW_ANY_NIGHTLY=1 to try \
             another one"
        ));
    }
    let sysroot = nightly("rustc")
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .unwrap_or_else(|| fail("`rustc +nightly --print sysroot` failed"));
    let core_src = sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml");
    if !core_src.exists() {
        fail(
            "the nightly toolchain has no `rust-src` component, which -Zbuild-std=core needs \
             (the nvptx64-nvidia-cuda target ships no prebuilt core).\n  fix: rustup component \
             add rust-src --toolchain nightly",
        );
    }
}

fn build_ptx(workspace: &Path, target_dir: &Path) -> String {
    let status = nightly("cargo")
        .current_dir(workspace)
        .env("CARGO_TARGET_DIR", target_dir)
        .env("CARGO_ENCODED_RUSTFLAGS", RUSTFLAGS.join("\x1f"))
        .args([
            "rustc",
            "--quiet",
            "-p",
            "adamant-kernels",
            "--profile",
            "ptx",
            "--target",
            TARGET,
            "-Zbuild-std=core",
            "--crate-type",
            "cdylib",
            "--",
            "--emit=asm",
            "-Zno-link",
        ])
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()
        .unwrap_or_else(|e| fail(&format!("cannot run the nightly cargo: {e}")));
    if !status.success() {
        fail("compiling kernels-rs for nvptx64-nvidia-cuda failed (rustc's errors are above)");
    }
    let path = target_dir
        .join(TARGET)
        .join("ptx")
        .join("deps")
        .join("adamant_kernels.s");
    fs::read_to_string(&path)
        .unwrap_or_else(|e| fail(&format!("the PTX {} was not produced: {e}", path.display())))
}

/// Refuses a module that is not exactly the declared kernels: an entry no descriptor declares, a
/// declared kernel with no entry, a duplicate, any `.func` (extern or not) or inline assembly.
/// Every problem is reported, not only the first.
fn check_ptx(ptx_text: &str) {
    let expected: Vec<&str> = adamant_kernels::abi::kernels()
        .iter()
        .map(|k| k.name)
        .collect();
    if let Err(problems) = ptx::check_module(ptx_text, &expected) {
        let list: Vec<String> = problems.iter().map(|p| format!("  - {p}")).collect();
        fail(&format!(
            "the PTX module is not what the kernel descriptors declare ({} problem{}):\n{}",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" },
            list.join("\n")
        ));
    }
    let report = audit::audit(ptx_text, &adamant_kernels::abi::kernels());
    if !report.is_ok() {
        let list: Vec<String> = report
            .violations
            .iter()
            .map(|v| format!("  - {v}"))
            .collect();
        fail(&format!(
            "the PTX audit found {} violation(s) in the module just built (see the README's \
             threat model):\n{}",
            report.violations.len(),
            list.join("\n")
        ));
    }
}

/// The device crate holds only macro-generated entries and plain Rust: no assembly macros in its
/// sources (`source_check`).
fn check_sources(dir: &Path) {
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
            .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", p.display())));
        match source_check::assembly_macros(&text) {
            Ok(found) => problems.extend(
                found
                    .into_iter()
                    .map(|n| format!("  - {}: `{n}`", p.display())),
            ),
            Err(e) => problems.push(format!("  - {}: {e}", p.display())),
        }
    }
    if !problems.is_empty() {
        fail(&format!(
            "the device crate uses inline or module-level assembly, which the PTX audit cannot \
             check (adamant's kernels are plain Rust):\n{}",
            problems.join("\n")
        ));
    }
}
