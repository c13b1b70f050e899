//! Offline validation of the PTX with NVIDIA's `ptxas`: does every entry assemble for the target
//! GPU, and with how many registers, how much stack and how many spill bytes.
//!
//! `ptxas` is found, in order, at `$ADAMANT_PTXAS`, as `ptxas` on `PATH`, in the PyPI wheel
//! `nvidia-cuda-nvcc` (what `scripts/setup.sh` installs; `python3 -c "import nvidia.cu13"`), then
//! under `$CUDA_HOME`/`$CUDA_PATH` and `/usr/local/cuda`.
use std::env;
use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The architecture adamant's PTX targets (`.target sm_90`).
pub const DEFAULT_ARCH: &str = "sm_90";

/// The environment variable naming the `ptxas` to use.
pub const PTXAS_ENV: &str = "ADAMANT_PTXAS";

/// Python that prints the `ptxas` path of the PyPI wheel (CUDA 13 layout, then CUDA 12's).
const WHEEL_PROBE: &str = "import os\n\
try:\n    import nvidia.cu13 as m\n    print(os.path.join(m.__path__[0], 'bin', 'ptxas'))\n\
except ImportError:\n    import nvidia.cuda_nvcc as m\n    print(os.path.join(m.__path__[0], 'bin', 'ptxas'))\n";

/// How a [`Ptxas`] was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PtxasSource {
    /// `$ADAMANT_PTXAS`.
    Env,
    /// `ptxas` on `PATH`.
    Path,
    /// The PyPI wheel `nvidia-cuda-nvcc`.
    PythonWheel,
    /// `$CUDA_HOME/bin`, `$CUDA_PATH/bin` or `/usr/local/cuda/bin`.
    CudaToolkit,
    /// Given to [`Ptxas::at`].
    Given,
}

impl fmt::Display for PtxasSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PtxasSource::Env => PTXAS_ENV,
            PtxasSource::Path => "PATH",
            PtxasSource::PythonWheel => "PyPI wheel nvidia-cuda-nvcc",
            PtxasSource::CudaToolkit => "CUDA toolkit",
            PtxasSource::Given => "given path",
        })
    }
}

/// Why `ptxas` could not check a module. `Display` and `Error` are written out (no `thiserror`)
/// so that this file depends on `std` only and can serve build scripts.
#[derive(Debug)]
#[non_exhaustive]
pub enum PtxasError {
    /// No `ptxas` anywhere it was looked for.
    NotFound { tried: Vec<String> },
    /// `$ADAMANT_PTXAS` names something that is not a file.
    BadEnv { path: PathBuf },
    /// `ptxas` could not be started, or a file could not be read or written.
    Io { what: String, source: io::Error },
    /// `ptxas` ran and failed (the PTX does not assemble).
    Failed {
        command: String,
        status: Option<i32>,
        stderr: String,
    },
}

impl fmt::Display for PtxasError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PtxasError::NotFound { tried } => write!(
                f,
                "ptxas not found (looked at: {}); install it with scripts/setup.sh (PyPI wheel \
                 nvidia-cuda-nvcc) or set {PTXAS_ENV} to its path",
                tried.join("; ")
            ),
            PtxasError::BadEnv { path } => {
                write!(f, "{PTXAS_ENV}={} is not a file", path.display())
            }
            PtxasError::Io { what, source } => write!(f, "{what}: {source}"),
            PtxasError::Failed {
                command,
                status,
                stderr,
            } => {
                let status = status.map_or("killed by a signal".to_string(), |c| {
                    format!("exit status {c}")
                });
                write!(f, "`{command}` failed ({status}):\n{stderr}")
            }
        }
    }
}

impl std::error::Error for PtxasError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PtxasError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Resources `ptxas -v` reports for one function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionResources {
    pub name: String,
    /// A kernel entry (`Compiling entry function`), as opposed to a device function.
    pub is_entry: bool,
    pub registers: Option<u32>,
    pub barriers: Option<u32>,
    pub stack_frame_bytes: Option<u64>,
    pub spill_store_bytes: Option<u64>,
    pub spill_load_bytes: Option<u64>,
    /// `N bytes cumulative stack size` (older ptxas, and functions that call others).
    pub cumulative_stack_bytes: Option<u64>,
    /// `N bytes smem`.
    pub shared_bytes: Option<u64>,
    /// `(bank, bytes)` for each `N bytes cmem[bank]`.
    pub constant_bytes: Vec<(u32, u64)>,
}

impl FunctionResources {
    /// Spill stores plus spill loads, in bytes (0 when not reported).
    pub fn spill_bytes(&self) -> u64 {
        self.spill_store_bytes.unwrap_or(0) + self.spill_load_bytes.unwrap_or(0)
    }
}

/// What `ptxas -v` said about a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxasReport {
    pub arch: String,
    /// Every function, in ptxas's order.
    pub functions: Vec<FunctionResources>,
    /// `ptxas warning` lines.
    pub warnings: Vec<String>,
    /// Everything ptxas printed.
    pub output: String,
}

