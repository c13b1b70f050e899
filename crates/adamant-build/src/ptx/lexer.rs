//! PTX tokens, by the rules of the PTX ISA's "Syntax" chapter, checked against ptxas
//! (tests/audit/ptx_vs_ptxas.rs):
//! - `//` comments run to the end of the line; `/* ... */` comments do not nest; neither starts
//!   inside the other or inside a string; a comment is whitespace;
//! - a string runs from `"` to the next `"`: ptxas knows no escapes (`"a\"b"` is the string
//!   `"a\"` followed by `b"`) and accepts line breaks inside;
//! - identifiers are `[a-zA-Z][a-zA-Z0-9_$]*` or `[_$%][a-zA-Z0-9_$]+`; a directive is `.` and
//!   the same characters (`.entry`, `.b32`, `.x` of `%tid.x`);
//! - everything else is a one-character punctuation token (`;`, `{`, `@`, ...) or a number.
//!
//! Tokens carry their 1-based line and whether whitespace (or a comment) precedes them, so that
//! `st.global.b32` (three tokens with no space between) can be told from `st .global`.

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    /// `ld`, `%rd1`, `$L__BB0_2`, `iqn_adam_kernel_param_0`.
    Ident,
    /// `.entry`, `.u64`, `.x`.
    Directive,
    /// `12`, `0x1F`, `0f3F800000`, `1.5e-3`.
    Number,
    /// `"nounroll"`, quotes included.
    String,
    /// Any other single character: `;`, `,`, `{`, `[`, `@`, `!`, `+`, ...
    Punct,
}

/// One token of a PTX text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token<'a> {
    pub kind: TokenKind,
    pub text: &'a str,
    /// 1-based line of the token's first character.
    pub line: usize,
    /// Byte offset of the token in the text.
    pub start: usize,
    /// Whether whitespace or a comment separates it from the previous token.
    pub space_before: bool,
}

impl Token<'_> {
    /// Whether this is the punctuation `c`.
    pub fn is_punct(&self, c: char) -> bool {
        self.kind == TokenKind::Punct && self.text.len() == c.len_utf8() && self.text.starts_with(c)
    }

    /// Whether this is the directive `d` (with its dot: `".entry"`).
    pub fn is_directive(&self, d: &str) -> bool {
        self.kind == TokenKind::Directive && self.text == d
    }

    /// Byte offset just past the token.
    pub fn end(&self) -> usize {
        self.start + self.text.len()
    }
}

/// A comment, kept because some markers live only there (`// begin inline asm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Comment<'a> {
    /// The comment with its `//` or `/* */`.
    pub text: &'a str,
    pub line: usize,
}

/// Text that ptxas would reject before parsing anything (the reader then sees the rest of the
/// module as one comment or string, as ptxas does until it fails).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexError {
    pub line: usize,
    pub message: String,
}

/// The tokens, comments and lexical errors of a text.
#[derive(Clone, Debug, Default)]
pub struct Lexed<'a> {
    pub tokens: Vec<Token<'a>>,
    pub comments: Vec<Comment<'a>>,
    pub errors: Vec<LexError>,
}

/// `[a-zA-Z0-9_$]`: the characters after an identifier's first.
pub fn is_followsym(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// Splits `src` into tokens. Never panics: every byte is consumed by exactly one rule, and
/// slicing happens only at ASCII delimiters or at character boundaries.
pub fn tokenize(src: &str) -> Lexed<'_> {
    let bytes = src.as_bytes();
    let mut out = Lexed::default();
    let mut i = 0;
    let mut line = 1;
    let mut space_before = true;
    while let Some(&b) = bytes.get(i) {
        let start = i;
        let start_line = line;
        let next = bytes.get(i + 1).copied();
        if b.is_ascii_whitespace() || b == 0x0b {
            if b == b'\n' {
                line += 1;
            }
            i += 1;
            space_before = true;
            continue;
        }
        if b == b'/' && next == Some(b'/') {
            i = find_byte(bytes, i, b'\n').unwrap_or(bytes.len());
            out.comments.push(Comment {
                text: &src[start..i],
                line: start_line,
            });
            space_before = true;
            continue;
        }
        if b == b'/' && next == Some(b'*') {
            let end = find_pair(bytes, i + 2, b'*', b'/').map(|e| e + 2);
            if end.is_none() {
                out.errors.push(LexError {
                    line: start_line,
                    message: "a `/*` comment is never closed".into(),
                });
            }
            i = end.unwrap_or(bytes.len());
            line += count_newlines(&bytes[start..i]);
            out.comments.push(Comment {
                text: &src[start..i],
                line: start_line,
            });
            space_before = true;
            continue;
        }
        let kind;
        if b == b'"' {
            kind = TokenKind::String;
            match find_byte(bytes, i + 1, b'"') {
                Some(close) => i = close + 1,
                None => {
                    out.errors.push(LexError {
                        line: start_line,
                        message: "a string is never closed".into(),
                    });
                    i = bytes.len();
                }
            }
            line += count_newlines(&bytes[start..i]);
        } else if b == b'.' && next.is_some_and(is_followsym) {
            kind = TokenKind::Directive;
            i = skip_followsym(bytes, i + 1);
        } else if b.is_ascii_alphabetic()
            || (matches!(b, b'_' | b'$' | b'%') && next.is_some_and(is_followsym))
        {
            kind = TokenKind::Ident;
            i = skip_followsym(bytes, i + 1);
        } else if b.is_ascii_digit() {
            kind = TokenKind::Number;
            i = number_end(bytes, i);
        } else {
            kind = TokenKind::Punct;
            i += src[i..].chars().next().map_or(1, char::len_utf8);
        }
        out.tokens.push(Token {
            kind,
            text: &src[start..i],
            line: start_line,
            start,
            space_before,
        });
        space_before = false;
    }
    out
}

