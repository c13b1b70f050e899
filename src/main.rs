//! `adamant`: inspects the PTX module adamant's kernels are built into.
//!
//! `adamant audit` (the default) checks every `.entry` against the kernel descriptors registered
//! by `#[optimizer_kernel]`/`#[kernel_entry]`, proves from the PTX that each optimizer entry clamps
//! what it stores to its parameter buffer, and assembles the module with `ptxas` to report
//! registers, stack and spills per entry. It exits non-zero on any violation.
//!
//! `adamant audit --explain ENTRY` prints instead the audit's reasoning for one entry: for every
//! value it stores to its parameter buffer, the chain of instructions the value comes from back
//! to the bound's origin, and the verdict. It exits non-zero if that entry has a violation.
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use clap::{Args, Parser, Subcommand};

mod inspect;

use adamant_build::audit::{self, AuditReport, EntryAudit, EntryKind, ParamAudit};
use adamant_build::ptxas::{self, Ptxas, PtxasError, PtxasReport};
use adamant_device::abi::certificate::{self, Certificate};
use adamant_device::abi::ParamRole;

#[derive(Parser, Debug)]
#[command(
    name = "adamant",
    version,
    about = "Audit adamant's PTX: every optimizer entry must clamp what it writes",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// With no subcommand, `audit` runs with these options.
    #[command(flatten)]
    audit: AuditArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check every PTX entry against its declaration, verify the weight clamp of every optimizer
    /// entry, and report ptxas resources (the default command).
    Audit(AuditArgs),
    /// Read and check a checkpoint (its format and checksum) and list its tensors (type, shape,
    /// non-finite values) and metadata.
    Checkpoint {
        /// The checkpoint file.
        file: PathBuf,
    },
}

#[derive(Args, Debug, Clone, Default)]
struct AuditArgs {
    /// Audit this PTX file instead of the module embedded in this binary.
    #[arg(long, value_name = "PATH")]
    ptx: Option<PathBuf>,
    /// Fail when ptxas cannot be found (otherwise its columns read "ptxas not found").
    #[arg(long)]
    require_ptxas: bool,
    /// Audit against this kernel list (`<lib>.kernels.json`, written by adamant-build beside
    /// every module it builds) instead of adamant's own kernels: for another crate's PTX.
    #[arg(long, value_name = "PATH", requires = "ptx")]
    kernels: Option<PathBuf>,
    /// Audit against the kernel list of this audit certificate (`<lib>.certificate.json`,
    /// written by adamant-build beside every module it builds), once the PTX is shown to be the
    /// text it certifies (its SHA-256).
    #[arg(
        long,
        value_name = "PATH",
        requires = "ptx",
        conflicts_with = "kernels"
    )]
    certificate: Option<PathBuf>,
    /// Also write the audited PTX text to this file.
    #[arg(long, value_name = "PATH")]
    write_ptx: Option<PathBuf>,
    /// Explain the audit of this entry instead: for every value it stores to its parameter
    /// buffer, the chain of instructions back to the bound's origin and the verdict.
    #[arg(long, value_name = "ENTRY")]
    explain: Option<String>,
    /// GPU architecture for ptxas.
    #[arg(long, value_name = "SM", default_value = ptxas::DEFAULT_ARCH)]
    arch: Option<String>,
}

fn main() -> Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Audit(args)) => run_audit(&args),
        Some(Command::Checkpoint { file }) => Ok(inspect::run(&file)),
        None => run_audit(&cli.audit),
    }
}

/// `writeln!` into a `String` (which cannot fail).
macro_rules! outln {
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($out, $($arg)*);
    }};
}

/// Writes `text` to stdout; a reader that went away (`adamant | head`) is not an error.
fn emit(text: &str) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}

/// What came of running ptxas.
enum PtxasOutcome {
    Report(Ptxas, Box<PtxasReport>),
    NotFound(PtxasError),
    Failed(Ptxas, PtxasError),
}

