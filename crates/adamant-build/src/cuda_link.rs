//! Whether a crate that depends on `cust` can be built and linked on this machine, GPU or not.
//!
//! `cust` 0.3.2 links the CUDA driver library (`-lcuda`) even where no GPU will ever run the
//! program, and its `cust_raw` build script (`find_cuda_helper` 0.2) panics with "Could not find
//! a cuda installation" unless one of the folders it searches has a `lib64/` subfolder:
//! each entry of `CUDA_LIBRARY_PATH` (`:`-separated), `/opt/cuda`, `/usr/local/cuda` and
//! `/usr/local/cuda-*`. A folder that passes that test but holds no `libcuda.so` ends the build
//! later, in the linker. [`check_cuda_link`] makes the same search, by the same rules, and names
//! the fix: the `.cargo/config.toml` lines ([`CUDA_CONFIG`]) and the stub folder
//! ([`CUDA_STUB_COMMANDS`]) that this repository's own `.cargo/config.toml` and
//! `scripts/setup.sh` set up. `adamant-runtime`'s build script runs it, so every crate that
//! links the runtime gets the message instead of a linker error. On a fresh build cargo usually
//! runs `cust_raw`'s build script first, and its panic is then the first thing shown: the README
//! ("Your own optimizer kernels, in your own crate") quotes that message and these lines.
use std::env;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::BuildError;

/// The lines of `.cargo/config.toml` (in the root of the workspace being built) that point
/// `cust`'s build script at a folder with `lib64/libcuda.so` in it. `relative = true` makes
/// cargo pass an absolute path: `cust_raw`'s build script runs in its own directory, where a
/// relative one means nothing.
pub const CUDA_CONFIG: &str = "[env]
CUDA_LIBRARY_PATH = { value = \".cuda-stub\", relative = true }
";

/// The commands, run in the workspace root, that make the folder [`CUDA_CONFIG`] names: a link
/// to the driver library (Debian and Ubuntu install it with the NVIDIA driver, or without a GPU
/// from the `libcuda1` package, in Debian's `non-free` component; a CUDA toolkit has a stub in
/// `lib64/stubs/`).
pub const CUDA_STUB_COMMANDS: &str = "mkdir -p .cuda-stub/lib64
ln -sf /usr/lib/x86_64-linux-gnu/libcuda.so .cuda-stub/lib64/libcuda.so
";

/// The folders `find_cuda_helper` searches besides `CUDA_LIBRARY_PATH`'s (Linux).
const DEFAULT_ROOTS: [&str; 2] = ["/opt/cuda", "/usr/local/cuda"];

/// Where the linker finds `-lcuda` without being told (Debian's multiarch folder first).
const SYSTEM_LIB_DIRS: [&str; 5] = [
    "/usr/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/lib64",
    "/usr/lib",
];

/// Checks, for a build script, that `cust` will build and link here: `find_cuda_helper` finds
/// a folder (as it searches: `CUDA_LIBRARY_PATH`, `/opt/cuda`, `/usr/local/cuda`,
/// `/usr/local/cuda-*`), and a `libcuda.so` is in one of its library folders or the system's.
/// Returns that `libcuda.so`. Prints `cargo:rerun-if-env-changed=CUDA_LIBRARY_PATH`. Off Linux
/// (where `find_cuda_helper` searches otherwise) it checks nothing and returns an empty path.
///
/// # Errors
///
/// A [`BuildError`] that names what `cust`'s build or the link would stop at, and the fix:
/// [`CUDA_CONFIG`] and [`CUDA_STUB_COMMANDS`].
pub fn check_cuda_link() -> Result<PathBuf, BuildError> {
    println!("cargo:rerun-if-env-changed=CUDA_LIBRARY_PATH");
    if !cfg!(target_os = "linux") {
        return Ok(PathBuf::new());
    }
    let mut roots: Vec<PathBuf> = DEFAULT_ROOTS.iter().map(PathBuf::from).collect();
    if let Ok(entries) = fs::read_dir("/usr/local") {
        let mut versioned: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("cuda-"))
            .map(|e| e.path())
            .collect();
        versioned.sort();
        roots.extend(versioned);
    }
    let system: Vec<PathBuf> = SYSTEM_LIB_DIRS.iter().map(PathBuf::from).collect();
    check(env::var_os("CUDA_LIBRARY_PATH"), &roots, &system)
}

