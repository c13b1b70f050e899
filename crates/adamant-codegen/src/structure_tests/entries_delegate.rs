//! The `entries_delegate` check.
use syn::visit::Visit;
use syn::{Expr, File, Stmt};

use super::expansion::{buffer_count, device_fn, entries};
use super::syntax::{expr_is_ident, input_names, input_type, lets, tokens};
use super::visitors::{base_ident, bindings, mentions, Calls, Stores};
use super::SWEEP;
use crate::signature::{BOUND, SCALES};

/// What the multi entry passes as the sweep's bound: its chunk's tensor's bound.
const TENSOR_BOUND: &str = "__adamant_bound";

/// Each entry calls `__adamant_sweep` exactly once, with as many arguments as `sweep` takes: its
/// buffers first, under `sweep`'s names, and last its bound (mentioned nowhere else in the call,
/// never rebound or reassigned in the entry): the single entry's own `weight_clamp_max_abs`, the
/// multi entry's `__adamant_bound`, bound once in its chunk loop to
/// `multi::tensor_bound(weight_clamp_max_abs, *weight_clamp_scales.add(__adamant_tensor))`. The
/// multi entry rebinds each buffer, once, in its chunk loop, from that buffer's own table. Neither entry writes
/// anything itself (no `*.. = ..`, no write-like call, no macro) nor calls `update` / `element`.
pub(super) fn check_entries_delegate(file: &File, name: &str, _param: &str) -> Result<(), String> {
    let [single, multi] = entries(file, name)?;
    let sweep = device_fn(file, SWEEP)?;
    let n = buffer_count(sweep)?;
    let sweep_inputs = input_names(&sweep.sig);
    for (entry, bound) in [(single, BOUND), (multi, TENSOR_BOUND)] {
        let ident = &entry.sig.ident;
        let mut calls = Calls::new(name);
        calls.visit_block(&entry.block);
        let [call] = calls.sweep.as_slice() else {
            return Err(format!(
                "`{ident}` calls `{SWEEP}` {} times",
                calls.sweep.len()
            ));
        };
        if !calls.element.is_empty() || !calls.other.is_empty() {
            return Err(format!(
                "`{ident}` calls {} `element`s and {:?} itself",
                calls.element.len(),
                calls.other
            ));
        }
        let args: Vec<&Expr> = call.args.iter().collect();
        if args.len() != sweep_inputs.len() {
            return Err(format!(
                "`{ident}` passes {} arguments to `{SWEEP}`, which takes {}",
                args.len(),
                sweep_inputs.len()
            ));
        }
        let (last, rest) = args.split_last().expect("sweep takes the bound");
        if !expr_is_ident(last, bound) || rest.iter().any(|a| mentions(a, bound)) {
            return Err(format!(
                "`{ident}` passes `{}` as `{SWEEP}`'s bound (last argument)",
                tokens(*last)
            ));
        }
        for (arg, want) in args[..n].iter().zip(&sweep_inputs[..n]) {
            if !want.as_deref().is_some_and(|w| expr_is_ident(arg, w)) {
                return Err(format!(
                    "`{ident}` passes `{}` as `{SWEEP}`'s buffer `{}`",
                    tokens(*arg),
                    want.as_deref().unwrap_or("?")
                ));
            }
        }
        let bound_bindings = bindings(&entry.block);
        if bound_bindings.iter().any(|b| b == BOUND)
            || bound_bindings.iter().filter(|b| *b == bound).count() > usize::from(bound != BOUND)
        {
            return Err(format!("`{ident}` rebinds `{bound}`"));
        }
        let mut stores = Stores::default();
        stores.visit_block(&entry.block);
        if stores.assigned.iter().any(|a| a == BOUND || a == bound) {
            return Err(format!("`{ident}` reassigns `{bound}`"));
        }
        if stores.stores_anything() {
            return Err(format!(
                "`{ident}` writes memory itself: {:?} {:?} {:?}",
                stores
                    .derefs
                    .iter()
                    .map(|(b, v)| format!("*{b:?} = {}", tokens(*v)))
                    .collect::<Vec<_>>(),
                stores.compound,
                stores.writes
            ));
        }
    }
    // The multi entry's chunk pointers: `let b: <sweep's type> = (*b.add(..) as ..).add(..);`.
    let chunk_loop = multi
        .block
        .stmts
        .iter()
        .find_map(|s| match s {
            Stmt::Expr(Expr::While(w), _) => Some(w),
            _ => None,
        })
        .ok_or("the multi entry has no chunk loop")?;
    let tensor_bound = lets(&chunk_loop.body.stmts, TENSOR_BOUND);
    let want = format!("multi :: tensor_bound ({BOUND} , * {SCALES} . add (__adamant_tensor))");
    let [(ty, init)] = tensor_bound.as_slice() else {
        return Err(format!(
            "the chunk loop binds `{TENSOR_BOUND}` {} times",
            tensor_bound.len()
        ));
    };
    if tokens(*ty) != "f32" || !tokens(*init).ends_with(&want) {
        return Err(format!(
            "the chunk loop binds `{TENSOR_BOUND}: {}` to `{}`, not to `{want}`",
            tokens(*ty),
            tokens(*init)
        ));
    }
    for (arg, buffer) in sweep.sig.inputs.iter().zip(&sweep_inputs).take(n) {
        let buffer = buffer.as_deref().unwrap_or("?");
        let rebound = lets(&chunk_loop.body.stmts, buffer);
        let [(ty, init)] = rebound.as_slice() else {
            return Err(format!(
                "the chunk loop binds `{buffer}` {} times",
                rebound.len()
            ));
        };
        if Some(tokens(*ty)) != input_type(arg) || base_ident(init).as_deref() != Some(buffer) {
            return Err(format!(
                "the chunk loop binds `{buffer}: {}` from `{}`",
                tokens(*ty),
                tokens(*init)
            ));
        }
    }
    Ok(())
}
