//! The statements of a function body and the instructions among them.
use super::lexer::{join, tokenize, Token, TokenKind};
use super::operand::{parse_operand, split_top_level, Operand};

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
    /// The statement as written (whitespace and comments collapsed to one space, without the
    /// label and the `;`).
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

    /// Whether the guard is negated (`@!%p1`).
    pub fn guard_negated(&self) -> bool {
        self.guard.is_some() && self.text.starts_with("@!")
    }
}

/// Splits body tokens into statements (their tokens, without the `;`) at `;`, dropping the scope braces `{` `}` and labels
/// (`name:`) that precede a statement. A trailing statement with no `;` (a truncated body) is
/// kept. Braces inside a statement (vector operands) stay in it.
pub(super) fn statements<'t, 'a>(tokens: &'t [Token<'a>]) -> Vec<&'t [Token<'a>]> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        loop {
            match (tokens.get(i), tokens.get(i + 1), tokens.get(i + 2)) {
                (Some(t), ..) if t.is_punct('{') || t.is_punct('}') => i += 1,
                // `name:` but not `name::` (a qualifier).
                (Some(t), Some(c), next)
                    if t.kind == TokenKind::Ident
                        && c.is_punct(':')
                        && !next.is_some_and(|n| n.is_punct(':') && !n.space_before) =>
                {
                    i += 2;
                }
                _ => break,
            }
        }
        let start = i;
        let mut depth: i64 = 0;
        while let Some(t) = tokens.get(i) {
            if t.is_punct(';') && depth <= 0 {
                break;
            }
            if t.is_punct('{') || t.is_punct('[') || t.is_punct('(') {
                depth += 1;
            } else if t.is_punct('}') || t.is_punct(']') || t.is_punct(')') {
                if depth <= 0 && t.is_punct('}') {
                    // A scope's closing brace ends the statement before it (no `;` there).
                    break;
                }
                depth -= 1;
            }
            i += 1;
        }
        let stmt = &tokens[start..i.min(tokens.len())];
        if !stmt.is_empty() {
            out.push(stmt);
        }
        if tokens.get(i).is_some_and(|t| t.is_punct(';')) {
            i += 1;
        }
    }
    out
}

/// The instructions of an entry body (`first_line` is the module line of `body[0]`). Directives
/// (`.reg`, `.local`, `.pragma`...), labels, scope braces and comments are skipped.
pub fn instructions(body: &[String], first_line: usize) -> Vec<Instruction> {
    let text = body.join("\n");
    let lexed = tokenize(&text);
    let offset = first_line.saturating_sub(1);
    statements(&lexed.tokens)
        .iter()
        .filter_map(|s| parse_instruction(s, offset))
        .collect()
}

/// An instruction from a statement's tokens (None for a directive or an empty statement).
fn parse_instruction(tokens: &[Token<'_>], line_offset: usize) -> Option<Instruction> {
    let first = tokens.first()?;
    let mut rest = tokens;
    let mut guard = None;
    if first.is_punct('@') {
        let negated = rest.get(1).is_some_and(|t| t.is_punct('!'));
        let reg = rest.get(if negated { 2 } else { 1 })?;
        guard = Some(reg.text.to_string());
        rest = rest.get(if negated { 3 } else { 2 }..).unwrap_or(&[]);
    }
    let op = rest.first()?;
    if op.kind != TokenKind::Ident {
        return None;
    }
    // The opcode: the name and the modifiers written against it (`.global`, `::evict_last`).
    let mut n = 1;
    while let Some(t) = rest.get(n) {
        let attached = !t.space_before
            && (t.kind == TokenKind::Directive
                || t.is_punct(':')
                || (t.kind == TokenKind::Ident && rest[n - 1].is_punct(':')));
        if !attached {
            break;
        }
        n += 1;
    }
    let opcode = join(&rest[..n]).replace(' ', "");
    let operands = split_top_level(&rest[n..], ',')
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(parse_operand)
        .collect();
    Some(Instruction {
        line: first.line + line_offset,
        guard,
        opcode,
        operands,
        text: join(tokens),
    })
}
