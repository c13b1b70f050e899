//! [`KernelCrate`]: compiles a kernel crate to one PTX module from a build script, checks and
//! audits it, and writes it where the calling crate can embed it.
//!
//! The recipe (README, "How the PTX is built"): `cargo +nightly rustc -p <package> --profile ptx
//! --target nvptx64-nvidia-cuda -Zbuild-std=core --crate-type cdylib -- --emit=asm -Zno-link`,
//! with `RUSTFLAGS=-Zunstable-options -Cpanic=immediate-abort -Ctarget-cpu=sm_90`, in a target
//! directory of its own (`<target-dir>/ptx-build`) and a clean environment, so nothing from the
//! outer build leaks in. The kernel crate's workspace must define `[profile.ptx]`
//! ([`PTX_PROFILE`](crate::PTX_PROFILE)); the build checks that it does before compiling.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{exit, Stdio};

use adamant_abi::certificate::Certificate;
use adamant_abi::KernelDescriptor;

use crate::audit::AuditReport;
use crate::error::BuildError;
use crate::manifest::{self, CrateNames};
use crate::ptxas::{self, Ptxas, PtxasError, PtxasReport};
use crate::register_caps::write_register_caps;
use crate::{checks, toolchain};

const TARGET: &str = "nvptx64-nvidia-cuda";
/// The cfg the kernel macros compile every entry under (`adamant-codegen`'s `ENTRIES_CFG`; a
/// proc-macro crate cannot export it). A drift would leave the module without its declared
/// entries, which the module check after the compile refuses.
const ENTRIES_CFG: &str = "adamant_entries";
/// `-Ctarget-cpu` is the architecture ptxas is asked to assemble for ([`ptxas::DEFAULT_ARCH`]).
const RUSTFLAGS: [&str; 5] = [
    "-Zunstable-options",
    "-Cpanic=immediate-abort",
    "-Ctarget-cpu=sm_90",
    // PTX ISA 8.0 (CUDA 12.0; the driver and ptxas of every supported machine read it): LLVM
    // selects the L1 prefetch a chunk's sweep asks for its next group with
    // (`builtins::prefetch_l1`) from 8.0 on.
    "-Ctarget-feature=+ptx80",
    // Scheduled for register pressure: the diagnostics epilogue holds three registers more per
    // thread, and every single-buffer entry must stay at 64 or fewer (tests/audit/ptxas.rs).
    "-Cllvm-args=-nvptx-sched4reg",
];

/// A kernel crate to compile to PTX, configured from a build script.
///
/// The whole `build.rs` of a crate that embeds the PTX of the kernel crate in `../my-kernels`
/// (package `my-kernels`, library `my_kernels`, so the module is `my_kernels.ptx`), with
/// `adamant-build` and `my-kernels` in its `[build-dependencies]`, and the workspace's
/// `[profile.ptx]` ([`PTX_PROFILE`](crate::PTX_PROFILE)) in the root Cargo.toml:
///
/// ```no_run
/// // Links the kernel crate into this script, which registers its kernels here: the module is
/// // checked and audited against them (the set `my_kernels`).
/// use my_kernels as _;
/// # mod my_kernels {}
///
/// fn main() {
///     let built = adamant_build::KernelCrate::new("../my-kernels").build();
///     // Where the audited module and its certificate were written, besides OUT_DIR.
///     println!("cargo:warning=PTX at {}", built.published.display());
/// }
/// ```
///
/// (`no_run`: it compiles the kernel crate with cargo.) In that crate, the module with its audit
/// certificate, which the runtime verifies before it loads it (`rt.add_module(&MODULE)?`):
///
/// ```text
/// pub static MODULE: adamant_runtime::AuditedModule =
///     adamant_runtime::include_module!(my_kernels);
/// ```
///
/// [`KernelCrate::try_build`] returns the error instead of exiting, for a script that reports
/// it itself; outside a build script (here, a doctest), cargo has set no `OUT_DIR`:
///
/// ```
/// let err = adamant_build::KernelCrate::new("../my-kernels").try_build().unwrap_err();
/// assert_eq!(
///     err.message(),
///     "OUT_DIR is not set: KernelCrate::build runs in a build script (build.rs)"
/// );
/// ```
#[derive(Clone, Debug)]
pub struct KernelCrate {
    dir: PathBuf,
    kernels: Option<Vec<&'static KernelDescriptor>>,
    watched: Vec<PathBuf>,
}

