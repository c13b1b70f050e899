//! The module level of a PTX text: `.entry` and `.func` definitions and declarations with their
//! linkage, parameters, performance directives and bodies, and module-scope variables. Built on
//! the tokens of [`super::lexer`], so comments and strings hide nothing and line breaks split
//! nothing.
use super::instruction::{instructions, statements, Instruction};
use super::lexer::{tokenize, LexError, Token, TokenKind};
use super::operand::split_top_level;
use super::variable::{declaration, Linkage, PtxVariable, StateSpace};

/// One `.param` of an entry (or one parameter of a `.func`, `.param` or `.reg`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxParam {
    /// PTX type, like `.u64` or `.f32` (`.align N` and `.ptr` are skipped: `.param .align 16
    /// .b8 x[16]` has type `.b8`).
    pub ty: String,
    pub name: String,
}

/// One `.entry` definition with its parameter list and body lines (between the braces).
#[derive(Clone, Debug)]
pub struct PtxEntry {
    pub name: String,
    pub params: Vec<PtxParam>,
    pub body: Vec<String>,
    /// 1-based line of the `.entry` directive in the module.
    pub line: usize,
    /// 1-based line of `body[0]` in the module.
    pub body_line: usize,
    /// Whether the name, the parameter list's `)` and the body's closing `}` were found
    /// (false: the module is truncated or malformed there).
    pub complete: bool,
    /// `.visible`, `.weak`..., as written before `.entry`.
    pub linkage: Option<Linkage>,
    /// The performance directives between the parameters and the body, as written
    /// (`.maxntid 256, 1, 1`).
    pub directives: Vec<String>,
    /// The variables declared in the body (`.local`, `.shared`, and `.param` call slots), at
    /// any scope depth.
    pub variables: Vec<PtxVariable>,
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

    /// The body variable called `name`, if the body declares one.
    pub fn variable(&self, name: &str) -> Option<&PtxVariable> {
        self.variables.iter().find(|v| v.name == name)
    }
}

/// One `.func`: a definition (with a body) or a declaration (a prototype, `.extern` or not).
#[derive(Clone, Debug)]
pub struct PtxFunction {
    /// Empty when `.func` is not followed by a name (then `complete` is false).
    pub name: String,
    pub linkage: Option<Linkage>,
    /// The return parameters: `.func (.param .b32 rv) f(...)`.
    pub returns: Vec<PtxParam>,
    pub params: Vec<PtxParam>,
    /// Whether a body follows (a definition) rather than `;` (a declaration).
    pub defined: bool,
    pub body: Vec<String>,
    /// 1-based line of the `.func` directive.
    pub line: usize,
    pub body_line: usize,
    pub complete: bool,
    /// `.noreturn`, `.pragma ...` and other directives between the parameters and the body.
    pub directives: Vec<String>,
    pub variables: Vec<PtxVariable>,
}

impl PtxFunction {
    pub fn instructions(&self) -> Vec<Instruction> {
        instructions(&self.body, self.body_line)
    }
}

/// `.alias name, aliasee;`: a second name for a function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxAlias {
    pub name: String,
    pub aliasee: String,
    pub line: usize,
}

/// Everything the reader finds in a module, in file order.
#[derive(Clone, Debug, Default)]
pub struct PtxModule {
    /// `.entry` definitions, and malformed `.entry` headers (incomplete). Declarations of an
    /// entry without a body are not entries (ptxas compiles only the definition).
    pub entries: Vec<PtxEntry>,
    /// Every `.func`, defined or declared.
    pub functions: Vec<PtxFunction>,
    /// Module-scope variables.
    pub variables: Vec<PtxVariable>,
    pub aliases: Vec<PtxAlias>,
    /// Unterminated comments and strings (ptxas rejects such a module).
    pub lex_errors: Vec<LexError>,
}

/// Reads a whole module. Never panics, whatever the text.
pub fn parse(ptx: &str) -> PtxModule {
    let lexed = tokenize(ptx);
    let tokens = &lexed.tokens;
    let mut module = PtxModule {
        lex_errors: lexed.errors.clone(),
        ..PtxModule::default()
    };
    let mut i = 0;
    let mut linkage = None;
    while let Some(t) = tokens.get(i) {
        if t.kind == TokenKind::Directive {
            if let Some(l) = Linkage::from_directive(t.text) {
                linkage = Some(l);
                i += 1;
                continue;
            }
            if t.text == ".entry" || t.text == ".func" {
                let (f, next) = function(ptx, tokens, i, linkage);
                i = next.max(i + 1);
                linkage = None;
                if t.text == ".func" {
                    module.functions.push(f);
                } else if f.defined || !f.complete {
                    module.entries.push(entry(f));
                }
                continue;
            }
            if StateSpace::from_directive(t.text).is_some() || t.text == ".alias" {
                let end = statement_end(tokens, i);
                let stmt = &tokens[i..end];
                if t.text == ".alias" {
                    if let [_, a, comma, b, ..] = stmt {
                        if comma.is_punct(',') {
                            module.aliases.push(PtxAlias {
                                name: a.text.to_string(),
                                aliasee: b.text.to_string(),
                                line: t.line,
                            });
                        }
                    }
                } else {
                    let mut vars = declaration(stmt);
                    if let Some(l) = linkage {
                        vars.iter_mut().for_each(|v| v.linkage = Some(l));
                    }
                    module.variables.extend(vars);
                }
                i = end + 1;
                linkage = None;
                continue;
            }
        }
        if t.is_punct('{') {
            // A block outside any function (a `.section` of debug data): skip it whole. One
            // that holds an `.entry` or `.func`, or never closes, is skipped by its brace only,
            // so that nothing after it is hidden.
            i = matching_brace(tokens, i).map_or(i + 1, |c| c + 1);
        } else {
            i += 1;
        }
        linkage = None;
    }
    module
}

