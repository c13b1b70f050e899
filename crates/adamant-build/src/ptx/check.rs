//! What a PTX module must be for adamant to ship it: only the entries the kernel descriptors
//! declare, each once, no functions of any kind, no inline assembly. The PTX build
//! ([`crate::KernelCrate`]) refuses a module with any [`ModuleProblem`] and the audit reports them
//! too.
use super::module::parse;
use super::variable::Linkage;

/// The text LLVM's NVPTX backend writes around every `asm!` block (`// begin inline asm` and
/// `// end inline asm`, found by compiling `asm!` with the pinned nightly). `global_asm!` text
/// is copied into the module verbatim with no marker; what it could add that matters (an
/// entry, a `.func`) is caught by the other checks.
pub const INLINE_ASM_MARKER: &str = "inline asm";

/// One reason a PTX module cannot be shipped, naming the thing and its line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModuleProblem {
    /// An unterminated comment or string.
    Lexical { line: usize, message: String },
    /// A line with LLVM's inline-assembly marker, comments included.
    InlineAsm { line: usize, text: String },
    /// A `.extern .func` declaration.
    ExternFunction { name: String, line: usize },
    /// A `.func` definition or declaration (not `.extern`).
    Function {
        name: String,
        line: usize,
        defined: bool,
    },
    /// A `.alias` of a function.
    Alias {
        name: String,
        aliasee: String,
        line: usize,
    },
    /// An `.entry` whose name, parameter list or body is cut short.
    MalformedEntry { name: String, line: usize },
    /// An `.entry` defined more than once.
    DuplicateEntry { name: String, lines: Vec<usize> },
    /// An `.entry` that no kernel descriptor declares.
    UndeclaredEntry { name: String, line: usize },
    /// Declared kernels with no `.entry` (and the entries the module does have).
    MissingEntries {
        missing: Vec<String>,
        present: Vec<String>,
    },
}

impl std::fmt::Display for ModuleProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModuleProblem::Lexical { line, message } => write!(
                f,
                "line {line}: {message}; ptxas rejects the module, and nothing after it can be \
                 read"
            ),
            ModuleProblem::InlineAsm { line, text } => write!(
                f,
                "line {line}: `{text}`: the module contains inline assembly (`asm!` in a \
                 kernel crate or the device SDK). Its instructions come from no kernel descriptor and bypass the \
                 macro's generated loads, stores and clamp: remove it"
            ),
            ModuleProblem::ExternFunction { name, line } => write!(
                f,
                "line {line}: the PTX declares the external function `{name}`, which the driver \
                 cannot resolve. Device code must not call anything that is not inlined (often \
                 a panic path: use non-panicking operations in device code)"
            ),
            ModuleProblem::Function {
                name,
                line,
                defined,
            } => write!(
                f,
                "line {line}: the PTX {} the function `.func {name}`. An adamant module inlines \
                 everything into its entries: a callee is code the audit does not see (it \
                 proves entry bodies only). Mark the Rust function `#[inline(always)]` or \
                 remove the call",
                if *defined { "defines" } else { "declares" }
            ),
            ModuleProblem::Alias {
                name,
                aliasee,
                line,
            } => write!(
                f,
                "line {line}: `.alias {name}, {aliasee}` gives a function a second name; an \
                 adamant module has no functions to alias"
            ),
            ModuleProblem::MalformedEntry { name, line } => write!(
                f,
                "line {line}: the `.entry` {} is cut short (no name, no closing `)` or no \
                 closing `}}`)",
                if name.is_empty() { "(unnamed)" } else { name }
            ),
            ModuleProblem::DuplicateEntry { name, lines } => write!(
                f,
                "the entry `{name}` is defined {} times (lines {})",
                lines.len(),
                join(lines.iter().map(usize::to_string))
            ),
            ModuleProblem::UndeclaredEntry { name, line } => write!(
                f,
                "line {line}: the entry `{name}` has no kernel descriptor: every entry must \
                 come from #[optimizer_kernel] or #[kernel_entry] (global_asm! or a hand-written \
                 `extern \"gpu-kernel\"` fn is not audited for what it writes)"
            ),
            ModuleProblem::MissingEntries { missing, present } => write!(
                f,
                "the PTX lacks the kernel entries {} (it has: {})",
                join(missing.iter().cloned()),
                join(present.iter().cloned())
            ),
        }
    }
}

