//! The `sweep_stores` check.
use syn::visit::Visit;
use syn::{Expr, ExprCall, File, ItemFn, Stmt};

use super::expansion::{device_fn, kernel_mod, mod_items, takes_bound_last_once};
use super::syntax::{
    cfg_is, expr_is_ident, input_name, input_names, input_type, is_exported, lets, path_is, tokens,
    NVPTX,
};
use super::visitors::{bindings, mentions, Calls, Stores};
use super::{NEW, SWEEP};
use crate::signature::BOUND;

/// The fused entries' chunk function, in the kernel module (`fused_rule`).
pub(super) const FUSED_CHUNK: &str = "__adamant_fused_chunk";

/// The raw values: `__adamant_raw` is bound to `<kernel>::update(..)` calls.
pub(super) const RAW: &str = "__adamant_raw";

fn is_call_of<'a>(e: &'a Expr, path: &[&str], absolute: bool) -> Option<&'a ExprCall> {
    match e {
        Expr::Call(c) => match &*c.func {
            Expr::Path(p) if path_is(&p.path, absolute, path) => Some(c),
            _ => None,
        },
        _ => None,
    }
}

/// The calls a loop's value is made of: exactly one call (scalar loop), or exactly
/// `::adamant_device::vector::F4([call, call, call, call])` (vector loop), each accepted by
/// `is_call`.
fn lane_calls<'a>(
    init: &'a Expr,
    lanes: usize,
    is_call: impl Fn(&'a Expr) -> Option<&'a ExprCall>,
) -> Option<Vec<&'a ExprCall>> {
    if lanes == 1 {
        return is_call(init).map(|c| vec![c]);
    }
    let Expr::Call(f4) = init else { return None };
    let Expr::Path(p) = &*f4.func else {
        return None;
    };
    if !path_is(&p.path, true, &["adamant_device", "vector", "F4"]) || f4.args.len() != 1 {
        return None;
    }
    let Expr::Array(lanes_array) = &f4.args[0] else {
        return None;
    };
    let calls: Option<Vec<&ExprCall>> = lanes_array.elems.iter().map(is_call).collect();
    calls.filter(|c| c.len() == lanes)
}

/// Whether `e` is lane `lane` of `__adamant_raw` (`__adamant_raw.0[lane]`), or `__adamant_raw`
/// itself in the scalar loop.
fn is_raw_lane(e: &Expr, lane: Option<usize>) -> bool {
    match lane {
        None => expr_is_ident(e, RAW),
        Some(l) => tokens(e) == format!("{RAW} . 0 [{l}usize]"),
    }
}

/// `__adamant_sweep` is in the device block only (the kernel module holds no fn but `update` and
/// `element`), has no ABI, is not exported, and takes the bound last, once. It has
/// a vector loop and a scalar loop; each stores the parameter buffer exactly once, with
/// `__adamant_new`, bound once in that loop to exactly the clamp
/// (`::adamant_device::clamp::weight_clamp`) of each lane of `__adamant_raw` in order (4 lanes,
/// then 1) with `sweep`'s bound (and nowhere else), and `__adamant_raw` is bound once in that loop
/// to exactly the `<kernel>::update` calls, which never get the bound or the parameter pointer;
/// there are no other `element` / `update` / clamp calls. `sweep` stores the parameter buffer nowhere else,
/// stores only through its `*mut f32` buffers, never with `op=`, a write-like call or a macro,
/// never reassigns `__adamant_new` or the bound and never rebinds any of its inputs.
pub(super) fn check_sweep_stores(file: &File, name: &str, param: &str) -> Result<(), String> {
    // Only the device block and the fused chunk define a sweep; the kernel module, which other
    // code can name, holds no fn but the three pure ones (`update`, `element`: they write only
    // the `&mut f32` state they are handed; `derived_at`: the schedule run from its `init`
    // values, on values) and the nvptx-only fused chunk, checked below.
    let items = mod_items(kernel_mod(file, name)?)?;
    let module_fns: Vec<String> = items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Fn(f) => Some(f.sig.ident.to_string()),
            _ => None,
        })
        .collect();
    if module_fns != ["update", "element", "derived_at", FUSED_CHUNK] {
        return Err(format!(
            "the kernel module defines the fns {module_fns:?}, expected [\"update\", \"element\", \"derived_at\", \"{FUSED_CHUNK}\"]"
        ));
    }
    check_sweep(device_fn(file, SWEEP)?, name, param)?;
    let fused = items
        .iter()
        .find_map(|item| match item {
            syn::Item::Fn(f) if f.sig.ident == FUSED_CHUNK => Some(f),
            _ => None,
        })
        .expect("listed above");
    check_fused_chunk(fused, name, param)
}

