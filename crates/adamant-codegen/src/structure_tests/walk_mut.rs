//! Tampering helpers: `syn`'s `visit-mut` is not enabled, so these walk to the spot by hand.
use syn::punctuated::Punctuated;
use syn::{Expr, ExprCall, File, Item, ItemFn, ItemImpl, Stmt, Token};

use super::syntax::tokens;
use super::SWEEP;

/// The device block's entries block: `#[cfg(adamant_entries)] const _: () = { .. };` inside
/// `#[cfg(target_arch = "nvptx64")] const _: () = { .. };`.
fn entries_block_mut(file: &mut File) -> &mut syn::ItemConst {
    let outer = file
        .items
        .iter_mut()
        .find_map(|item| match item {
            Item::Const(c) if c.ident == "_" => match &mut *c.expr {
                Expr::Block(b) => Some(&mut b.block.stmts),
                _ => None,
            },
            _ => None,
        })
        .expect("the device block");
    outer
        .iter_mut()
        .find_map(|s| match s {
            Stmt::Item(Item::Const(c)) if c.ident == "_" => Some(c),
            _ => None,
        })
        .expect("the entries block")
}

/// The statements of the entries block.
pub(super) fn device_stmts_mut(file: &mut File) -> &mut Vec<Stmt> {
    match &mut *entries_block_mut(file).expr {
        Expr::Block(b) => &mut b.block.stmts,
        _ => panic!("the entries block is not a block"),
    }
}

/// The attributes of the entries block.
pub(super) fn entries_block_attrs_mut(file: &mut File) -> &mut Vec<syn::Attribute> {
    &mut entries_block_mut(file).attrs
}

/// A fn of the device block.
pub(super) fn device_fn_mut<'a>(file: &'a mut File, ident: &str) -> &'a mut ItemFn {
    device_stmts_mut(file)
        .iter_mut()
        .find_map(|s| match s {
            Stmt::Item(Item::Fn(f)) if f.sig.ident == ident => Some(f),
            _ => None,
        })
        .expect("the device fn")
}

pub(super) fn mod_items_mut<'a>(file: &'a mut File, name: &str) -> &'a mut Vec<Item> {
    let module = file
        .items
        .iter_mut()
        .find_map(|item| match item {
            Item::Mod(m) if m.ident == name => Some(m),
            _ => None,
        })
        .expect("the kernel module");
    &mut module.content.as_mut().expect("inline").1
}

pub(super) fn mod_fn_mut<'a>(file: &'a mut File, name: &str, f: &str) -> &'a mut ItemFn {
    mod_items_mut(file, name)
        .iter_mut()
        .find_map(|item| match item {
            Item::Fn(func) if func.sig.ident == f => Some(func),
            _ => None,
        })
        .expect("the module fn")
}

pub(super) fn loops_mut(f: &mut ItemFn) -> Vec<&mut syn::ExprWhile> {
    f.block
        .stmts
        .iter_mut()
        .filter_map(|s| match s {
            Stmt::Expr(Expr::While(w), _) => Some(w),
            _ => None,
        })
        .collect()
}

/// The `sweep` call of an entry, at the top level or in its chunk loop.
pub(super) fn sweep_call_mut(stmts: &mut [Stmt]) -> Option<&mut ExprCall> {
    stmts.iter_mut().find_map(|s| match s {
        // `__adamant_sweep(..)`, or `__adamant_sweep::<M>(..)` in a fused chunk.
        Stmt::Expr(Expr::Call(c), _)
            if matches!(&*c.func, Expr::Path(p)
                if p.path.segments.len() == 1 && p.path.segments[0].ident == SWEEP) =>
        {
            Some(c)
        }
        Stmt::Expr(Expr::While(w), _) => sweep_call_mut(&mut w.body.stmts),
        _ => None,
    })
}

pub(super) fn descriptor_params_mut<'a>(
    file: &'a mut File,
    name: &str,
    ident: &str,
) -> &'a mut Punctuated<Expr, Token![,]> {
    let s = mod_items_mut(file, name)
        .iter_mut()
        .find_map(|item| match item {
            Item::Static(s) if s.ident == ident => Some(s),
            _ => None,
        })
        .expect("the descriptor");
    let Expr::Struct(desc) = &mut *s.expr else {
        panic!("descriptor literal")
    };
    let params = desc
        .fields
        .iter_mut()
        .find(|f| tokens(&f.member) == "params")
        .expect("params");
    let Expr::Reference(r) = &mut params.expr else {
        panic!("&[..]")
    };
    let Expr::Array(a) = &mut *r.expr else {
        panic!("&[..]")
    };
    &mut a.elems
}

pub(super) fn entry_impl_mut<'a>(file: &'a mut File, name: &str) -> &'a mut ItemImpl {
    mod_items_mut(file, name)
        .iter_mut()
        .find_map(|item| match item {
            Item::Impl(i) if tokens(&i.trait_.as_ref()?.1).ends_with("OptimizerEntry") => Some(i),
            _ => None,
        })
        .expect("impl OptimizerEntry")
}