fn join(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(", ")
}

/// Names of functions the module declares `.extern` (the driver must resolve them at load time,
/// and for adamant's self-contained module it cannot: any such name is a build error).
pub fn extern_functions(ptx: &str) -> Vec<String> {
    parse(ptx)
        .functions
        .into_iter()
        .filter(|f| f.linkage == Some(Linkage::Extern))
        .map(|f| f.name)
        .collect()
}

/// The 1-based lines holding LLVM's inline-assembly marker, and their text, searched in the raw
/// text (comments and strings included) so that no lexing can hide one.
pub fn inline_asm_markers(ptx: &str) -> Vec<(usize, String)> {
    ptx.lines()
        .enumerate()
        .filter(|(_, l)| l.to_ascii_lowercase().contains(INLINE_ASM_MARKER))
        .map(|(i, l)| (i + 1, l.trim().to_string()))
        .collect()
}

/// Every problem of a module whose entries must be exactly `declared` (the kernel descriptors'
/// names), in this order: lexical errors, inline assembly, functions, malformed entries,
/// duplicates, undeclared entries, missing entries.
pub fn module_problems(ptx: &str, declared: &[&str]) -> Vec<ModuleProblem> {
    let module = parse(ptx);
    let mut out: Vec<ModuleProblem> = module
        .lex_errors
        .iter()
        .map(|e| ModuleProblem::Lexical {
            line: e.line,
            message: e.message.clone(),
        })
        .collect();
    out.extend(
        inline_asm_markers(ptx)
            .into_iter()
            .map(|(line, text)| ModuleProblem::InlineAsm { line, text }),
    );
    for f in &module.functions {
        out.push(if f.linkage == Some(Linkage::Extern) {
            ModuleProblem::ExternFunction {
                name: f.name.clone(),
                line: f.line,
            }
        } else {
            ModuleProblem::Function {
                name: f.name.clone(),
                line: f.line,
                defined: f.defined,
            }
        });
    }
    out.extend(module.aliases.iter().map(|a| ModuleProblem::Alias {
        name: a.name.clone(),
        aliasee: a.aliasee.clone(),
        line: a.line,
    }));
    let mut names: Vec<&str> = Vec::new();
    for e in &module.entries {
        if !e.complete {
            out.push(ModuleProblem::MalformedEntry {
                name: e.name.clone(),
                line: e.line,
            });
        }
        if e.name.is_empty() || names.contains(&e.name.as_str()) {
            continue;
        }
        names.push(&e.name);
        let lines: Vec<usize> = module
            .entries
            .iter()
            .filter(|x| x.name == e.name)
            .map(|x| x.line)
            .collect();
        if lines.len() > 1 {
            out.push(ModuleProblem::DuplicateEntry {
                name: e.name.clone(),
                lines,
            });
        }
        if !declared.contains(&e.name.as_str()) {
            out.push(ModuleProblem::UndeclaredEntry {
                name: e.name.clone(),
                line: e.line,
            });
        }
    }
    let missing: Vec<String> = declared
        .iter()
        .filter(|d| !names.contains(d))
        .map(|d| d.to_string())
        .collect();
    if !missing.is_empty() {
        out.push(ModuleProblem::MissingEntries {
            missing,
            present: names.iter().map(|n| n.to_string()).collect(),
        });
    }
    out
}

/// [`module_problems`] as a result: `Err` with every problem, or `Ok`.
pub fn check_module(ptx: &str, declared: &[&str]) -> Result<(), Vec<ModuleProblem>> {
    let problems = module_problems(ptx, declared);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}