/// What [`KernelCrate::build`] made: a module that passed every check.
#[derive(Debug)]
pub struct BuiltPtx {
    /// The PTX text.
    pub ptx: String,
    /// `$OUT_DIR/<lib>.ptx`, `<lib>` being the kernel crate's library name: what the calling
    /// crate embeds with `include_str!(concat!(env!("OUT_DIR"), "/<lib>.ptx"))`.
    pub out_file: PathBuf,
    /// `<target-dir>/ptx/<lib>.ptx`, the same text, for tools and for copying to a GPU machine.
    /// Beside it (and beside [`BuiltPtx::out_file`]), `<lib>.kernels.json`: the kernel set it
    /// was checked against ([`crate::kernel_list`]), and `<lib>.certificate.json`.
    pub published: PathBuf,
    /// `$OUT_DIR/<lib>.certificate.json`, the module's audit certificate
    /// (`adamant_abi::certificate`: the PTX's SHA-256 and the kernel list it was checked and
    /// audited against), with a copy beside [`BuiltPtx::published`]. The runtime loads the
    /// module from safe code only with it (`adamant_runtime::include_module!`).
    pub certificate: PathBuf,
    /// The kernel crate's package and library names, from its Cargo.toml.
    pub names: CrateNames,
    /// The PTX audit's report (it passed).
    pub audit: AuditReport,
    /// `ptxas`'s report, or why there is none: ptxas is run when present, never required.
    pub ptxas: Result<PtxasReport, PtxasError>,
}

impl KernelCrate {
    /// The kernel crate in `dir`, relative to the calling crate's directory
    /// (`CARGO_MANIFEST_DIR`) unless absolute.
    pub fn new(dir: impl Into<PathBuf>) -> KernelCrate {
        KernelCrate {
            dir: dir.into(),
            kernels: None,
            watched: Vec::new(),
        }
    }

    /// The descriptors the module must match, entry for entry, and is audited against. Without
    /// this call: the kernel crate's own set ([`adamant_abi::kernel_set`] of its
    /// library name), as registered in the build script's binary, which must therefore link the
    /// kernel crate (a build-dependency, named in the script: `use my_kernels as _;`).
    pub fn kernels(mut self, kernels: impl IntoIterator<Item = &'static KernelDescriptor>) -> Self {
        self.kernels = Some(kernels.into_iter().collect());
        self
    }

    /// Also rebuild when `path` (relative to the calling crate's directory) changes: what the
    /// PTX depends on outside the kernel crate, such as a path dependency. The kernel crate's
    /// `src/` and Cargo.toml and its workspace's Cargo.toml are always watched.
    pub fn rerun_if_changed(mut self, path: impl Into<PathBuf>) -> Self {
        self.watched.push(path.into());
        self
    }

    /// [`KernelCrate::try_build`], and on failure prints `error: adamant PTX build: <why>` and
    /// exits the build script with status 1.
    pub fn build(self) -> BuiltPtx {
        self.try_build().unwrap_or_else(|e| {
            eprintln!("\nerror: adamant PTX build: {e}\n");
            exit(1)
        })
    }

