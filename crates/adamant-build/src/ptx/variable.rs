//! Variable declarations (`.global .align 4 .b8 table[64];`, `.extern .shared .b8 smem[];`,
//! `.local .u32 x;`) with their state space, at module scope and inside bodies, so that the
//! audit knows which symbols name shared, local, constant or global memory.
use super::lexer::{Token, TokenKind};
use super::operand::{parse_u64, split_top_level};

/// Where a variable lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StateSpace {
    Global,
    Shared,
    Const,
    Local,
    /// `.param` inside a body: the argument and return slots of a `call`.
    Param,
    /// `.tex` (a texture reference, a legacy form).
    Tex,
}

impl StateSpace {
    /// The state space a directive names (`".shared"`), if it names one a variable can have.
    pub fn from_directive(d: &str) -> Option<StateSpace> {
        Some(match d {
            ".global" => StateSpace::Global,
            ".shared" => StateSpace::Shared,
            ".const" => StateSpace::Const,
            ".local" => StateSpace::Local,
            ".param" => StateSpace::Param,
            ".tex" => StateSpace::Tex,
            _ => return None,
        })
    }

    /// The directive, with its dot.
    pub fn directive(self) -> &'static str {
        match self {
            StateSpace::Global => ".global",
            StateSpace::Shared => ".shared",
            StateSpace::Const => ".const",
            StateSpace::Local => ".local",
            StateSpace::Param => ".param",
            StateSpace::Tex => ".tex",
        }
    }
}

/// `.visible`, `.weak`, `.extern`, `.common`: the linkage written before a function or variable
/// (none written: the symbol is private to the module).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Linkage {
    Visible,
    Weak,
    Extern,
    Common,
}

impl Linkage {
    pub fn from_directive(d: &str) -> Option<Linkage> {
        Some(match d {
            ".visible" => Linkage::Visible,
            ".weak" => Linkage::Weak,
            ".extern" => Linkage::Extern,
            ".common" => Linkage::Common,
            _ => return None,
        })
    }

    pub fn directive(self) -> &'static str {
        match self {
            Linkage::Visible => ".visible",
            Linkage::Weak => ".weak",
            Linkage::Extern => ".extern",
            Linkage::Common => ".common",
        }
    }
}

/// One declared variable (a declaration of several names gives one each).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxVariable {
    pub name: String,
    pub space: StateSpace,
    pub linkage: Option<Linkage>,
    /// The element type, like `.b8` or `.u32` (empty if the declaration has none).
    pub ty: String,
    /// `.align N`, if written.
    pub align: Option<u64>,
    /// The array dimensions (`[64]` is `Some(64)`, `[]` is `None`); empty for a scalar.
    pub dims: Vec<Option<u64>>,
    /// Whether an initializer (`= ...`) follows.
    pub initialized: bool,
    /// 1-based line of the name.
    pub line: usize,
}

/// The variables a declaration statement declares, if it is one: `tokens` is the statement
/// without its `;`, starting with optional linkage directives then a state space. `.reg`
/// declarations are not variables (registers are not memory) and give nothing.
pub(super) fn declaration(tokens: &[Token<'_>]) -> Vec<PtxVariable> {
    let mut i = 0;
    let mut linkage = None;
    while let Some(l) = tokens.get(i).and_then(|t| Linkage::from_directive(t.text)) {
        linkage = Some(l);
        i += 1;
    }
    let Some(space) = tokens
        .get(i)
        .filter(|t| t.kind == TokenKind::Directive)
        .and_then(|t| StateSpace::from_directive(t.text))
    else {
        return Vec::new();
    };
    i += 1;
    let mut ty = String::new();
    let mut align = None;
    while let Some(t) = tokens.get(i) {
        if t.kind != TokenKind::Directive {
            break;
        }
        if t.text == ".align" {
            align = tokens.get(i + 1).and_then(|n| parse_u64(n.text));
            i += 2;
            continue;
        }
        if ty.is_empty() && !matches!(t.text, ".ptr" | ".v2" | ".v4" | ".v8") {
            ty = t.text.to_string();
        }
        i += 1;
    }
    let rest = tokens.get(i..).unwrap_or(&[]);
    split_top_level(rest, ',')
        .into_iter()
        .filter_map(|d| declarator(d, space, linkage, &ty, align))
        .collect()
}

/// `name`, `name[64]`, `name[]`, `name = 1`, `name[2] = {1, 2}`.
fn declarator(
    tokens: &[Token<'_>],
    space: StateSpace,
    linkage: Option<Linkage>,
    ty: &str,
    align: Option<u64>,
) -> Option<PtxVariable> {
    let name = tokens.first().filter(|t| t.kind == TokenKind::Ident)?;
    let mut dims = Vec::new();
    let mut i = 1;
    while tokens.get(i).is_some_and(|t| t.is_punct('[')) {
        let close = tokens[i..].iter().position(|t| t.is_punct(']'))? + i;
        let inner = &tokens[i + 1..close];
        dims.push(match inner {
            [n] => parse_u64(n.text),
            _ => None,
        });
        i = close + 1;
    }
    Some(PtxVariable {
        name: name.text.to_string(),
        space,
        linkage,
        ty: ty.to_string(),
        align,
        dims,
        initialized: tokens[i..].iter().any(|t| t.is_punct('=')),
        line: name.line,
    })
}