/// The fused chunk (`fused_rule`): nvptx only, the bound last, a sweep of its own (held to
/// [`check_sweep`]) as its first statement, and besides it no store, no clamp, no `update` or
/// `element` call, and exactly one call of that sweep, with its own bound last, never rebound.
fn check_fused_chunk(f: &ItemFn, name: &str, param: &str) -> Result<(), String> {
    if !cfg_is(&f.attrs, NVPTX) {
        return Err(format!("`{FUSED_CHUNK}` is not `#[cfg({NVPTX})]`"));
    }
    if f.sig.abi.is_some() || is_exported(&f.attrs, &f.sig) {
        return Err(format!("`{FUSED_CHUNK}` is an exported entry"));
    }
    takes_bound_last_once(&f.sig)?;
    let Some((Stmt::Item(syn::Item::Fn(inner)), rest)) = f.block.stmts.split_first() else {
        return Err(format!(
            "`{FUSED_CHUNK}` does not start with its own `{SWEEP}`"
        ));
    };
    if inner.sig.ident != SWEEP {
        return Err(format!("`{FUSED_CHUNK}` starts with `{}`", inner.sig.ident));
    }
    check_sweep(inner, name, param)?;
    let outer = syn::Block {
        brace_token: f.block.brace_token,
        stmts: rest.to_vec(),
    };
    let mut stores = Stores::default();
    stores.visit_block(&outer);
    if !stores.derefs.is_empty() || !stores.compound.is_empty() || !stores.writes.is_empty() {
        return Err(format!("`{FUSED_CHUNK}` stores outside its sweep"));
    }
    if stores.assigned.iter().any(|a| a == BOUND) || bindings(&outer).iter().any(|b| b == BOUND) {
        return Err(format!("`{FUSED_CHUNK}` reassigns or rebinds `{BOUND}`"));
    }
    let mut calls = Calls::new(name);
    calls.visit_block(&outer);
    let [call] = calls.sweep.as_slice() else {
        return Err(format!(
            "`{FUSED_CHUNK}` calls `{SWEEP}` {} times",
            calls.sweep.len()
        ));
    };
    if !calls.update.is_empty()
        || !calls.clamp.is_empty()
        || !calls.element.is_empty()
        || !calls.other.is_empty()
    {
        return Err(format!(
            "`{FUSED_CHUNK}` updates or clamps outside its sweep"
        ));
    }
    if !call.args.last().is_some_and(|a| expr_is_ident(a, BOUND)) {
        return Err(format!(
            "`{FUSED_CHUNK}` does not pass its own `{BOUND}` as `{SWEEP}`'s bound: `{}`",
            tokens(*call)
        ));
    }
    Ok(())
}

