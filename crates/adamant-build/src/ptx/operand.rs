//! Instruction operands, parsed from the tokens of one operand (between top-level commas).
use super::lexer::{join, Token, TokenKind};

/// One operand of an instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operand {
    /// A register (`%r14`, `%rd1`, `%p3`) or special register (`%tid.x`). A `!` negation of a
    /// predicate operand is dropped.
    Register(String),
    /// A vector or grouped operand: `{%r1, %r2, %r3, %r4}`, `%p1|%p2`, `(param0, param1)`.
    Vector(Vec<Operand>),
    /// A memory operand `[base+offset]`; `base` is a register or a symbol (a parameter name, a
    /// global variable), or an immediate for an absolute address.
    Address { base: Box<Operand>, offset: i64 },
    /// A numeric literal (`0`, `-12`, `0f3F800000`, `0x10`).
    Immediate(String),
    /// Anything else: a label, a function or variable name, `_`. A name with an offset outside
    /// brackets (`name+4`) is the name alone.
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

/// Splits `tokens` at `sep` outside brackets, braces and parentheses.
pub(super) fn split_top_level<'t, 'a>(tokens: &'t [Token<'a>], sep: char) -> Vec<&'t [Token<'a>]> {
    let mut out = Vec::new();
    let mut depth: i64 = 0;
    let mut start = 0;
    for (i, t) in tokens.iter().enumerate() {
        if t.kind != TokenKind::Punct {
            continue;
        }
        match t.text {
            "[" | "{" | "(" => depth += 1,
            "]" | "}" | ")" => depth -= 1,
            _ if t.is_punct(sep) && depth <= 0 => {
                out.push(&tokens[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(tokens.get(start..).unwrap_or(&[]));
    out
}

/// The tokens inside a bracket pair that opens at `tokens[0]` (and closes at the last token, if
/// it is the matching bracket; otherwise everything after the opener).
fn inside<'t, 'a>(tokens: &'t [Token<'a>], close: char) -> &'t [Token<'a>] {
    let inner = tokens.get(1..).unwrap_or(&[]);
    match inner.last() {
        Some(last) if last.is_punct(close) => &inner[..inner.len() - 1],
        _ => inner,
    }
}

/// Parses one operand. Never panics; what it cannot classify becomes a [`Operand::Symbol`]
/// with the tokens' text.
pub(super) fn parse_operand(tokens: &[Token<'_>]) -> Operand {
    let Some(first) = tokens.first() else {
        return Operand::Symbol(String::new());
    };
    if first.is_punct('[') {
        return parse_address(inside(tokens, ']'));
    }
    if first.is_punct('{') || first.is_punct('(') {
        let close = if first.is_punct('{') { '}' } else { ')' };
        return Operand::Vector(list(inside(tokens, close), ','));
    }
    let bars = split_top_level(tokens, '|');
    if bars.len() > 1 {
        return Operand::Vector(
            bars.into_iter()
                .filter(|p| !p.is_empty())
                .map(parse_operand)
                .collect(),
        );
    }
    if first.is_punct('!') {
        return parse_operand(&tokens[1..]);
    }
    match first.kind {
        TokenKind::Ident if first.text.starts_with('%') => {
            // `%tid.x`: the register and the directives that follow it with no space.
            let n = 1 + tokens[1..]
                .iter()
                .take_while(|t| t.kind == TokenKind::Directive && !t.space_before)
                .count();
            if n == tokens.len() {
                return Operand::Register(join(&tokens[..n]));
            }
            Operand::Symbol(join(tokens))
        }
        TokenKind::Number => Operand::Immediate(join(tokens).replace(' ', "")),
        TokenKind::Punct if first.text == "-" || first.text == "+" => {
            if tokens
                .iter()
                .skip(1)
                .all(|t| t.kind == TokenKind::Number || t.is_punct('-') || t.is_punct('+'))
            {
                Operand::Immediate(join(tokens).replace(' ', ""))
            } else {
                Operand::Symbol(join(tokens))
            }
        }
        TokenKind::Ident if tokens.len() == 1 || offset_of(&tokens[1..]).is_some() => {
            Operand::Symbol(first.text.to_string())
        }
        _ => Operand::Symbol(join(tokens)),
    }
}

/// Comma-separated operands.
fn list(tokens: &[Token<'_>], sep: char) -> Vec<Operand> {
    split_top_level(tokens, sep)
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(parse_operand)
        .collect()
}

/// `%rd1`, `%rd1+8`, `%rd26+-12`, `name+4`, `0x100`: a base and an offset. A base followed by
/// something that is not an offset keeps offset 0 (and the base as parsed).
fn parse_address(tokens: &[Token<'_>]) -> Operand {
    let split = tokens
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, t)| t.is_punct('+') || t.is_punct('-'))
        .map(|(i, _)| i);
    let (base, offset) = match split {
        Some(i) => (&tokens[..i], offset_of(&tokens[i..]).unwrap_or(0)),
        None => (tokens, 0),
    };
    Operand::Address {
        base: Box::new(parse_operand(base)),
        offset,
    }
}

/// The value of `+8`, `+-12`, `-0x10`: signs, then one integer. None for anything else.
fn offset_of(tokens: &[Token<'_>]) -> Option<i64> {
    let mut negative = false;
    let mut rest = tokens;
    while let Some((t, tail)) = rest.split_first() {
        if t.is_punct('-') {
            negative = !negative;
        } else if !t.is_punct('+') {
            break;
        }
        rest = tail;
    }
    if rest.len() != 1 || rest.len() == tokens.len() {
        return None;
    }
    let value = parse_int(rest[0].text)?;
    Some(if negative {
        value.checked_neg()?
    } else {
        value
    })
}

/// An immediate operand's integer value: an optional `-`, then a PTX integer literal (None for
/// anything else, a float literal among them).
pub fn parse_integer(text: &str) -> Option<i64> {
    match text.strip_prefix('-') {
        Some(rest) => parse_int(rest)?.checked_neg(),
        None => parse_int(text),
    }
}

/// A PTX integer literal as a signed value (hex literals past `i64::MAX` wrap, as in PTX's
/// 64-bit arithmetic).
pub(super) fn parse_int(text: &str) -> Option<i64> {
    parse_u64(text).map(|v| v as i64)
}

/// A PTX integer literal: decimal, `0x` hex, `0` octal, `0b` binary, with an optional `U`.
pub(super) fn parse_u64(text: &str) -> Option<u64> {
    let digits = text.strip_suffix(['U', 'u']).unwrap_or(text);
    let (radix, digits) = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        (16, h)
    } else if let Some(b) = digits
        .strip_prefix("0b")
        .or_else(|| digits.strip_prefix("0B"))
    {
        (2, b)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    u64::from_str_radix(digits, radix).ok()
}
