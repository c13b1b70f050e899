//! The syn visitors the checks walk the expansion with: exported fns, writes, calls, mentions of
//! an identifier, pattern bindings.
use syn::ext::IdentExt;
use syn::visit::{self, Visit};
use syn::{
    BinOp, Expr, ExprAssign, ExprBinary, ExprCall, ExprMethodCall, ExprPath, ImplItemFn, ItemFn,
    UnOp,
};

use super::syntax::{is_exported, path_is, tokens};
use super::SWEEP;

/// Every exported function of the expansion, at any depth (module, impl, fn body).
#[derive(Default)]
pub(super) struct Exported {
    pub(super) names: Vec<String>,
}

impl<'a> Visit<'a> for Exported {
    fn visit_item_fn(&mut self, f: &'a ItemFn) {
        if is_exported(&f.attrs, &f.sig) {
            self.names.push(f.sig.ident.to_string());
        }
        visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'a ImplItemFn) {
        if is_exported(&f.attrs, &f.sig) {
            self.names.push(f.sig.ident.to_string());
        }
        visit::visit_impl_item_fn(self, f);
    }
}

/// Write-like calls: anything that could store through a pointer without `*p = v`.
const WRITES: [&str; 13] = [
    "write",
    "write_unaligned",
    "write_volatile",
    "write_bytes",
    "copy",
    "copy_from",
    "copy_to",
    "copy_nonoverlapping",
    "copy_from_nonoverlapping",
    "copy_to_nonoverlapping",
    "swap",
    "swap_nonoverlapping",
    "replace",
];

/// The identifier a pointer expression is built on (`*(<p> as *mut F4).add(i)` -> `p`).
pub(super) fn base_ident(target: &Expr) -> Option<String> {
    match target {
        Expr::MethodCall(m) => base_ident(&m.receiver),
        Expr::Paren(p) => base_ident(&p.expr),
        Expr::Cast(c) => base_ident(&c.expr),
        Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => base_ident(&u.expr),
        Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    }
}

fn is_compound_assign(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
            | BinOp::BitXorAssign(_)
            | BinOp::BitAndAssign(_)
            | BinOp::BitOrAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_)
    )
}

/// Every write under a node: `*.. = ..` stores, `*.. op= ..`, write-like calls, macros (which
/// could hide either), and assignments to plain names.
#[derive(Default)]
pub(super) struct Stores<'a> {
    /// (base pointer, stored value) of each `*.. = ..`.
    pub(super) derefs: Vec<(Option<String>, &'a Expr)>,
    /// `*.. op= ..`
    pub(super) compound: Vec<String>,
    /// Write-like calls and macro invocations.
    pub(super) writes: Vec<String>,
    /// Names assigned with `x = ..` or `x op= ..`.
    pub(super) assigned: Vec<String>,
}

impl Stores<'_> {
    pub(super) fn stores_anything(&self) -> bool {
        !self.derefs.is_empty() || !self.compound.is_empty() || !self.writes.is_empty()
    }
}

impl<'a> Visit<'a> for Stores<'a> {
    fn visit_expr_assign(&mut self, node: &'a ExprAssign) {
        match &*node.left {
            Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => {
                self.derefs.push((base_ident(&u.expr), &node.right));
            }
            Expr::Path(p) if p.path.get_ident().is_some() => {
                self.assigned.push(tokens(&p.path));
            }
            _ => {}
        }
        visit::visit_expr_assign(self, node);
    }

    fn visit_expr_binary(&mut self, node: &'a ExprBinary) {
        if is_compound_assign(&node.op) {
            match &*node.left {
                Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => {
                    self.compound.push(tokens(node));
                }
                Expr::Path(p) if p.path.get_ident().is_some() => {
                    self.assigned.push(tokens(&p.path));
                }
                _ => {}
            }
        }
        visit::visit_expr_binary(self, node);
    }

    fn visit_expr_method_call(&mut self, node: &'a ExprMethodCall) {
        if WRITES.iter().any(|w| node.method == w) {
            self.writes.push(tokens(node));
        }
        visit::visit_expr_method_call(self, node);
    }

    fn visit_expr_call(&mut self, node: &'a ExprCall) {
        if let Expr::Path(p) = &*node.func {
            if p.path
                .segments
                .last()
                .is_some_and(|s| WRITES.iter().any(|w| s.ident == w))
            {
                self.writes.push(tokens(node));
            }
        }
        visit::visit_expr_call(self, node);
    }

    fn visit_macro(&mut self, node: &'a syn::Macro) {
        self.writes.push(tokens(node));
    }
}