impl PtxasReport {
    /// The kernel entries.
    pub fn entries(&self) -> impl Iterator<Item = &FunctionResources> {
        self.functions.iter().filter(|f| f.is_entry)
    }

    /// The function (entry or not) called `name`.
    pub fn function(&self, name: &str) -> Option<&FunctionResources> {
        self.functions.iter().find(|f| f.name == name)
    }
}

/// A located `ptxas` executable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ptxas {
    pub path: PathBuf,
    pub source: PtxasSource,
}

impl Ptxas {
    /// Finds `ptxas` (see the module documentation for the order).
    pub fn locate() -> Result<Ptxas, PtxasError> {
        let mut tried = Vec::new();
        if let Some(path) = env::var_os(PTXAS_ENV).filter(|p| !p.is_empty()) {
            let path = PathBuf::from(path);
            return if path.is_file() {
                Ok(Ptxas {
                    path,
                    source: PtxasSource::Env,
                })
            } else {
                Err(PtxasError::BadEnv { path })
            };
        }
        tried.push(format!("${PTXAS_ENV} (unset)"));

        if let Some(path) = find_on_path("ptxas") {
            return Ok(Ptxas {
                path,
                source: PtxasSource::Path,
            });
        }
        tried.push("ptxas on PATH".to_string());

        match wheel_ptxas() {
            Ok(path) => {
                return Ok(Ptxas {
                    path,
                    source: PtxasSource::PythonWheel,
                })
            }
            Err(why) => tried.push(format!("PyPI wheel nvidia-cuda-nvcc via python3 ({why})")),
        }

        let mut toolkits: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
            .iter()
            .filter_map(env::var_os)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .collect();
        toolkits.push(PathBuf::from("/usr/local/cuda"));
        for dir in toolkits {
            let path = dir.join("bin").join(exe("ptxas"));
            if path.is_file() {
                return Ok(Ptxas {
                    path,
                    source: PtxasSource::CudaToolkit,
                });
            }
            tried.push(path.display().to_string());
        }
        Err(PtxasError::NotFound { tried })
    }

    /// The `ptxas` at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Ptxas {
        Ptxas {
            path: path.into(),
            source: PtxasSource::Given,
        }
    }

    /// The `release` line of `ptxas --version` (`Cuda compilation tools, release 13.5,
    /// V13.5.37`), else its last line.
    pub fn version(&self) -> Result<String, PtxasError> {
        let output = Command::new(&self.path)
            .arg("--version")
            .output()
            .map_err(|source| PtxasError::Io {
                what: format!("cannot run {}", self.path.display()),
                source,
            })?;
        let text = String::from_utf8_lossy(&output.stdout);
        Ok(text
            .lines()
            .find(|l| l.contains("release"))
            .or_else(|| text.lines().last())
            .unwrap_or("")
            .trim()
            .to_string())
    }

    /// Runs `ptxas -arch=<arch> -v <ptx_file> -o /dev/null` and parses its report.
    pub fn compile_file(&self, ptx_file: &Path, arch: &str) -> Result<PtxasReport, PtxasError> {
        let mut cmd = Command::new(&self.path);
        cmd.arg(format!("-arch={arch}"))
            .arg("-v")
            .arg(ptx_file)
            .arg("-o")
            .arg(null_device());
        let command = format!(
            "{} -arch={arch} -v {} -o {}",
            self.path.display(),
            ptx_file.display(),
            null_device()
        );
        let output = cmd.output().map_err(|source| PtxasError::Io {
            what: format!("cannot run {}", self.path.display()),
            source,
        })?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            let mut text = stderr.trim().to_string();
            if text.is_empty() {
                text = stdout.trim().to_string();
            }
            return Err(PtxasError::Failed {
                command,
                status: output.status.code(),
                stderr: text,
            });
        }
        // ptxas prints its `-v` report on stderr; read both in case that changes.
        let text = format!("{stdout}{stderr}");
        Ok(PtxasReport {
            arch: arch.to_string(),
            functions: parse_verbose(&text),
            warnings: text
                .lines()
                .filter(|l| l.starts_with("ptxas warning"))
                .map(|l| l.trim().to_string())
                .collect(),
            output: text,
        })
    }

    /// [`Ptxas::compile_file`] on PTX text (written to a temporary file, removed afterwards).
    pub fn compile(&self, ptx: &str, arch: &str) -> Result<PtxasReport, PtxasError> {
        let file = TempFile::new("ptx")?;
        fs::write(&file.0, ptx).map_err(|source| PtxasError::Io {
            what: format!("cannot write {}", file.0.display()),
            source,
        })?;
        self.compile_file(&file.0, arch)
    }
}

/// Locates `ptxas` and assembles `ptx` for `arch`.
pub fn check(ptx: &str, arch: &str) -> Result<PtxasReport, PtxasError> {
    Ptxas::locate()?.compile(ptx, arch)
}