    /// Emits the `cargo:rerun-if-changed` lines, checks the sources and the toolchain, compiles
    /// the crate, checks and audits the module, writes it to [`BuiltPtx::out_file`] and
    /// [`BuiltPtx::published`] with its kernel list and its audit certificate
    /// ([`BuiltPtx::certificate`]), and runs `ptxas` on it when one is found (a failure there is
    /// a `cargo:warning`, not an error).
    pub fn try_build(self) -> Result<BuiltPtx, BuildError> {
        let caller = PathBuf::from(build_env("CARGO_MANIFEST_DIR")?);
        let out_dir = PathBuf::from(build_env("OUT_DIR")?);
        let dir = caller.join(&self.dir).canonicalize().map_err(|e| {
            BuildError::new(format!(
                "the kernel crate {} does not exist ({e})",
                caller.join(&self.dir).display()
            ))
        })?;
        let names = manifest::crate_names(&dir)?;

        let watched = self.watched.iter().map(|p| resolve(&caller, p));
        let rerun: Vec<PathBuf> = [dir.join("src"), dir.join("Cargo.toml")]
            .into_iter()
            .chain(watched)
            .chain([manifest::workspace_root(&dir).join("Cargo.toml")])
            .collect();
        for path in rerun {
            println!("cargo:rerun-if-changed={}", path.display());
        }
        println!(
            "cargo:rerun-if-env-changed={}",
            toolchain::ALLOW_ANY_NIGHTLY_ENV
        );
        println!("cargo:rerun-if-env-changed={}", toolchain::NIGHTLY_ENV);
        println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");

        checks::sources(&dir.join("src"))?;
        manifest::check_ptx_profile(&manifest::workspace_root(&dir), &names.package)?;
        let nightly = toolchain::check()?;
        let target_dir = target_dir(&manifest::workspace_root(&caller));
        // The descriptors first: a duplicate name is reported here, by both definitions, rather
        // than as the symbol clash the compile would end in.
        let kernels = resolve_kernels(&names, self.kernels)?;
        check_unique_names(&kernels)?;
        let ptx = compile(&nightly, &dir, &names, &target_dir.join("ptx-build"))?;
        // Before the checks and the certificate: they cover the PTX the driver will compile.
        let ptx = write_register_caps(&ptx, &kernels)?;
        let audit = checks::module(&ptx, &kernels)?;

        let file = format!("{}.ptx", names.lib);
        let out_file = out_dir.join(&file);
        write(&out_file, &ptx)?;
        let published = target_dir.join("ptx").join(&file);
        write(&published, &ptx)?;
        // The descriptors the module was checked and audited against, for tools that do not
        // link the kernel crate (`adamant audit --ptx <lib>.ptx --kernels <lib>.kernels.json`).
        let list = crate::kernel_list::to_json(&kernels).map_err(|e| BuildError::new(e.0))?;
        let list_file = format!("{}.kernels.json", names.lib);
        write(&out_dir.join(&list_file), &list)?;
        write(&target_dir.join("ptx").join(&list_file), &list)?;
        // SAFETY: `checks::module` above passed: the module check and the whole PTX audit of
        // exactly `ptx` against exactly `kernels`. That is what the certificate states.
        let certificate = unsafe { Certificate::issue(&ptx, &kernels, env!("CARGO_PKG_VERSION")) }
            .map_err(|e| BuildError::new(e.to_string()))?
            .to_json();
        let certificate_file = format!("{}.certificate.json", names.lib);
        write(&out_dir.join(&certificate_file), &certificate)?;
        write(
            &target_dir.join("ptx").join(&certificate_file),
            &certificate,
        )?;

        let ptxas = Ptxas::locate().and_then(|p| p.compile(&ptx, ptxas::DEFAULT_ARCH));
        report_ptxas(&ptxas);
        Ok(BuiltPtx {
            ptx,
            out_file,
            published,
            certificate: out_dir.join(certificate_file),
            names,
            audit,
            ptxas,
        })
    }
}