/// The kernels of the certificate at `path`, if it certifies `ptx`.
fn certified_kernels(
    path: &Path,
    ptx: &str,
    out: &mut String,
) -> Result<Vec<&'static adamant_device::abi::KernelDescriptor>> {
    let json = fs::read_to_string(path)
        .with_context(|| format!("cannot read the certificate {}", path.display()))?;
    let cert = Certificate::from_json(&json)
        .with_context(|| format!("in the certificate {}", path.display()))?;
    let digest = certificate::ptx_sha256(ptx);
    if digest != cert.ptx_sha256() {
        return Err(anyhow!(
            "the certificate {} is not for this PTX: its SHA-256 is {digest}, the certificate's {}",
            path.display(),
            cert.ptx_sha256()
        ));
    }
    outln!(
        out,
        "certificate: {} entries of set `{}`, audited by adamant-build {}, for this PTX ({})",
        cert.kernels().len(),
        cert.set(),
        cert.adamant_build_version(),
        path.display()
    );
    Ok(cert.descriptors())
}

fn run_audit(args: &AuditArgs) -> Result<ExitCode> {
    // Everything is written at once at the end (a closed pipe, as with `| head`, is not an
    // error).
    let mut out = String::new();
    let arch = args.arch.as_deref().unwrap_or(ptxas::DEFAULT_ARCH);
    let (ptx, origin) = match &args.ptx {
        Some(path) => (
            fs::read_to_string(path)
                .with_context(|| format!("cannot read the PTX {}", path.display()))?,
            format!("{} (--ptx)", path.display()),
        ),
        None => (
            adamant_runtime::PTX.to_string(),
            "embedded in this binary (built by runtime/build.rs; --write-ptx PATH writes it out)"
                .to_string(),
        ),
    };
    outln!(out, "PTX: {origin}");
    if let Some(path) = &args.write_ptx {
        write_ptx(path, &ptx)?;
        outln!(out, "wrote the audited PTX to {}", path.display());
    }

    let kernels = match (&args.kernels, &args.certificate) {
        (None, Some(path)) => certified_kernels(path, &ptx, &mut out)?,
        (Some(path), _) => {
            let json = fs::read_to_string(path)
                .with_context(|| format!("cannot read the kernel list {}", path.display()))?;
            let kernels = adamant_build::kernel_list::from_json(&json)
                .with_context(|| format!("in the kernel list {}", path.display()))?;
            outln!(
                out,
                "kernels: {} entries of set `{}` ({})",
                kernels.len(),
                kernels.first().map_or("", |k| k.set),
                path.display()
            );
            kernels
        }
        (None, None) => adamant_device::abi::kernels(),
    };
    if let Some(entry) = &args.explain {
        let explanation = audit::explain(&ptx, &kernels, entry)?;
        out.push('\n');
        out.push_str(&explanation.to_string());
        emit(&out);
        let fine = explanation.declared && explanation.violations.is_empty();
        return Ok(if fine {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    let report = audit::audit(&ptx, &kernels);
    let ptxas = match Ptxas::locate() {
        Ok(found) => match found.compile(&ptx, arch) {
            Ok(r) => PtxasOutcome::Report(found, Box::new(r)),
            Err(e) => PtxasOutcome::Failed(found, e),
        },
        Err(e) => PtxasOutcome::NotFound(e),
    };
    match &ptxas {
        PtxasOutcome::Report(p, _) | PtxasOutcome::Failed(p, _) => {
            let version = p.version().unwrap_or_default();
            outln!(
                out,
                "ptxas: {} ({}{}), -arch={arch}",
                p.path.display(),
                p.source,
                if version.is_empty() {
                    String::new()
                } else {
                    format!("; {version}")
                }
            );
        }
        PtxasOutcome::NotFound(e) => outln!(out, "ptxas: not found ({e})"),
    }
    out.push('\n');

    // The report's tables, printed in order. Further tables go here: build one more `Table`
    // from `report` (or from the PTX) and push it, e.g. the NaN-checker slots table.
    let mut tables = vec![entries_table(&report, &ptxas)];
    tables.extend(extra_tables(&report, &ptx));
    for table in &tables {
        out.push_str(&table.to_string());
        out.push('\n');
    }

    let mut failed = false;
    if report.is_ok() {
        outln!(
            out,
            "audit: OK, {} entries, {} optimizer entries with the clamp verified",
            report.entries.len(),
            report.optimizer_entries().count()
        );
    } else {
        failed = true;
        outln!(out, "audit: {} violation(s):", report.violations.len());
        for v in &report.violations {
            outln!(out, "  - {v}");
        }
    }
    match ptxas {
        PtxasOutcome::Report(_, r) => {
            for w in &r.warnings {
                outln!(out, "{w}");
            }
        }
        PtxasOutcome::Failed(_, e) => {
            failed = true;
            outln!(out, "ptxas: the PTX does not assemble: {e}");
        }
        PtxasOutcome::NotFound(e) if args.require_ptxas => {
            emit(&out);
            return Err(anyhow!(e).context("--require-ptxas: ptxas is required"));
        }
        PtxasOutcome::NotFound(_) => {}
    }
    emit(&out);
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Tables printed after the entries table.
fn extra_tables(_report: &AuditReport, _ptx: &str) -> Vec<Table> {
    vec![nan_check_slots_table()]
}

/// The NaN checker's slot table, from the same rows as `docs/audit.md`.
fn nan_check_slots_table() -> Table {
    use adamant::audit_doc;
    use adamant_rl::{FUSED_RANGE, SLOT_COUNT};
    let title = format!(
        "NaN-check slots ({SLOT_COUNT}, crates/adamant-rl/src/slot_table.rs; nan_check_kernel checks \
         any contiguous range in one launch, the seed's fused range is {}..={})",
        FUSED_RANGE.start(),
        FUSED_RANGE.end()
    );
    let mut table = Table::new(&title, &audit_doc::SLOT_TABLE_HEADERS);
    table.rows = audit_doc::slot_table_rows()
        .into_iter()
        .map(|row| row.into_iter().map(|cell| vec![cell]).collect())
        .collect();
    table
}

fn write_ptx(path: &Path, ptx: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    fs::write(path, ptx).with_context(|| format!("cannot write {}", path.display()))
}

/// The main table: one row per `.entry`.
fn entries_table(report: &AuditReport, ptxas: &PtxasOutcome) -> Table {
    let mut table = Table::new(
        "Entries",
        &[
            "entry",
            "kind",
            "parameters (name:type, bound last)",
            "writes (attributed)",
            "clamp verified",
            "registers",
            "stack",
            "spill st/ld",
        ],
    );
    for entry in &report.entries {
        let mut row = vec![
            vec![entry.name.clone()],
            vec![entry.kind.to_string()],
            wrap(&entry.params.iter().map(param_cell).collect::<Vec<_>>(), 48),
            writes_cell(entry),
            vec![clamp_cell(report, entry)],
        ];
        match ptxas {
            PtxasOutcome::Report(_, r) => match r.function(&entry.name) {
                Some(f) => {
                    let bytes = |b: Option<u64>| b.map_or("?".to_string(), |b| format!("{b} B"));
                    row.push(vec![f.registers.map_or("?".to_string(), |r| r.to_string())]);
                    row.push(vec![bytes(f.stack_frame_bytes)]);
                    row.push(vec![format!(
                        "{}/{}",
                        bytes(f.spill_store_bytes),
                        bytes(f.spill_load_bytes)
                    )]);
                }
                None => row.extend([vec!["not reported".into()], vec![], vec![]]),
            },
            PtxasOutcome::NotFound(_) => {
                row.extend([vec!["ptxas not found".into()], vec![], vec![]])
            }
            PtxasOutcome::Failed(..) => row.extend([vec!["ptxas failed".into()], vec![], vec![]]),
        }
        table.rows.push(row);
    }
    for v in &report.violations {
        if let audit::Violation::MissingEntry { kernel, kind } = v {
            table.rows.push(vec![
                vec![kernel.clone()],
                vec![format!("{kind:?}").to_lowercase()],
                vec!["MISSING from the PTX".into()],
                vec![],
                vec!["no".into()],
            ]);
        }
    }
    table
}

/// `name:type`, with `[param]` on the parameter buffer and `[bound]` on the clamp bound, and the
/// PTX type after `!=` where it differs from the declared one.
fn param_cell(p: &ParamAudit) -> String {
    let mut s = format!("{}:{}", p.name(), p.type_name());
    match p.role() {
        Some(ParamRole::ParamBuffer) => s.push_str("[param]"),
        Some(ParamRole::ClampBound) => s.push_str("[bound]"),
        _ => {}
    }
    if p.declared.is_some() && !p.type_matches() {
        s.push_str(&format!("!={}", p.ptx_type));
    }
    s
}

/// Where the entry's writes go: per written pointer parameter, the number of write instructions,
/// and the writes to shared or local memory.
fn writes_cell(entry: &EntryAudit) -> Vec<String> {
    let Some(w) = &entry.writes else {
        return vec!["-".into()];
    };
    let mut items: Vec<String> = w
        .per_param
        .iter()
        .map(|(p, n)| format!("{p}:{n}"))
        .collect();
    if w.private_writes > 0 {
        items.push(format!("shared/local:{}", w.private_writes));
    }
    if items.is_empty() {
        items.push("none".into());
    }
    wrap(&items, 24)
}

fn clamp_cell(report: &AuditReport, entry: &EntryAudit) -> String {
    match (entry.kind, entry.clamp_verified, entry.clamp) {
        (EntryKind::Optimizer, Some(true), Some(c)) => format!(
            "yes ({} stores, {} values, {} cases)",
            c.param_stores, c.stored_values, c.cases_evaluated
        ),
        (EntryKind::Optimizer, _, _) => format!(
            "NO ({} violation(s))",
            report.violations_of(&entry.name).count()
        ),
        (EntryKind::Other, _, _) if report.violations_of(&entry.name).next().is_none() => {
            "n/a (writes no parameter)".to_string()
        }
        (EntryKind::Other, _, _) => format!(
            "n/a, {} violation(s)",
            report.violations_of(&entry.name).count()
        ),
        (EntryKind::Undeclared, _, _) => "NO (undeclared)".to_string(),
    }
}

/// Joins `items` with spaces into lines of at most `width` characters (longer items get a line
/// of their own).
fn wrap(items: &[String], width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for item in items {
        match lines.last_mut() {
            Some(line) if line.len() + 1 + item.len() <= width => {
                line.push(' ');
                line.push_str(item);
            }
            _ => lines.push(item.clone()),
        }
    }
    lines
}

/// A titled table whose cells may span several lines.
struct Table {
    title: String,
    headers: Vec<String>,
    /// Each cell is its lines; a row may have fewer cells than headers.
    rows: Vec<Vec<Vec<String>>>,
}

impl Table {
    fn new(title: &str, headers: &[&str]) -> Table {
        Table {
            title: title.to_string(),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let columns = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(columns) {
                for line in cell {
                    widths[i] = widths[i].max(line.chars().count());
                }
            }
        }
        let print_line = |f: &mut std::fmt::Formatter<'_>, cells: &[&str]| {
            let mut out = String::new();
            for (i, w) in widths.iter().enumerate() {
                let cell = cells.get(i).copied().unwrap_or("");
                if i > 0 {
                    out.push_str("  ");
                }
                out.push_str(&format!("{cell:<w$}"));
            }
            writeln!(f, "{}", out.trim_end())
        };
        writeln!(f, "{}", self.title)?;
        let headers: Vec<&str> = self.headers.iter().map(String::as_str).collect();
        print_line(f, &headers)?;
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        print_line(f, &rule.iter().map(String::as_str).collect::<Vec<_>>())?;
        for row in &self.rows {
            let height = row.iter().map(Vec::len).max().unwrap_or(0).max(1);
            for l in 0..height {
                let cells: Vec<&str> = (0..columns)
                    .map(|i| row.get(i).and_then(|c| c.get(l)).map_or("", String::as_str))
                    .collect();
                print_line(f, &cells)?;
            }
        }
        Ok(())
    }
}
