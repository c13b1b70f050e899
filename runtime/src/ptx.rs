//! A small reader for the PTX that rustc's NVPTX backend emits: entries, their parameters and
//! bodies, the instructions of a body, and external function declarations. Shared by `build.rs`
//! (through `#[path]`) and the audit, so it depends on `std` only.
//!
//! The reader never panics: text it does not understand is skipped (a directive), kept as an
//! operand it cannot classify ([`Operand::Symbol`]), or ends an entry early.

/// One `.param` of an entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxParam {
    /// PTX type, like `.u64` or `.f32`.
    pub ty: String,
    pub name: String,
}

/// One `.entry` with its parameter list and body lines (between the braces).
#[derive(Clone, Debug)]
pub struct PtxEntry {
    pub name: String,
    pub params: Vec<PtxParam>,
    pub body: Vec<String>,
    /// 1-based line of the `.entry` declaration in the module.
    pub line: usize,
    /// 1-based line of `body[0]` in the module.
    pub body_line: usize,
    /// Whether the parameter list's `)` and the body's closing `}` were found (false: the
    /// module is truncated or malformed there).
    pub complete: bool,
}

impl PtxEntry {
    /// The body's instructions (see [`instructions`]), with module line numbers.
    pub fn instructions(&self) -> Vec<Instruction> {
        instructions(&self.body, self.body_line)
    }

    /// Index of the parameter called `name`.
    pub fn param_index(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|p| p.name == name)
    }
}

/// `line` without a trailing `//` comment.
fn strip_line_comment(line: &str) -> &str {
    match line.find("//") {
        Some(i) => &line[..i],
        None => line,
    }
}

/// Every `.entry` in `ptx`, in file order.
pub fn entries(ptx: &str) -> Vec<PtxEntry> {
    let lines: Vec<&str> = ptx.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let code = strip_line_comment(lines[i]);
        let Some(name) = entry_name(code) else {
            i += 1;
            continue;
        };
        let line = i + 1;
        // The parameter list: from the `(` after the name to its `)`, over as many lines as
        // it takes.
        let mut header = String::new();
        let after_entry = code.split(".entry").nth(1).unwrap_or("");
        header.push_str(after_entry);
        let mut j = i;
        while !header.contains(')') && !header.contains('{') && j + 1 < lines.len() {
            j += 1;
            header.push('\n');
            header.push_str(strip_line_comment(lines[j]));
        }
        let (params, header_complete) = match (header.find('('), header.find(')')) {
            (Some(open), Some(close)) if open < close => (
                header[open + 1..close]
                    .split(',')
                    .filter_map(parse_param)
                    .collect(),
                true,
            ),
            _ => (Vec::new(), false),
        };
        // What follows the `)`: the body's `{`, possibly after performance directives
        // (`.maxntid 256, 1, 1`), possibly on the same line.
        let rest_of_header = header.split_once(')').map(|(_, r)| r).unwrap_or("");
        let (body, body_line, next, body_complete) = match rest_of_header.find('{') {
            Some(pos) => {
                let tail = &rest_of_header[pos + 1..];
                let tail = tail.rsplit('\n').next().unwrap_or(tail);
                body_from(&lines, j, tail)
            }
            None => {
                // Look for the line with the `{` (stop at another `.entry`: malformed input).
                let mut k = j + 1;
                let mut found = None;
                while k < lines.len() {
                    let code = strip_line_comment(lines[k]);
                    if code.contains(".entry") {
                        break;
                    }
                    if let Some(pos) = code.find('{') {
                        found = Some((k, &code[pos + 1..]));
                        break;
                    }
                    k += 1;
                }
                match found {
                    Some((k, tail)) => body_from(&lines, k, tail),
                    None => (Vec::new(), k + 1, k, false),
                }
            }
        };
        out.push(PtxEntry {
            name,
            params,
            body,
            line,
            body_line,
            complete: header_complete && body_complete,
        });
        i = next.max(i + 1);
    }
    out
}