fn find_byte(bytes: &[u8], from: usize, b: u8) -> Option<usize> {
    let rest = bytes.get(from..)?;
    rest.iter().position(|&x| x == b).map(|p| p + from)
}

fn find_pair(bytes: &[u8], from: usize, a: u8, b: u8) -> Option<usize> {
    let rest = bytes.get(from..)?;
    rest.windows(2)
        .position(|w| w[0] == a && w[1] == b)
        .map(|p| p + from)
}

fn count_newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

fn skip_followsym(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).copied().is_some_and(is_followsym) {
        i += 1;
    }
    i
}

/// End of a number starting at `i`: digits, letters (hex digits, `0f`/`0d`/`0x` prefixes, a
/// `U` suffix), `.` and a signed exponent of a decimal float (`1.5e-3`).
fn number_end(bytes: &[u8], mut i: usize) -> usize {
    let start = i;
    let hex = matches!(
        bytes.get(start + 1),
        Some(b'x' | b'X' | b'f' | b'F' | b'd' | b'D')
    ) && bytes.get(start) == Some(&b'0');
    while let Some(&b) = bytes.get(i) {
        let exponent_sign = (b == b'+' || b == b'-')
            && !hex
            && matches!(bytes.get(i.wrapping_sub(1)), Some(b'e' | b'E'))
            && bytes.get(i + 1).is_some_and(u8::is_ascii_digit);
        if !(b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || exponent_sign) {
            break;
        }
        i += 1;
    }
    i
}

/// Tokens joined as written, one space where the text had whitespace or a comment.
pub fn join(tokens: &[Token<'_>]) -> String {
    let mut out = String::new();
    for (k, t) in tokens.iter().enumerate() {
        if k > 0 && t.space_before {
            out.push(' ');
        }
        out.push_str(t.text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(TokenKind, &str)> {
        tokenize(src)
            .tokens
            .iter()
            .map(|t| (t.kind, t.text))
            .collect()
    }

    #[test]
    fn comments_are_whitespace_and_do_not_nest() {
        use TokenKind::*;
        assert_eq!(
            kinds("a /* b /* c */ d // e */ f\ng"),
            [(Ident, "a"), (Ident, "d"), (Ident, "g")]
        );
        // `/*` inside a line comment starts nothing; `//` inside a block comment neither.
        assert_eq!(kinds("// /*\nx /* // */ y"), [(Ident, "x"), (Ident, "y")]);
        let lexed = tokenize("a /* b\nc\n*/ d\n// e");
        assert_eq!(lexed.tokens[1].line, 3);
        assert_eq!(lexed.comments.len(), 2);
        assert!(lexed.errors.is_empty());
    }

    #[test]
    fn strings_have_no_escapes_and_may_span_lines() {
        use TokenKind::*;
        assert_eq!(
            kinds(r#".file 1 "a/*b" x"#),
            [
                (Directive, ".file"),
                (Number, "1"),
                (String, "\"a/*b\""),
                (Ident, "x")
            ]
        );
        assert_eq!(
            kinds(r#""a\"b""#),
            [(String, r#""a\""#), (Ident, "b"), (String, "\"")]
        );
        assert_eq!(
            tokenize(r#""a\"b""#).errors.len(),
            1,
            "the last quote opens a string"
        );
        let lexed = tokenize("\"a\nb\" c");
        assert_eq!(lexed.tokens[1].line, 2);
        // `/*` and `//` in a string are text.
        assert_eq!(kinds("\"// /*\" y").len(), 2);
    }

    #[test]
    fn identifiers_directives_numbers() {
        use TokenKind::*;
        assert_eq!(
            kinds("st.global.v4.b32 [%rd26+-12], %tid.x, $L__BB0_2, _, 0f3F800000, 1.5e-3"),
            [
                (Ident, "st"),
                (Directive, ".global"),
                (Directive, ".v4"),
                (Directive, ".b32"),
                (Punct, "["),
                (Ident, "%rd26"),
                (Punct, "+"),
                (Punct, "-"),
                (Number, "12"),
                (Punct, "]"),
                (Punct, ","),
                (Ident, "%tid"),
                (Directive, ".x"),
                (Punct, ","),
                (Ident, "$L__BB0_2"),
                (Punct, ","),
                (Punct, "_"),
                (Punct, ","),
                (Number, "0f3F800000"),
                (Punct, ","),
                (Number, "1.5e-3"),
            ]
        );
        // `.visible.entry` is two directives.
        assert_eq!(
            kinds(".visible.entry"),
            [(Directive, ".visible"), (Directive, ".entry")]
        );
        let t = tokenize("a.b c");
        assert!(!t.tokens[1].space_before && t.tokens[2].space_before);
    }

    #[test]
    fn unterminated_comment_and_string_are_errors() {
        assert_eq!(tokenize("a /* b").errors.len(), 1);
        assert_eq!(tokenize("a \"b").errors.len(), 1);
        assert_eq!(tokenize("\u{0}\u{ffff}\u{1f600}é").tokens.len(), 4);
    }
}