/// One sweep (the device block's, or a fused chunk's own).
fn check_sweep(sweep: &ItemFn, name: &str, param: &str) -> Result<(), String> {
    if sweep.sig.abi.is_some() || is_exported(&sweep.attrs, &sweep.sig) {
        return Err(format!("`{SWEEP}` is an exported entry"));
    }
    takes_bound_last_once(&sweep.sig)?;
    let inputs = input_names(&sweep.sig);
    let mut_buffers: Vec<String> = sweep
        .sig
        .inputs
        .iter()
        .filter(|a| input_type(a).as_deref() == Some("* mut f32"))
        .filter_map(input_name)
        .collect();
    if !mut_buffers.iter().any(|b| b == param) {
        return Err(format!("`{SWEEP}` does not take `{param}: *mut f32`"));
    }
    if let Some(shadowed) = bindings(&sweep.block)
        .into_iter()
        .find(|b| inputs.contains(&Some(b.clone())))
    {
        return Err(format!("`{SWEEP}` rebinds its input `{shadowed}`"));
    }

    let loops: Vec<&syn::ExprWhile> = sweep
        .block
        .stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::Expr(Expr::While(w), _) => Some(w),
            _ => None,
        })
        .collect();
    if loops.len() != 2 {
        return Err(format!(
            "expected 2 loops in `{SWEEP}`, found {}",
            loops.len()
        ));
    }
    let mut all = Stores::default();
    all.visit_block(&sweep.block);
    if !all.compound.is_empty() || !all.writes.is_empty() {
        return Err(format!(
            "`{SWEEP}` writes other than with `*.. = ..`: {:?} {:?}",
            all.compound, all.writes
        ));
    }
    if let Some((base, _)) = all
        .derefs
        .iter()
        .find(|(base, _)| !base.as_ref().is_some_and(|b| mut_buffers.contains(b)))
    {
        return Err(format!(
            "`{SWEEP}` stores through `{base:?}`, not one of its buffers {mut_buffers:?}"
        ));
    }
    if let Some(a) = all.assigned.iter().find(|a| *a == NEW || *a == BOUND) {
        return Err(format!("`{SWEEP}` reassigns `{a}`"));
    }
    let total = all
        .derefs
        .iter()
        .filter(|(base, _)| base.as_deref() == Some(param))
        .count();
    if total != 2 {
        return Err(format!(
            "`{SWEEP}` stores the parameter buffer `{param}` {total} times, expected 2 (one per \
             loop)"
        ));
    }
    for (which, (w, lanes)) in ["vector", "scalar"].iter().zip(loops.iter().zip([4, 1])) {
        let mut stores = Stores::default();
        stores.visit_block(&w.body);
        let param_stores: Vec<&Expr> = stores
            .derefs
            .iter()
            .filter(|(base, _)| base.as_deref() == Some(param))
            .map(|(_, value)| *value)
            .collect();
        match param_stores.as_slice() {
            [value] if expr_is_ident(value, NEW) => {}
            other => {
                return Err(format!(
                    "the {which} loop stores `{param}` {} times ({:?}), expected once with `{NEW}`",
                    other.len(),
                    other.iter().map(|v| tokens(*v)).collect::<Vec<_>>()
                ))
            }
        }
        let bound_new = lets(&w.body.stmts, NEW);
        let [(_, init)] = bound_new.as_slice() else {
            return Err(format!(
                "the {which} loop binds `{NEW}` {} times",
                bound_new.len()
            ));
        };
        let clamp_path = ["adamant_device", "clamp", "weight_clamp"];
        let Some(clamps) = lane_calls(init, lanes, |e| is_call_of(e, &clamp_path, true)) else {
            return Err(format!(
                "the {which} loop's `{NEW}` is not exactly {lanes} clamp call(s): `{}`",
                tokens(*init)
            ));
        };
        for (lane, call) in clamps.iter().enumerate() {
            let lane = (lanes > 1).then_some(lane);
            let args: Vec<&Expr> = call.args.iter().collect();
            let ok = matches!(args.as_slice(), [raw, b] if is_raw_lane(raw, lane)
                && expr_is_ident(b, BOUND));
            if !ok {
                return Err(format!(
                    "a clamp in the {which} loop is `{}`, not lane {lane:?} of `{RAW}` with `{BOUND}`",
                    tokens(*call)
                ));
            }
        }
        let bound_raw = lets(&w.body.stmts, RAW);
        let [(_, raw_init)] = bound_raw.as_slice() else {
            return Err(format!(
                "the {which} loop binds `{RAW}` {} times",
                bound_raw.len()
            ));
        };
        let Some(updates) =
            lane_calls(raw_init, lanes, |e| is_call_of(e, &[name, "update"], false))
        else {
            return Err(format!(
                "the {which} loop's `{RAW}` is not exactly {lanes} `{name}::update` call(s): `{}`",
                tokens(*raw_init)
            ));
        };
        for call in updates {
            if call
                .args
                .iter()
                .any(|a| mentions(a, BOUND) || mentions(a, param))
            {
                return Err(format!(
                    "an `update` call in the {which} loop receives the bound or the parameter \
                     buffer `{param}`: `{}`",
                    tokens(call)
                ));
            }
        }
    }
    let mut calls = Calls::new(name);
    calls.visit_block(&sweep.block);
    if calls.update.len() != 5
        || calls.clamp.len() != 5
        || !calls.element.is_empty()
        || !calls.other.is_empty()
        || !calls.sweep.is_empty()
    {
        return Err(format!(
            "`{SWEEP}` calls `update` {} times and the clamp {} times (expected 5 each), \
             `element` {} times, `{SWEEP}` {} times and {:?}",
            calls.update.len(),
            calls.clamp.len(),
            calls.element.len(),
            calls.sweep.len(),
            calls.other
        ));
    }
    if all.assigned.iter().any(|a| a == RAW) {
        return Err(format!("`{SWEEP}` reassigns `{RAW}`"));
    }
    Ok(())
}