/// The body that starts after the `{` on line index `open` (with `tail` the text after that
/// brace): lines up to the matching `}`. Returns the body, the 1-based line of its first line,
/// the index of the line after the closing brace and whether that brace was found.
fn body_from(lines: &[&str], open: usize, tail: &str) -> (Vec<String>, usize, usize, bool) {
    let mut body = Vec::new();
    let mut depth: i64 = 1;
    let mut body_line = open + 2;
    if !tail.trim().is_empty() {
        body_line = open + 1;
        if push_body_line(tail, &mut body, &mut depth) {
            return (body, body_line, open + 1, true);
        }
    }
    let mut k = open + 1;
    while k < lines.len() {
        if depth == 1 && strip_line_comment(lines[k]).contains(".entry") {
            // A new entry before this one closed: malformed, stop here.
            return (body, body_line, k, false);
        }
        if push_body_line(lines[k], &mut body, &mut depth) {
            return (body, body_line, k + 1, true);
        }
        k += 1;
    }
    (body, body_line, k, false)
}

/// Adds `text` to `body`, tracking brace depth; returns true when the body's closing brace is on
/// this line (then only what precedes it is kept).
fn push_body_line(text: &str, body: &mut Vec<String>, depth: &mut i64) -> bool {
    let code = strip_line_comment(text);
    for (pos, c) in code.char_indices() {
        match c {
            '{' => *depth += 1,
            '}' => {
                *depth -= 1;
                if *depth == 0 {
                    let before = &code[..pos];
                    if !before.trim().is_empty() {
                        body.push(before.to_string());
                    }
                    return true;
                }
            }
            _ => {}
        }
    }
    body.push(text.to_string());
    false
}

fn entry_name(line: &str) -> Option<String> {
    let rest = line.split(".entry").nth(1)?;
    // `.entry` must be a whole word (not `.entryfoo`).
    if !rest.starts_with(|c: char| c.is_whitespace()) {
        return None;
    }
    let rest = rest.trim_start();
    let end = rest
        .find(|c: char| c == '(' || c.is_whitespace())
        .unwrap_or(rest.len());
    let name = rest[..end].trim();
    (!name.is_empty()).then(|| name.to_string())
}

fn parse_param(decl: &str) -> Option<PtxParam> {
    let decl = decl.trim().trim_end_matches(',');
    let mut words = decl.split_whitespace();
    if words.next()? != ".param" {
        return None;
    }
    let ty = words.next()?.to_string();
    // `.param .u64 .ptr .align 1 name`, `.param .align 16 .b8 name[16]`: the name is last.
    let name = words.last()?;
    let name = name.split('[').next().unwrap_or(name).to_string();
    Some(PtxParam { ty, name })
}

/// Names of functions the module declares `.extern` (the driver must resolve them at load time,
/// and for adamant's self-contained module it cannot: any such name is a build error).
pub fn extern_functions(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter(|l| l.contains(".extern") && l.contains(".func"))
        .map(|l| {
            let after = l.split(".func").nth(1).unwrap_or("").trim();
            // `.extern .func (.param .b32 ret) name(` or `.extern .func name(`
            let after = match after.strip_prefix('(') {
                Some(rest) => rest.split_once(')').map(|(_, r)| r.trim()).unwrap_or(rest),
                None => after,
            };
            after.split('(').next().unwrap_or(after).trim().to_string()
        })
        .collect()
}

/// One operand of an instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operand {
    /// A register (`%r14`, `%rd1`, `%p3`) or special register (`%tid.x`). A `!` negation of a
    /// predicate operand is dropped.
    Register(String),
    /// A vector or grouped operand: `{%r1, %r2, %r3, %r4}`, `%p1|%p2`, `(param0, param1)`.
    Vector(Vec<Operand>),
    /// A memory operand `[base+offset]`; `base` is a register or a symbol (a parameter name, a
    /// global variable).
    Address { base: Box<Operand>, offset: i64 },
    /// A numeric literal (`0`, `-12`, `0f3F800000`, `0x10`).
    Immediate(String),
    /// Anything else: a label, a function or variable name, `_`.
    Symbol(String),
}

impl Operand {
    /// The registers this operand names, including inside vectors and addresses.
    pub fn registers(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_registers(&mut out);
        out
    }

    fn collect_registers<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Operand::Register(r) => out.push(r),
            Operand::Vector(items) => items.iter().for_each(|o| o.collect_registers(out)),
            Operand::Address { base, .. } => base.collect_registers(out),
            Operand::Immediate(_) | Operand::Symbol(_) => {}
        }
    }

    /// The symbols this operand names (address bases included).
    pub fn symbols(&self) -> Vec<&str> {
        match self {
            Operand::Symbol(s) => vec![s.as_str()],
            Operand::Vector(items) => items.iter().flat_map(|o| o.symbols()).collect(),
            Operand::Address { base, .. } => base.symbols(),
            Operand::Register(_) | Operand::Immediate(_) => Vec::new(),
        }
    }

    /// The vector's elements, or this operand alone.
    pub fn elements(&self) -> Vec<&Operand> {
        match self {
            Operand::Vector(items) => items.iter().collect(),
            other => vec![other],
        }
    }
}