/// Refuses a kernel set in which two kernels share an entry name (defined in two modules of one
/// crate, say): both would be one PTX symbol. The error names both definitions, where the PTX
/// compile would only report a symbol clash. [`KernelCrate::build`] runs it before compiling.
///
/// # Errors
///
/// A [`BuildError`] naming the entry, the crate and both `module (file:line)` locations.
pub fn check_unique_names(kernels: &[&'static KernelDescriptor]) -> Result<(), BuildError> {
    match adamant_abi::duplicate(kernels) {
        Some((first, second)) => Err(BuildError::new(format!(
            "kernel `{}` of crate `{}` is defined twice, at {} and at {}: entry names are PTX \
             symbols, one per crate (rename one)",
            first.name, first.set, first.defined_at, second.defined_at
        ))),
        None => Ok(()),
    }
}

/// The descriptors the module is checked and audited against: those given to
/// [`KernelCrate::kernels`], or the kernel crate's own set as registered in the build script.
/// Either way a non-empty list of the crate's own set (its library name): the module holds that
/// crate's entries only, so a list of another set, or none, could only end in the module check
/// listing every entry as undeclared.
fn resolve_kernels(
    names: &CrateNames,
    given: Option<Vec<&'static KernelDescriptor>>,
) -> Result<Vec<&'static KernelDescriptor>, BuildError> {
    let registered = || adamant_abi::describe_sets(&adamant_abi::sets());
    let kernels = match given {
        Some(kernels) if kernels.is_empty() => {
            return Err(BuildError::new(format!(
                "KernelCrate::kernels was given no kernels for the kernel crate `{package}` \
                 (registered sets in this build script: {sets}); leave the call out to use the \
                 set `{lib}` as registered, or pass adamant_abi::kernel_set(\"{lib}\")",
                package = names.package,
                lib = names.lib,
                sets = registered(),
            )))
        }
        Some(kernels) => kernels,
        None => adamant_abi::kernel_set(&names.lib).map_err(|_| {
            BuildError::new(format!(
                "no kernel of the set `{lib}` is registered in this build script (registered \
                 sets: {sets}): add `{package}` to [build-dependencies] and link it from \
                 build.rs with `use {lib} as _;`, or pass the descriptors to \
                 KernelCrate::kernels",
                lib = names.lib,
                package = names.package,
                sets = registered(),
            ))
        })?,
    };
    if let Some(other) = kernels.iter().find(|k| k.set != names.lib) {
        return Err(BuildError::new(format!(
            "KernelCrate::kernels was given `{name}` of the set `{set}`, but the kernel crate \
             `{package}` builds the module of the set `{lib}` (its library name): pass \
             adamant_abi::kernel_set(\"{lib}\"), or leave the call out",
            name = other.name,
            set = other.set,
            package = names.package,
            lib = names.lib,
        )));
    }
    Ok(kernels)
}

/// A variable cargo sets for build scripts.
fn build_env(name: &str) -> Result<String, BuildError> {
    env::var(name).map_err(|_| {
        BuildError::new(format!(
            "{name} is not set: KernelCrate::build runs in a build script (build.rs)"
        ))
    })
}

/// `path` relative to `base`, without `..` where the file exists (so messages name it plainly).
fn resolve(base: &Path, path: &Path) -> PathBuf {
    let joined = base.join(path);
    joined.canonicalize().unwrap_or(joined)
}

/// `$CARGO_TARGET_DIR` (relative to the workspace root), else `<workspace>/target`.
fn target_dir(workspace: &Path) -> PathBuf {
    env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| {
            if p.is_absolute() {
                p
            } else {
                workspace.join(p)
            }
        })
        .unwrap_or_else(|| workspace.join("target"))
}

/// Runs the recipe on the crate in `dir` and reads the PTX rustc wrote.
fn compile(
    nightly: &str,
    dir: &Path,
    names: &CrateNames,
    target_dir: &Path,
) -> Result<String, BuildError> {
    let status = toolchain::nightly(nightly, "cargo")
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir)
        .env("CARGO_ENCODED_RUSTFLAGS", RUSTFLAGS.join("\x1f"))
        .args([
            "rustc",
            "--quiet",
            "-p",
            &names.package,
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
            // For this crate only (arguments after `--` reach the final rustc, not the
            // dependencies'): the macros compile entries under this cfg, so the module holds
            // the kernel crate's entries and none of its dependencies'.
            "--cfg",
            ENTRIES_CFG,
        ])
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| BuildError::new(format!("cannot run the nightly cargo: {e}")))?;
    if !status.success() {
        let name = dir.file_name().unwrap_or(dir.as_os_str()).to_string_lossy();
        return Err(BuildError::new(format!(
            "compiling {name} for {TARGET} failed (rustc's errors are above)"
        )));
    }
    let path = target_dir
        .join(TARGET)
        .join("ptx")
        .join("deps")
        .join(format!("{}.s", names.lib));
    fs::read_to_string(&path)
        .map_err(|e| BuildError::new(format!("the PTX {} was not produced: {e}", path.display())))
}