/// Parses the `ptxas -v` report:
///
/// ```text
/// ptxas info    : Compiling entry function 'iqn_adam_kernel' for 'sm_90'
/// ptxas info    : Function properties for iqn_adam_kernel
///     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
/// ptxas info    : Used 48 registers, used 0 barriers, 12 bytes cumulative stack size
/// ```
///
/// Lines it does not recognise are ignored.
pub fn parse_verbose(output: &str) -> Vec<FunctionResources> {
    let mut functions: Vec<FunctionResources> = Vec::new();
    // The function the next `Used N registers` line belongs to.
    let mut current: Option<usize> = None;
    // The function the next `bytes stack frame` line belongs to.
    let mut properties_of: Option<usize> = None;
    let index_of = |functions: &mut Vec<FunctionResources>, name: &str| -> usize {
        match functions.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                functions.push(FunctionResources {
                    name: name.to_string(),
                    ..Default::default()
                });
                functions.len() - 1
            }
        }
    };
    for line in output.lines() {
        let message = match line.split_once(':') {
            Some((head, rest)) if head.trim_start().starts_with("ptxas") => rest.trim(),
            _ => line.trim(),
        };
        if let Some(rest) = message
            .strip_prefix("Compiling entry function")
            .or_else(|| message.strip_prefix("Compiling function"))
        {
            let is_entry = message.starts_with("Compiling entry");
            if let Some(name) = quoted(rest) {
                let i = index_of(&mut functions, name);
                functions[i].is_entry |= is_entry;
                current = Some(i);
            }
        } else if let Some(rest) = message.strip_prefix("Function properties for") {
            let name = rest.trim().trim_matches('\'');
            if !name.is_empty() {
                properties_of = Some(index_of(&mut functions, name));
            }
        } else if message.starts_with("Used ") {
            if let Some(i) = current {
                let f = &mut functions[i];
                for part in message.split(',') {
                    let part = part.trim();
                    let words: Vec<&str> = part.split_whitespace().collect();
                    match words.as_slice() {
                        ["Used", n, "registers"] => f.registers = n.parse().ok(),
                        ["used", n, "barriers"] => f.barriers = n.parse().ok(),
                        [n, "bytes", "cumulative", "stack", "size"] => {
                            f.cumulative_stack_bytes = n.parse().ok()
                        }
                        [n, "bytes", "smem"] => f.shared_bytes = n.parse().ok(),
                        [n, "bytes", cmem] if cmem.starts_with("cmem[") => {
                            let bank = cmem
                                .trim_start_matches("cmem[")
                                .trim_end_matches(']')
                                .parse()
                                .ok();
                            if let (Some(bank), Ok(bytes)) = (bank, n.parse()) {
                                f.constant_bytes.push((bank, bytes));
                            }
                        }
                        _ => {}
                    }
                }
            }
        } else if message.contains("bytes stack frame") {
            if let Some(i) = properties_of.take() {
                let f = &mut functions[i];
                for part in message.split(',') {
                    let words: Vec<&str> = part.split_whitespace().collect();
                    match words.as_slice() {
                        [n, "bytes", "stack", "frame"] => f.stack_frame_bytes = n.parse().ok(),
                        [n, "bytes", "spill", "stores"] => f.spill_store_bytes = n.parse().ok(),
                        [n, "bytes", "spill", "loads"] => f.spill_load_bytes = n.parse().ok(),
                        _ => {}
                    }
                }
            }
        }
    }
    functions
}

/// The text between the first pair of single quotes.
fn quoted(s: &str) -> Option<&str> {
    let start = s.find('\'')? + 1;
    let len = s[start..].find('\'')?;
    Some(&s[start..start + len])
}

fn exe(name: &str) -> String {
    if cfg!(windows) {
        format!("{name}.exe")
    } else {
        name.to_string()
    }
}

fn null_device() -> &'static str {
    if cfg!(windows) {
        "NUL"
    } else {
        "/dev/null"
    }
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path: OsString = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|dir| dir.join(exe(name)))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// The wheel's `ptxas`, or why there is none.
fn wheel_ptxas() -> Result<PathBuf, String> {
    let output = Command::new("python3")
        .args(["-c", WHEEL_PROBE])
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().last().unwrap_or("").trim().to_string();
        return Err(if last.is_empty() {
            "not installed".to_string()
        } else {
            last
        });
    }
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!("{} does not exist", path.display()))
    }
}

/// A file in the temporary directory, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(extension: &str) -> Result<TempFile, PtxasError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = env::temp_dir();
        for _ in 0..100 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!(
                "adamant-{}-{nanos}-{n}.{extension}",
                std::process::id()
            ));
            match fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(_) => return Ok(TempFile(path)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(source) => {
                    return Err(PtxasError::Io {
                        what: format!("cannot create a file in {}", dir.display()),
                        source,
                    })
                }
            }
        }
        Err(PtxasError::Io {
            what: format!("cannot create a file in {}", dir.display()),
            source: io::Error::from(io::ErrorKind::AlreadyExists),
        })
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}