impl std::fmt::Display for Operand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Operand::Register(s) | Operand::Immediate(s) | Operand::Symbol(s) => f.write_str(s),
            Operand::Vector(items) => {
                f.write_str("{")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("}")
            }
            Operand::Address { base, offset } => match offset {
                0 => write!(f, "[{base}]"),
                o => write!(f, "[{base}+{o}]"),
            },
        }
    }
}

/// One instruction of an entry body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instruction {
    /// 1-based line in the module.
    pub line: usize,
    /// The guard predicate register of `@%p1 bra ...` / `@!%p1 ...`, without `@` and `!`.
    pub guard: Option<String>,
    /// The full opcode with its modifiers: `st.global.v4.b32`.
    pub opcode: String,
    pub operands: Vec<Operand>,
    /// The statement as written (whitespace collapsed, without the `;`).
    pub text: String,
}

impl Instruction {
    /// The opcode up to its first `.`: `st` for `st.global.v4.b32`.
    pub fn op(&self) -> &str {
        self.opcode.split('.').next().unwrap_or("")
    }

    /// Whether the opcode has the modifier `m` (without the dot): `has_modifier("param")`.
    pub fn has_modifier(&self, m: &str) -> bool {
        self.opcode.split('.').skip(1).any(|x| x == m)
    }
}

/// The instructions of an entry body (`first_line` is the module line of `body[0]`). Directives
/// (`.reg`, `.local`, `.pragma`...), labels, scope braces and comments are skipped.
pub fn instructions(body: &[String], first_line: usize) -> Vec<Instruction> {
    // Strip comments first (block comments may span lines), keeping line breaks.
    let mut text = String::new();
    let mut in_block = false;
    for line in body {
        let mut rest = line.as_str();
        loop {
            if in_block {
                match rest.find("*/") {
                    Some(end) => {
                        rest = &rest[end + 2..];
                        in_block = false;
                    }
                    None => break,
                }
            } else {
                let line_comment = rest.find("//");
                let block = rest.find("/*");
                match (line_comment, block) {
                    (Some(l), Some(b)) if b < l => {
                        text.push_str(&rest[..b]);
                        text.push(' ');
                        rest = &rest[b + 2..];
                        in_block = true;
                    }
                    (None, Some(b)) => {
                        text.push_str(&rest[..b]);
                        text.push(' ');
                        rest = &rest[b + 2..];
                        in_block = true;
                    }
                    (Some(l), _) => {
                        text.push_str(&rest[..l]);
                        break;
                    }
                    (None, None) => {
                        text.push_str(rest);
                        break;
                    }
                }
            }
        }
        text.push('\n');
    }

    let mut out = Vec::new();
    let mut line = first_line;
    for statement in text.split(';') {
        let mut stmt = statement;
        // Leading whitespace, scope braces and labels, counting the lines they span.
        loop {
            let trimmed = stmt.trim_start();
            line += stmt[..stmt.len() - trimmed.len()].matches('\n').count();
            stmt = trimmed;
            if let Some(rest) = stmt.strip_prefix('{').or_else(|| stmt.strip_prefix('}')) {
                stmt = rest;
                continue;
            }
            if let Some(rest) = strip_label(stmt) {
                stmt = rest;
                continue;
            }
            break;
        }
        let newlines = stmt.matches('\n').count();
        if !stmt.is_empty() && !stmt.starts_with('.') {
            if let Some(instruction) = parse_instruction(stmt, line) {
                out.push(instruction);
            }
        }
        line += newlines;
    }
    out
}

/// `stmt` without a leading `label:` (not `::`, which appears in qualifiers).
fn strip_label(stmt: &str) -> Option<&str> {
    let end = stmt
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '.'))
        .unwrap_or(stmt.len());
    if end == 0 || stmt.starts_with('.') {
        return None;
    }
    let rest = &stmt[end..];
    let rest = rest.strip_prefix(':')?;
    if rest.starts_with(':') {
        return None;
    }
    Some(rest)
}