fn write(path: &Path, text: &str) -> Result<(), BuildError> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)
            .map_err(|e| BuildError::new(format!("cannot create {}: {e}", dir.display())))?;
    }
    // Only write when the content changed, so the file's mtime means something.
    if fs::read_to_string(path).ok().as_deref() != Some(text) {
        fs::write(path, text)
            .map_err(|e| BuildError::new(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}

/// ptxas's verdict in the build's output: a summary line (seen with `cargo build -vv`), and a
/// `cargo:warning` for each ptxas warning and for a module ptxas rejects. Not finding ptxas is
/// only noted: it is optional.
fn report_ptxas(outcome: &Result<PtxasReport, PtxasError>) {
    let warn = |text: &str| {
        for line in text.lines() {
            println!("cargo:warning=adamant PTX build: {line}");
        }
    };
    match outcome {
        Ok(report) => {
            println!(
                "adamant PTX build: ptxas assembled {} entries for {}",
                report.entries().count(),
                report.arch
            );
            for w in &report.warnings {
                warn(w);
            }
        }
        Err(e @ PtxasError::NotFound { .. }) => println!("adamant PTX build: {e}"),
        Err(e) => warn(&format!("ptxas could not check the module: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_build_script_the_build_says_so() {
        // cargo sets OUT_DIR for build scripts only, not for this test.
        let err = KernelCrate::new("../adamant-kernels")
            .try_build()
            .unwrap_err();
        assert_eq!(
            err.message(),
            "OUT_DIR is not set: KernelCrate::build runs in a build script (build.rs)"
        );
    }

    fn names(lib: &str) -> CrateNames {
        CrateNames {
            package: lib.replace('_', "-"),
            lib: lib.to_string(),
        }
    }

    #[test]
    fn the_kernels_are_the_crates_own_non_empty_set() {
        let own = names(adamant_abi::OWN_SET);
        let ours = adamant_abi::kernels();
        assert_eq!(resolve_kernels(&own, None).unwrap(), ours);
        assert_eq!(resolve_kernels(&own, Some(ours.clone())).unwrap(), ours);

        // A crate whose set is not linked into the build script: named, with the sets that are.
        let err = resolve_kernels(&names("my_kernels"), None).unwrap_err();
        assert_eq!(
            err.message(),
            "no kernel of the set `my_kernels` is registered in this build script (registered \
             sets: `adamant_kernels`): add `my-kernels` to [build-dependencies] and link it from \
             build.rs with `use my_kernels as _;`, or pass the descriptors to KernelCrate::kernels"
        );
        // Another crate's kernels (adamant's, here) for it: refused before compiling.
        let err = resolve_kernels(&names("my_kernels"), Some(ours)).unwrap_err();
        assert!(
            err.message().contains(
                "of the set `adamant_kernels`, but the kernel crate \
                 `my-kernels` builds the module of the set `my_kernels`"
            ),
            "{err}"
        );
        // No kernels at all.
        let err = resolve_kernels(&own, Some(Vec::new())).unwrap_err();
        assert!(
            err.message().starts_with(
                "KernelCrate::kernels was given no kernels for the kernel crate \
                 `adamant-kernels` (registered sets in this build script: `adamant_kernels`)"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_relative_path_is_resolved_against_the_calling_crate() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(
            resolve(here, Path::new("../adamant-kernels")),
            here.parent().unwrap().join("adamant-kernels")
        );
        assert_eq!(
            resolve(here, Path::new("no-such-dir")),
            here.join("no-such-dir")
        );
    }
}
