//! Small readers and predicates over syn nodes: token strings, paths, cfgs, signatures, `let`s.
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{Expr, FnArg, Pat, Signature, Stmt};

pub(super) fn tokens(t: &impl ToTokens) -> String {
    t.to_token_stream().to_string()
}

pub(super) fn path_is(path: &syn::Path, leading_colon: bool, segments: &[&str]) -> bool {
    path.leading_colon.is_some() == leading_colon
        && path.segments.len() == segments.len()
        && path
            .segments
            .iter()
            .zip(segments)
            .all(|(s, want)| s.ident == want)
}

pub(super) fn expr_is_ident(expr: &Expr, name: &str) -> bool {
    matches!(expr, Expr::Path(p) if p.qself.is_none() && p.path.is_ident(name))
}

pub(super) fn cfg_is(attrs: &[syn::Attribute], cfg: &str) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().replace(' ', "") == cfg.replace(' ', ""))
    })
}

pub(super) const NVPTX: &str = "target_arch = \"nvptx64\"";

pub(super) fn is_gpu_kernel(sig: &Signature) -> bool {
    sig.abi
        .as_ref()
        .and_then(|a| a.name.as_ref())
        .is_some_and(|n| n.value() == "gpu-kernel")
}

/// Whether a function is (or could be) an exported symbol: a gpu-kernel, or `no_mangle` /
/// `export_name` in any spelling (`#[unsafe(no_mangle)]`, under `cfg_attr`, ...).
pub(super) fn is_exported(attrs: &[syn::Attribute], sig: &Signature) -> bool {
    is_gpu_kernel(sig)
        || attrs.iter().any(|a| {
            let a = tokens(a);
            a.contains("no_mangle") || a.contains("export_name")
        })
}

pub(super) fn input_name(arg: &FnArg) -> Option<String> {
    match arg {
        FnArg::Typed(t) => match &*t.pat {
            Pat::Ident(p) => Some(p.ident.unraw().to_string()),
            _ => None,
        },
        FnArg::Receiver(_) => None,
    }
}

pub(super) fn input_names(sig: &Signature) -> Vec<Option<String>> {
    sig.inputs.iter().map(input_name).collect()
}

pub(super) fn input_type(arg: &FnArg) -> Option<String> {
    match arg {
        FnArg::Typed(t) => Some(tokens(&t.ty)),
        FnArg::Receiver(_) => None,
    }
}

/// The `let <name>: <ty> = <init>;` statements of a block, by name.
pub(super) fn lets<'a>(stmts: &'a [Stmt], name: &str) -> Vec<(&'a syn::Type, &'a Expr)> {
    stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::Local(l) => match (&l.pat, &l.init) {
                (Pat::Type(t), Some(init))
                    if matches!(&*t.pat, Pat::Ident(i) if i.ident == name) =>
                {
                    Some((&*t.ty, &*init.expr))
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}