fn parse_instruction(stmt: &str, line: usize) -> Option<Instruction> {
    let text = stmt.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut rest = text.as_str();
    let mut guard = None;
    if let Some(g) = rest.strip_prefix('@') {
        let end = g.find(char::is_whitespace).unwrap_or(g.len());
        guard = Some(g[..end].trim_start_matches('!').to_string());
        rest = g[end..].trim_start();
    }
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let opcode = rest[..end].to_string();
    if opcode.is_empty() {
        return None;
    }
    let operands = split_top_level(&rest[end..], ',')
        .into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(parse_operand)
        .collect();
    Some(Instruction {
        line,
        guard,
        opcode,
        operands,
        text,
    })
}

/// Splits `s` at `sep` outside brackets, braces and parentheses.
fn split_top_level(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth: i32 = 0;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' | '{' | '(' => depth += 1,
            ']' | '}' | ')' => depth -= 1,
            c if c == sep && depth <= 0 => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_operand(s: &str) -> Operand {
    let s = s.trim();
    if let Some(inner) = s.strip_prefix('[') {
        let inner = inner.strip_suffix(']').unwrap_or(inner).trim();
        // `%rd26+-12`, `%rd1+8`, `name`, `name+4`, `%rd1-4`.
        let split = inner
            .char_indices()
            .skip(1)
            .find(|&(_, c)| c == '+' || c == '-')
            .map(|(i, _)| i);
        let (base, offset) = match split {
            Some(i) => {
                let off = inner[i..].replace("+-", "-").replace('+', "");
                (&inner[..i], parse_int(off.trim()).unwrap_or(0))
            }
            None => (inner, 0),
        };
        return Operand::Address {
            base: Box::new(parse_operand(base)),
            offset,
        };
    }
    if let Some(inner) = s.strip_prefix('{').or_else(|| s.strip_prefix('(')) {
        let inner = inner
            .strip_suffix('}')
            .or_else(|| inner.strip_suffix(')'))
            .unwrap_or(inner);
        return Operand::Vector(
            split_top_level(inner, ',')
                .into_iter()
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(parse_operand)
                .collect(),
        );
    }
    if s.contains('|') {
        return Operand::Vector(
            s.split('|')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(parse_operand)
                .collect(),
        );
    }
    let bare = s.trim_start_matches('!');
    if bare.starts_with('%') {
        return Operand::Register(bare.to_string());
    }
    if s.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+') {
        return Operand::Immediate(s.to_string());
    }
    Operand::Symbol(s.to_string())
}

fn parse_int(s: &str) -> Option<i64> {
    let (negative, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s),
    };
    let value = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => i64::from_str_radix(hex, 16).ok()?,
        None => digits.parse::<i64>().ok()?,
    };
    Some(if negative { -value } else { value })
}

/// Why a PTX module cannot be shipped: what `build.rs` refuses (and reports) after compiling
/// kernels-rs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModuleProblem {
    /// `.extern .func` declarations: the driver would fail to load the module.
    ExternFunctions(Vec<String>),
    /// Declared kernels with no `.entry` (and the entries the module does have).
    MissingEntries {
        missing: Vec<String>,
        present: Vec<String>,
    },
}

impl std::fmt::Display for ModuleProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModuleProblem::ExternFunctions(names) => write!(
                f,
                "the PTX declares external functions the driver cannot resolve: {}. Device \
                 code must not call anything that is not inlined or linked in (often a panic \
                 path: use non-panicking operations in kernels-rs).",
                names.join(", ")
            ),
            ModuleProblem::MissingEntries { missing, present } => write!(
                f,
                "the PTX lacks the kernel entries {} (it has: {}).",
                missing.join(", "),
                present.join(", ")
            ),
        }
    }
}

/// Checks a freshly built module: no external functions, and an entry for every `expected`
/// kernel name.
pub fn check_module(ptx: &str, expected: &[&str]) -> Result<(), ModuleProblem> {
    let externs = extern_functions(ptx);
    if !externs.is_empty() {
        return Err(ModuleProblem::ExternFunctions(externs));
    }
    let present: Vec<String> = entries(ptx).into_iter().map(|e| e.name).collect();
    let missing: Vec<String> = expected
        .iter()
        .filter(|name| !present.iter().any(|e| e == *name))
        .map(|name| name.to_string())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(ModuleProblem::MissingEntries { missing, present })
    }
}