/// Every `.entry` definition in `ptx`, in file order (malformed ones included, incomplete).
pub fn entries(ptx: &str) -> Vec<PtxEntry> {
    parse(ptx).entries
}

/// Every `.func` in `ptx`, definitions and declarations, in file order.
pub fn functions(ptx: &str) -> Vec<PtxFunction> {
    parse(ptx).functions
}

/// The module-scope variables of `ptx`, in file order.
pub fn variables(ptx: &str) -> Vec<PtxVariable> {
    parse(ptx).variables
}

fn entry(f: PtxFunction) -> PtxEntry {
    PtxEntry {
        name: f.name,
        params: f.params,
        body: f.body,
        line: f.line,
        body_line: f.body_line,
        complete: f.complete,
        linkage: f.linkage,
        directives: f.directives,
        variables: f.variables,
    }
}

/// Index of the `;` that ends the statement starting at `i` (outside braces, so an initializer
/// `= {1, 2}` stays in it), or the end of the tokens.
fn statement_end(tokens: &[Token<'_>], i: usize) -> usize {
    let mut depth: i64 = 0;
    let mut k = i;
    while let Some(t) = tokens.get(k) {
        if t.is_punct(';') && depth <= 0 {
            return k;
        }
        if t.is_punct('{') {
            depth += 1;
        } else if t.is_punct('}') {
            depth -= 1;
        }
        k += 1;
    }
    tokens.len()
}

/// Index of the `}` matching the `{` at `open`. A `.entry` or `.func` inside (a body whose
/// closing brace is missing) ends the search: None.
fn matching_brace(tokens: &[Token<'_>], open: usize) -> Option<usize> {
    let mut depth: i64 = 0;
    for (k, t) in tokens.iter().enumerate().skip(open) {
        if t.is_punct('{') {
            depth += 1;
        } else if t.is_punct('}') {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        } else if t.is_directive(".entry") || t.is_directive(".func") {
            return None;
        }
    }
    None
}

/// Index of the `)` matching the `(` at `open`, stopping (None) at a `{`, `;` or `.entry`.
fn matching_paren(tokens: &[Token<'_>], open: usize) -> Option<usize> {
    let mut depth: i64 = 0;
    for (k, t) in tokens.iter().enumerate().skip(open) {
        if t.is_punct('(') {
            depth += 1;
        } else if t.is_punct(')') {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        } else if t.is_punct('{')
            || t.is_punct(';')
            || t.is_directive(".entry")
            || t.is_directive(".func")
        {
            return None;
        }
    }
    None
}

/// Parses the `.entry` or `.func` whose directive is `tokens[at]`; returns it and the index of
/// the first token after it.
fn function(
    ptx: &str,
    tokens: &[Token<'_>],
    at: usize,
    linkage: Option<Linkage>,
) -> (PtxFunction, usize) {
    let line = tokens.get(at).map_or(1, |t| t.line);
    let mut f = PtxFunction {
        name: String::new(),
        linkage,
        returns: Vec::new(),
        params: Vec::new(),
        defined: false,
        body: Vec::new(),
        line,
        body_line: line,
        complete: false,
        directives: Vec::new(),
        variables: Vec::new(),
    };
    let mut i = at + 1;
    let is_param_list = |i: usize| tokens.get(i).is_some_and(|t| t.is_punct('('));
    // `.func (.param .b32 rv) name(...)`: the return list comes first.
    if is_param_list(i) && tokens.get(at).is_some_and(|t| t.is_directive(".func")) {
        let Some(close) = matching_paren(tokens, i) else {
            return (f, i);
        };
        f.returns = param_list(&tokens[i + 1..close]);
        i = close + 1;
    }
    match tokens.get(i) {
        Some(t) if t.kind == TokenKind::Ident => f.name = t.text.to_string(),
        _ => return (f, i),
    }
    i += 1;
    if is_param_list(i) {
        let Some(close) = matching_paren(tokens, i) else {
            return (f, i + 1);
        };
        f.params = param_list(&tokens[i + 1..close]);
        i = close + 1;
    }
    // Performance directives up to the body's `{` or the declaration's `;`.
    let mut directive_start = None;
    loop {
        let Some(t) = tokens.get(i) else {
            return (f, i);
        };
        let ends_directive = t.kind == TokenKind::Directive || t.is_punct('{') || t.is_punct(';');
        if let (Some(s), true) = (directive_start, ends_directive) {
            f.directives.push(super::lexer::join(&tokens[s..i]));
            directive_start = None;
        }
        if t.is_directive(".entry") || t.is_directive(".func") || t.is_punct('}') {
            return (f, i);
        }
        if t.is_directive(".pragma") {
            // `.pragma "...";` is a statement of its own, `;` included. One with no `;` ends
            // at the body's `{` (or whatever ends the header), never past it.
            let end = tokens[i..]
                .iter()
                .position(|t| {
                    t.is_punct(';')
                        || t.is_punct('{')
                        || t.is_punct('}')
                        || t.is_directive(".entry")
                        || t.is_directive(".func")
                })
                .map_or(tokens.len(), |p| p + i);
            f.directives.push(super::lexer::join(&tokens[i..end]));
            i = if tokens.get(end).is_some_and(|t| t.is_punct(';')) {
                end + 1
            } else {
                end
            };
            continue;
        }
        if t.is_punct(';') {
            f.complete = true;
            return (f, i + 1);
        }
        if t.is_punct('{') {
            break;
        }
        if t.kind == TokenKind::Directive {
            directive_start = Some(i);
        }
        i += 1;
    }
    let open = i;
    f.defined = true;
    let close = matching_brace(tokens, open);
    let body_end = close.unwrap_or_else(|| {
        // Up to the `.entry`/`.func` that interrupts it, or the end of the module.
        tokens[open + 1..]
            .iter()
            .position(|t| t.is_directive(".entry") || t.is_directive(".func"))
            .map_or(tokens.len(), |p| p + open + 1)
    });
    let body_tokens = &tokens[open + 1..body_end];
    let text_start = tokens[open].end();
    let text_end = tokens.get(body_end).map_or(ptx.len(), |t| t.start);
    // A `.func`/`.entry` interrupting the body belongs to the next item: cut before its
    // linkage directives too.
    let text_end = if close.is_none() {
        body_tokens
            .iter()
            .rev()
            .take_while(|t| Linkage::from_directive(t.text).is_some())
            .last()
            .map_or(text_end, |t| t.start)
    } else {
        text_end
    };
    (f.body, f.body_line) = body_lines(
        ptx.get(text_start..text_end).unwrap_or(""),
        tokens[open].line,
    );
    f.variables = statements(body_tokens)
        .iter()
        .flat_map(|s| declaration(s))
        .collect();
    f.complete = close.is_some();
    let next = match close {
        Some(c) => c + 1,
        None => {
            body_end
                - body_tokens
                    .iter()
                    .rev()
                    .take_while(|t| Linkage::from_directive(t.text).is_some())
                    .count()
        }
    };
    (f, next)
}

/// The body text as lines: the text after `{` on its line is the first line if it holds
/// anything but whitespace, and likewise the text before the closing `}`.
fn body_lines(text: &str, open_line: usize) -> (Vec<String>, usize) {
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let mut first_line = open_line;
    if lines.len() > 1 && lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    if lines.first().is_some_and(|l| l.trim().is_empty()) {
        lines.remove(0);
        first_line += 1;
    }
    (lines, first_line)
}

/// `.param .u64 .ptr .align 1 a, .param .f32 b` (or `.reg .b32 x` in a `.func`).
fn param_list(tokens: &[Token<'_>]) -> Vec<PtxParam> {
    split_top_level(tokens, ',')
        .into_iter()
        .filter_map(|decl| {
            let (first, rest) = decl.split_first()?;
            if !(first.is_directive(".param") || first.is_directive(".reg")) {
                return None;
            }
            let mut ty = None;
            let mut skip_number = false;
            for t in rest {
                if skip_number {
                    skip_number = false;
                    continue;
                }
                if t.is_directive(".align") {
                    skip_number = true;
                } else if t.kind == TokenKind::Directive
                    && ty.is_none()
                    && t.text != ".ptr"
                    && StateSpace::from_directive(t.text).is_none()
                {
                    ty = Some(t.text);
                }
            }
            // The name is the last identifier before any `[`.
            let name = decl
                .iter()
                .take_while(|t| !t.is_punct('['))
                .filter(|t| t.kind == TokenKind::Ident)
                .last()?;
            Some(PtxParam {
                ty: ty.unwrap_or("").to_string(),
                name: name.text.to_string(),
            })
        })
        .collect()
}
