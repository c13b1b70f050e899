//! Finding the kernel's items in the expansion (the device block with its entries and
//! `__adamant_sweep`, the kernel module and its fns),
//! and the signature rule they share: the bound last, once.
use syn::visit::Visit;
use syn::{Expr, File, FnArg, Item, ItemFn, ItemMod, Pat, Signature, Stmt};

use super::syntax::{cfg_is, input_names, tokens, NVPTX};
use super::visitors::Exported;
use super::SWEEP;
use crate::signature::{is_ident_type, BOUND, LEN};

pub(super) fn multi_name(name: &str) -> String {
    format!("{name}_multi")
}

/// The device block: the expansion's one `#[cfg(target_arch = "nvptx64")] const _: () = { .. };`,
/// which holds one `#[cfg(adamant_entries)] const _: () = { .. };` (the entries are compiled
/// into the PTX of the crate that defines them only), which holds only fns (sweep and the
/// entries; none of them can be named outside it).
pub(super) fn device_fns(file: &File) -> Result<Vec<&ItemFn>, String> {
    let blocks: Vec<&syn::ItemConst> = file
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Const(c) if c.ident == "_" => Some(c),
            _ => None,
        })
        .collect();
    let [block] = blocks.as_slice() else {
        return Err(format!(
            "the expansion has {} `const _` blocks, expected the one device block",
            blocks.len()
        ));
    };
    if !cfg_is(&block.attrs, NVPTX) {
        return Err(format!("the device block is not `#[cfg({NVPTX})]`"));
    }
    let inner = match unit_block(block, "the device block")? {
        [Stmt::Item(Item::Const(inner))] if inner.ident == "_" => inner,
        _ => {
            return Err(
                "the device block does not hold exactly one `const _` block of entries".into(),
            )
        }
    };
    if !cfg_is(&inner.attrs, ENTRIES) {
        return Err(format!("the entries' block is not `#[cfg({ENTRIES})]`"));
    }
    unit_block(inner, "the entries' block")?
        .iter()
        .map(|s| match s {
            Stmt::Item(Item::Fn(f)) => Ok(f),
            other => Err(format!(
                "the device block holds `{}`, not only fns",
                tokens(other)
            )),
        })
        .collect()
}

use crate::device_crate::ENTRIES_CFG as ENTRIES;

/// The statements of `const _: () = { .. };`, not empty.
fn unit_block<'a>(block: &'a syn::ItemConst, what: &str) -> Result<&'a [Stmt], String> {
    let Expr::Block(body) = &*block.expr else {
        return Err(format!("{what}'s value is not a block"));
    };
    if tokens(&block.ty) != "()" || body.block.stmts.is_empty() {
        return Err(format!("{what} is not `const _: () = {{ .. }};`"));
    }
    Ok(&body.block.stmts)
}

pub(super) fn device_fn<'a>(file: &'a File, ident: &str) -> Result<&'a ItemFn, String> {
    device_fns(file)?
        .into_iter()
        .find(|f| f.sig.ident == ident)
        .ok_or_else(|| format!("no `fn {ident}` in the device block"))
}

/// The plain single-buffer and multi-tensor entries, after checking that they and their two
/// stepped twins are the expansion's only exported functions (the stepped entries' clamp is
/// proven on the PTX by the audit, `tests/audit/ptx_audit.rs`).
pub(super) fn entries<'a>(file: &'a File, name: &str) -> Result<[&'a ItemFn; 2], String> {
    let mut exported = Exported::default();
    exported.visit_file(file);
    let mut found = exported.names;
    found.sort();
    let stepped = [
        format!("{name}_stepped"),
        format!("{}_stepped", multi_name(name)),
    ];
    let mut want = vec![name.to_string(), multi_name(name)];
    want.extend(stepped.iter().cloned());
    // A kernel with `#[derived]` scalars also exports its schedule entry, which writes record
    // words only (a `#[kernel_entry]`-kind entry, held to its `#[output]`s by the audit).
    let schedule = format!("{name}_schedule");
    let scheduled = found.contains(&schedule);
    if scheduled {
        want.push(schedule.clone());
    }
    want.sort();
    if found != want {
        return Err(format!(
            "the exported functions are {found:?}, expected {want:?}"
        ));
    }
    let mut held: Vec<String> = device_fns(file)?
        .iter()
        .map(|f| f.sig.ident.to_string())
        .collect();
    held.sort();
    let mut want = vec![name.to_string(), multi_name(name), SWEEP.to_string()];
    want.extend(stepped);
    if scheduled {
        want.push(schedule);
    }
    want.sort();
    if held != want {
        return Err(format!(
            "the device block defines {held:?}, expected {want:?}"
        ));
    }
    Ok([device_fn(file, name)?, device_fn(file, &multi_name(name))?])
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