/// [`check_cuda_link`] with the variable's value, the default roots and the system library
/// folders given.
fn check(
    cuda_library_path: Option<OsString>,
    roots: &[PathBuf],
    system: &[PathBuf],
) -> Result<PathBuf, BuildError> {
    let listed: Vec<PathBuf> = cuda_library_path
        .as_ref()
        .map(|v| {
            env::split_paths(v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    // `find_cuda_helper` resolves a relative entry in `cust_raw`'s own directory, where it
    // names nothing of the user's: such an entry is reported, never taken.
    let relative: Vec<&PathBuf> = listed.iter().filter(|p| p.is_relative()).collect();
    let searched: Vec<PathBuf> = listed
        .iter()
        .filter(|p| p.is_absolute())
        .chain(roots)
        .cloned()
        .collect();
    let lib_dirs: Vec<PathBuf> = searched.iter().flat_map(|base| lib_dirs(base)).collect();
    if lib_dirs.is_empty() {
        return Err(BuildError::new(no_folder(
            cuda_library_path.as_ref(),
            &relative,
            roots,
        )));
    }
    lib_dirs
        .iter()
        .chain(system)
        .map(|dir| dir.join("libcuda.so"))
        .find(|so| so.exists())
        .ok_or_else(|| BuildError::new(no_library(&lib_dirs, system)))
}

/// The library folders `find_cuda_helper` adds for `base`: `lib64/` and `lib64/stubs/` when
/// `lib64/` exists; a toolkit's `targets/x86_64-linux/lib{,/stubs}` when its `cuda.h` does.
fn lib_dirs(base: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let lib64 = base.join("lib64");
    if lib64.is_dir() {
        dirs.push(lib64.clone());
        dirs.push(lib64.join("stubs"));
    }
    let target = base.join("targets/x86_64-linux");
    if target.join("include/cuda.h").is_file() {
        dirs.push(target.join("lib"));
        dirs.push(target.join("lib/stubs"));
    }
    dirs
}

/// The fix, as the two messages end.
fn fix() -> String {
    format!(
        "  fix: in the root of the workspace you build, a `.cargo/config.toml` with\n\n\
         {CUDA_CONFIG}\n  and the folder it names, holding a libcuda.so (run there):\n\n\
         {CUDA_STUB_COMMANDS}\n  (libcuda.so comes with the NVIDIA driver; without a GPU, \
         Debian's `libcuda1` package (non-free) or a CUDA toolkit's lib64/stubs/libcuda.so), \
         or point CUDA_LIBRARY_PATH at a CUDA installation. adamant's scripts/setup.sh does \
         this for its own repository."
    )
}

fn no_folder(value: Option<&OsString>, relative: &[&PathBuf], roots: &[PathBuf]) -> String {
    let variable = match value {
        Some(v) => format!("CUDA_LIBRARY_PATH={}", v.to_string_lossy()),
        None => "CUDA_LIBRARY_PATH (not set)".to_string(),
    };
    let mut searched = vec![variable];
    searched.extend(roots.iter().map(|r| r.display().to_string()));
    let relative = if relative.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = relative.iter().map(|p| p.display().to_string()).collect();
        format!(
            " CUDA_LIBRARY_PATH's {} is relative: cust's build script resolves it in its own \
             directory, not yours, so write it as `{{ value = \"...\", relative = true }}` in \
             .cargo/config.toml, which cargo makes absolute.",
            names.join(", ")
        )
    };
    format!(
        "no CUDA folder for cust's build script: cust (the driver bindings adamant-runtime uses) \
         links the CUDA driver library, -lcuda, even on a machine without a GPU, and its build \
         script (find_cuda_helper) stops with \"Could not find a cuda installation\" unless a \
         folder it searches has a lib64/ subfolder; it searched {}.{relative}\n{}",
        searched.join(", "),
        fix()
    )
}

fn no_library(lib_dirs: &[PathBuf], system: &[PathBuf]) -> String {
    let dirs: Vec<String> = lib_dirs
        .iter()
        .chain(system)
        .map(|d| d.display().to_string())
        .collect();
    format!(
        "no libcuda.so to link: cust links the CUDA driver library, -lcuda, even on a machine \
         without a GPU, and none of {} holds a libcuda.so, so every binary's link would fail \
         (\"unable to find library -lcuda\").\n{}",
        dirs.join(", "),
        fix()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh empty folder under the system's temporary one.
    fn scratch(name: &str) -> PathBuf {
        let dir = env::temp_dir().join(format!("adamant-cuda-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn no_folder_names_the_panic_the_config_lines_and_the_stub() {
        let empty = scratch("none");
        let roots = [empty.join("opt-cuda")];
        let err = check(None, &roots, &[]).unwrap_err();
        let message = err.message();
        assert!(
            message.contains("\"Could not find a cuda installation\""),
            "{message}"
        );
        assert!(
            message.contains(&format!(
                "it searched CUDA_LIBRARY_PATH (not set), {}.",
                roots[0].display()
            )),
            "{message}"
        );
        // The exact lines to paste, then the commands that make the folder.
        assert!(
            message.contains(&format!("`.cargo/config.toml` with\n\n{CUDA_CONFIG}\n")),
            "{message}"
        );
        assert!(message.contains(&format!("(run there):\n\n{CUDA_STUB_COMMANDS}\n")));

        // A relative entry is named: cust's build script would look for it elsewhere.
        let err = check(Some(".cuda-stub".into()), &roots, &[]).unwrap_err();
        assert!(
            err.message().contains(
                "CUDA_LIBRARY_PATH's .cuda-stub is relative: cust's build script resolves it in \
                 its own directory"
            ),
            "{err}"
        );
        fs::remove_dir_all(&empty).unwrap();
    }

    #[test]
    fn a_folder_without_libcuda_is_the_linkers_error_named_early() {
        let stub = scratch("stub");
        fs::create_dir_all(stub.join("lib64")).unwrap();
        let system = [stub.join("system")];
        let err = check(Some(stub.clone().into()), &[], &system).unwrap_err();
        assert!(
            err.message().starts_with(&format!(
                "no libcuda.so to link: cust links the CUDA driver library, -lcuda, even on a \
                 machine without a GPU, and none of {}, {}, {} holds a libcuda.so",
                stub.join("lib64").display(),
                stub.join("lib64/stubs").display(),
                system[0].display()
            )),
            "{err}"
        );
        assert!(err.message().contains(CUDA_CONFIG), "{err}");

        // The stub as setup.sh makes it: found. One in the system's folders does as well.
        fs::write(stub.join("lib64/libcuda.so"), "").unwrap();
        let path = format!("/nonexistent:{}", stub.display());
        assert_eq!(
            check(Some(path.into()), &[], &system).unwrap(),
            stub.join("lib64/libcuda.so")
        );
        fs::remove_file(stub.join("lib64/libcuda.so")).unwrap();
        fs::create_dir_all(&system[0]).unwrap();
        fs::write(system[0].join("libcuda.so"), "").unwrap();
        assert_eq!(
            check(Some(stub.clone().into()), &[], &system).unwrap(),
            system[0].join("libcuda.so")
        );
        fs::remove_dir_all(&stub).unwrap();
    }

    #[test]
    fn the_config_lines_are_this_repositorys_and_the_readmes() {
        let config = include_str!("../../../.cargo/config.toml");
        assert!(config.contains(CUDA_CONFIG), "{config}");
        let setup = include_str!("../../../scripts/setup.sh");
        for line in CUDA_STUB_COMMANDS.lines() {
            assert!(setup.contains(line), "setup.sh lacks `{line}`");
        }
        let readme = include_str!("../../../README.md");
        assert!(readme.contains(&format!("```toml\n{CUDA_CONFIG}```")));
        assert!(readme.contains(&format!("```sh\n{CUDA_STUB_COMMANDS}```")));
        assert!(readme.contains("Could not find a cuda installation"));
    }

    #[test]
    fn this_machine_links_as_its_build_did() {
        // The tests run under the configuration the build ran with (.cargo/config.toml): the
        // runtime's build script passed this check, so it passes here.
        assert!(check_cuda_link().is_ok());
    }
}