/// Calls of `__adamant_sweep`, `<kernel>::element`, `<kernel>::update` and the clamp
/// (`::adamant_device::clamp::weight_clamp`), and any other call naming `update`, `element`, the
/// clamp or a sweep (which would compute or store outside the checked path).
pub(super) struct Calls<'a> {
    kernel: &'a str,
    pub(super) sweep: Vec<&'a ExprCall>,
    pub(super) element: Vec<&'a ExprCall>,
    pub(super) update: Vec<&'a ExprCall>,
    pub(super) clamp: Vec<&'a ExprCall>,
    pub(super) other: Vec<String>,
}

impl<'a> Calls<'a> {
    pub(super) fn new(kernel: &'a str) -> Self {
        Calls {
            kernel,
            sweep: vec![],
            element: vec![],
            update: vec![],
            clamp: vec![],
            other: vec![],
        }
    }
}

impl<'a> Visit<'a> for Calls<'a> {
    fn visit_expr_call(&mut self, node: &'a ExprCall) {
        if let Expr::Path(ExprPath { path, .. }) = &*node.func {
            if path_is(path, false, &[SWEEP]) {
                self.sweep.push(node);
            } else if path_is(path, false, &[self.kernel, "element"]) {
                self.element.push(node);
            } else if path_is(path, false, &[self.kernel, "update"]) {
                self.update.push(node);
            } else if path_is(path, true, &["adamant_device", "clamp", "weight_clamp"]) {
                self.clamp.push(node);
            } else if path.segments.iter().any(|s| {
                s.ident == "update"
                    || s.ident == "element"
                    || s.ident == "weight_clamp"
                    || s.ident == "sweep"
                    || s.ident == SWEEP
            }) {
                self.other.push(tokens(path));
            }
        }
        visit::visit_expr_call(self, node);
    }

    fn visit_expr_method_call(&mut self, node: &'a ExprMethodCall) {
        if node.method == "update"
            || node.method == "element"
            || node.method == "weight_clamp"
            || node.method == SWEEP
        {
            self.other.push(tokens(node));
        }
        visit::visit_expr_method_call(self, node);
    }
}

/// Whether an identifier occurs anywhere under a node.
struct Mentions<'a> {
    ident: &'a str,
    found: bool,
}

impl<'a> Visit<'a> for Mentions<'a> {
    fn visit_ident(&mut self, ident: &'a proc_macro2::Ident) {
        self.found |= ident == self.ident;
    }
}

pub(super) fn mentions(expr: &Expr, ident: &str) -> bool {
    let mut m = Mentions {
        ident,
        found: false,
    };
    m.visit_expr(expr);
    m.found
}

/// Every name bound by a pattern under a node (`let`, closures, `match` arms).
#[derive(Default)]
struct Bindings {
    names: Vec<String>,
}

impl<'a> Visit<'a> for Bindings {
    fn visit_pat_ident(&mut self, node: &'a syn::PatIdent) {
        self.names.push(node.ident.unraw().to_string());
        visit::visit_pat_ident(self, node);
    }
}

pub(super) fn bindings(block: &syn::Block) -> Vec<String> {
    let mut b = Bindings::default();
    b.visit_block(block);
    b.names
}
