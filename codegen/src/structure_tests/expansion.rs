//! Finding the kernel's items in the expansion (its two entries, its module, the module's fns),
//! and the signature rule they share: the bound last, once.
use syn::visit::Visit;
use syn::{File, FnArg, Item, ItemFn, ItemMod, Pat, Signature};

use super::syntax::{input_names, tokens};
use super::visitors::Exported;
use super::SWEEP;
use crate::signature::{is_ident_type, BOUND, LEN};

pub(super) fn multi_name(name: &str) -> String {
    format!("{name}_multi")
}

pub(super) fn top_fn<'a>(file: &'a File, ident: &str) -> Result<&'a ItemFn, String> {
    file.items
        .iter()
        .find_map(|item| match item {
            Item::Fn(f) if f.sig.ident == ident => Some(f),
            _ => None,
        })
        .ok_or_else(|| format!("no top-level `fn {ident}` in the expansion"))
}

/// The single-buffer and the multi-tensor entry, checked to be the expansion's only exported
/// functions.
pub(super) fn entries<'a>(file: &'a File, name: &str) -> Result<[&'a ItemFn; 2], String> {
    let mut exported = Exported::default();
    exported.visit_file(file);
    let mut found = exported.names;
    found.sort();
    let mut want = vec![name.to_string(), multi_name(name)];
    want.sort();
    if found != want {
        return Err(format!(
            "the exported functions are {found:?}, expected {want:?}"
        ));
    }
    Ok([top_fn(file, name)?, top_fn(file, &multi_name(name))?])
}

pub(super) fn kernel_mod<'a>(file: &'a File, name: &str) -> Result<&'a ItemMod, String> {
    file.items
        .iter()
        .find_map(|item| match item {
            Item::Mod(m) if m.ident == name => Some(m),
            _ => None,
        })
        .ok_or_else(|| format!("no `mod {name}` in the expansion"))
}

pub(super) fn mod_items(m: &ItemMod) -> Result<&[Item], String> {
    Ok(&m.content.as_ref().ok_or("the kernel module is inline")?.1)
}

pub(super) fn mod_fn<'a>(m: &'a ItemMod, name: &str) -> Result<&'a ItemFn, String> {
    mod_items(m)?
        .iter()
        .find_map(|item| match item {
            Item::Fn(f) if f.sig.ident == name => Some(f),
            _ => None,
        })
        .ok_or_else(|| format!("no `fn {name}` in the kernel module"))
}

/// The number of buffers, read off `sweep`: the inputs before `len`.
pub(super) fn buffer_count(sweep: &ItemFn) -> Result<usize, String> {
    input_names(&sweep.sig)
        .iter()
        .position(|n| n.as_deref() == Some(LEN))
        .ok_or_else(|| format!("`{SWEEP}` takes no `{LEN}`"))
}

/// `weight_clamp_max_abs: f32` is the last input (a plain binding: not `mut`, not `ref`) and no
/// other input has that name.
pub(super) fn takes_bound_last_once(sig: &Signature) -> Result<(), String> {
    let ok = match sig.inputs.last() {
        Some(FnArg::Typed(t)) => {
            matches!(&*t.pat, Pat::Ident(p) if p.ident == BOUND
                && p.mutability.is_none()
                && p.by_ref.is_none()
                && p.subpat.is_none())
                && is_ident_type(&t.ty, "f32")
        }
        _ => false,
    };
    if !ok {
        return Err(format!(
            "`{}`'s last input is `{}`, not `{BOUND}: f32`",
            sig.ident,
            sig.inputs.last().map(tokens).unwrap_or_default()
        ));
    }
    let bounds = input_names(sig)
        .iter()
        .filter(|n| n.as_deref() == Some(BOUND))
        .count();
    if bounds != 1 {
        return Err(format!("`{}` takes `{BOUND}` {bounds} times", sig.ident));
    }
    Ok(())
}
