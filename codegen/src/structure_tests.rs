//! Structural checks of the `#[optimizer_kernel]` expansion, on the syn tree rather than on text:
//! the nvptx entry takes `weight_clamp_max_abs: f32` last, stores the parameter buffer exactly once
//! per loop and only with `__adamant_new` (bound from `<kernel>::element`), and `element` ends in
//! the clamp. Each check returns `Err` on a violation; `tampered_expansions_are_caught` feeds the
//! checks expansions with part of the epilogue removed or bypassed, to show they would catch a
//! macro that stopped stamping it.
use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::visit::{self, Visit};
use syn::{
    Expr, ExprAssign, ExprCall, ExprPath, File, FnArg, Item, ItemFn, ItemMod, Pat, Stmt, UnOp,
};

use crate::signature::{is_ident_type, BOUND};
use crate::test_kernels;

const NEW: &str = "__adamant_new";

fn expand(kernel: TokenStream) -> File {
    let tokens = crate::optimizer::expand(quote!(), kernel).expect("valid kernel");
    syn::parse2(tokens).expect("the expansion parses as a file")
}

fn path_is(path: &syn::Path, leading_colon: bool, segments: &[&str]) -> bool {
    path.leading_colon.is_some() == leading_colon
        && path.segments.len() == segments.len()
        && path
            .segments
            .iter()
            .zip(segments)
            .all(|(s, want)| s.ident == want)
}

fn expr_is_ident(expr: &Expr, name: &str) -> bool {
    matches!(expr, Expr::Path(p) if p.qself.is_none() && p.path.is_ident(name))
}

fn cfg_is(attrs: &[syn::Attribute], cfg: &str) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().replace(' ', "") == cfg.replace(' ', ""))
    })
}

/// The one `extern "gpu-kernel"` fn of the expansion.
fn entry(file: &File) -> Result<&ItemFn, String> {
    let entries: Vec<&ItemFn> = file
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Fn(f)
                if f.sig
                    .abi
                    .as_ref()
                    .and_then(|a| a.name.as_ref())
                    .map(|n| n.value())
                    == Some("gpu-kernel".into()) =>
            {
                Some(f)
            }
            _ => None,
        })
        .collect();
    match entries.as_slice() {
        [one] => Ok(one),
        other => Err(format!(
            "expected one gpu-kernel entry, found {}",
            other.len()
        )),
    }
}

fn entry_mut(file: &mut File) -> &mut ItemFn {
    file.items
        .iter_mut()
        .find_map(|item| match item {
            Item::Fn(f) if f.sig.abi.is_some() => Some(f),
            _ => None,
        })
        .expect("an entry")
}

fn kernel_mod<'a>(file: &'a File, name: &str) -> Result<&'a ItemMod, String> {
    file.items
        .iter()
        .find_map(|item| match item {
            Item::Mod(m) if m.ident == name => Some(m),
            _ => None,
        })
        .ok_or_else(|| format!("no `mod {name}` in the expansion"))
}

fn mod_fn<'a>(m: &'a ItemMod, name: &str) -> Result<&'a ItemFn, String> {
    let (_, items) = m.content.as_ref().ok_or("the kernel module is inline")?;
    items
        .iter()
        .find_map(|item| match item {
            Item::Fn(f) if f.sig.ident == name => Some(f),
            _ => None,
        })
        .ok_or_else(|| format!("no `fn {name}` in the kernel module"))
}

fn last_input_is_bound(f: &ItemFn) -> Result<(), String> {
    match f.sig.inputs.last() {
        Some(FnArg::Typed(t))
            if matches!(&*t.pat, Pat::Ident(p) if p.ident == BOUND)
                && is_ident_type(&t.ty, "f32") =>
        {
            Ok(())
        }
        other => Err(format!(
            "`{}`'s last input is `{}`, not `{BOUND}: f32`",
            f.sig.ident,
            other
                .map(|a| a.to_token_stream().to_string())
                .unwrap_or_default()
        )),
    }
}

/// The entry is nvptx-only, exported, and takes the clamp bound last (exactly once); the host
/// descriptor lists the bound last too.
fn check_bound_last(file: &File, name: &str) -> Result<(), String> {
    let entry = entry(file)?;
    if entry.sig.ident != name {
        return Err(format!("the entry is named `{}`", entry.sig.ident));
    }
    if !cfg_is(&entry.attrs, "target_arch = \"nvptx64\"") {
        return Err("the entry is not `#[cfg(target_arch = \"nvptx64\")]`".into());
    }
    if !entry.attrs.iter().any(|a| a.path().is_ident("no_mangle")) {
        return Err("the entry is not `#[no_mangle]`".into());
    }
    last_input_is_bound(entry)?;
    let bounds = entry
        .sig
        .inputs
        .iter()
        .filter(|a| matches!(a, FnArg::Typed(t) if matches!(&*t.pat, Pat::Ident(p) if p.ident == BOUND)))
        .count();
    if bounds != 1 {
        return Err(format!("the entry takes `{BOUND}` {bounds} times"));
    }

    let module = kernel_mod(file, name)?;
    let (_, items) = module
        .content
        .as_ref()
        .ok_or("the kernel module is inline")?;
    let descriptor = items
        .iter()
        .find_map(|item| match item {
            Item::Static(s) if s.ident == "DESCRIPTOR" => Some(s),
            _ => None,
        })
        .ok_or("no DESCRIPTOR")?;
    let Expr::Struct(desc) = &*descriptor.expr else {
        return Err("DESCRIPTOR is not a struct literal".into());
    };
    let params = desc
        .fields
        .iter()
        .find(|f| f.member.to_token_stream().to_string() == "params")
        .ok_or("DESCRIPTOR has no params")?;
    let Expr::Reference(params) = &params.expr else {
        return Err("params is not `&[..]`".into());
    };
    let Expr::Array(params) = &*params.expr else {
        return Err("params is not `&[..]`".into());
    };
    let role_of = |param: &Expr| -> Option<String> {
        let Expr::Struct(s) = param else { return None };
        let role = s
            .fields
            .iter()
            .find(|f| f.member.to_token_stream().to_string() == "role")?;
        let Expr::Path(p) = &role.expr else {
            return None;
        };
        Some(p.path.segments.last()?.ident.to_string())
    };
    let roles: Vec<Option<String>> = params.elems.iter().map(role_of).collect();
    let clamp_roles = roles
        .iter()
        .filter(|r| r.as_deref() == Some("ClampBound"))
        .count();
    if roles.last().cloned().flatten().as_deref() != Some("ClampBound") || clamp_roles != 1 {
        return Err(format!(
            "the descriptor's params do not end in the one ClampBound: {roles:?}"
        ));
    }
    let last = params.elems.last().map(|e| e.to_token_stream().to_string());
    if !last.is_some_and(|l| l.contains(&format!("\"{BOUND}\""))) {
        return Err(format!(
            "the descriptor's last param is not named `{BOUND}`"
        ));
    }
    if params.elems.len() != entry.sig.inputs.len() {
        return Err("the descriptor and the entry have different parameter counts".into());
    }
    Ok(())
}

/// The pointer a `*<ptr>.add(i)` / `*(<ptr> as *mut F4).add(i)` store writes through.
fn store_base(target: &Expr) -> Option<String> {
    match target {
        Expr::MethodCall(m) => store_base(&m.receiver),
        Expr::Paren(p) => store_base(&p.expr),
        Expr::Cast(c) => store_base(&c.expr),
        Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        _ => None,
    }
}

/// Every `*.. = ..` and every assignment to `__adamant_new` under a node.
#[derive(Default)]
struct Stores<'a> {
    /// (base pointer, stored value)
    derefs: Vec<(Option<String>, &'a Expr)>,
    new_reassigned: usize,
}

impl<'a> Visit<'a> for Stores<'a> {
    fn visit_expr_assign(&mut self, node: &'a ExprAssign) {
        match &*node.left {
            Expr::Unary(u) if matches!(u.op, UnOp::Deref(_)) => {
                self.derefs.push((store_base(&u.expr), &node.right));
            }
            left if expr_is_ident(left, NEW) => self.new_reassigned += 1,
            _ => {}
        }
        visit::visit_expr_assign(self, node);
    }
}

/// Calls to `<kernel>::element`, and any call to an `update` (which would skip the clamp).
struct Calls<'a> {
    kernel: &'a str,
    element: Vec<&'a ExprCall>,
    other_kernel_calls: Vec<String>,
}

impl<'a> Visit<'a> for Calls<'a> {
    fn visit_expr_call(&mut self, node: &'a ExprCall) {
        if let Expr::Path(ExprPath { path, .. }) = &*node.func {
            if path_is(path, false, &[self.kernel, "element"]) {
                self.element.push(node);
            } else if path.segments.iter().any(|s| s.ident == "update") {
                self.other_kernel_calls
                    .push(path.to_token_stream().to_string());
            }
        }
        visit::visit_expr_call(self, node);
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

fn mentions(expr: &Expr, ident: &str) -> bool {
    let mut m = Mentions {
        ident,
        found: false,
    };
    m.visit_expr(expr);
    m.found
}

/// The entry has a vector loop and a scalar loop; each stores the parameter buffer exactly once,
/// with `__adamant_new`, which is bound once from `<kernel>::element` (4 lanes, then 1) and never
/// reassigned; no store to the parameter buffer happens outside them, and `element` never
/// receives the parameter buffer's pointer.
fn check_param_stores(file: &File, name: &str, param: &str) -> Result<(), String> {
    let entry = entry(file)?;
    let loops: Vec<&syn::ExprWhile> = entry
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
            "expected 2 loops in the entry, found {}",
            loops.len()
        ));
    }
    let mut all = Stores::default();
    all.visit_item_fn(entry);
    let total = all
        .derefs
        .iter()
        .filter(|(base, _)| base.as_deref() == Some(param))
        .count();
    if total != 2 {
        return Err(format!(
            "the entry stores the parameter buffer `{param}` {total} times, expected 2 (one per loop)"
        ));
    }
    if all.derefs.iter().any(|(base, _)| base.is_none()) {
        return Err("a store through an unrecognised pointer expression".into());
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
                    other
                        .iter()
                        .map(|v| v.to_token_stream().to_string())
                        .collect::<Vec<_>>()
                ))
            }
        }
        if stores.new_reassigned != 0 {
            return Err(format!("the {which} loop reassigns `{NEW}`"));
        }
        let lets: Vec<&syn::Local> = w
            .body
            .stmts
            .iter()
            .filter_map(|s| match s {
                Stmt::Local(l) if matches!(&l.pat, Pat::Type(t) if matches!(&*t.pat, Pat::Ident(i) if i.ident == NEW)) => Some(l),
                _ => None,
            })
            .collect();
        let [binding] = lets.as_slice() else {
            return Err(format!(
                "the {which} loop binds `{NEW}` {} times",
                lets.len()
            ));
        };
        let init = &binding
            .init
            .as_ref()
            .ok_or(format!("`{NEW}` has no value"))?
            .expr;
        let mut calls = Calls {
            kernel: name,
            element: vec![],
            other_kernel_calls: vec![],
        };
        calls.visit_expr(init);
        if calls.element.len() != lanes || !calls.other_kernel_calls.is_empty() {
            return Err(format!(
                "the {which} loop's `{NEW}` comes from {} `{name}::element` calls (expected \
                 {lanes}) and {:?}",
                calls.element.len(),
                calls.other_kernel_calls
            ));
        }
        for call in &calls.element {
            if !call.args.last().is_some_and(|a| expr_is_ident(a, BOUND)) {
                return Err(format!(
                    "an `element` call in the {which} loop does not pass `{BOUND}` last"
                ));
            }
            if call.args.iter().any(|a| mentions(a, param)) {
                return Err(format!(
                    "`element` receives the parameter buffer `{param}` in the {which} loop"
                ));
            }
        }
    }
    let mut calls = Calls {
        kernel: name,
        element: vec![],
        other_kernel_calls: vec![],
    };
    calls.visit_item_fn(entry);
    if calls.element.len() != 5 || !calls.other_kernel_calls.is_empty() {
        return Err(format!(
            "the entry calls `element` {} times (expected 5) and {:?}",
            calls.element.len(),
            calls.other_kernel_calls
        ));
    }
    Ok(())
}

/// `<kernel>::element` takes the bound last and is exactly
/// `::adamant_kernels::clamp::weight_clamp(self::update(..), weight_clamp_max_abs)`.
fn check_element_clamps(file: &File, name: &str) -> Result<(), String> {
    let module = kernel_mod(file, name)?;
    let element = mod_fn(module, "element")?;
    let update = mod_fn(module, "update")?;
    last_input_is_bound(element)?;
    if element.sig.inputs.len() != update.sig.inputs.len() + 1 {
        return Err("`element` does not take `update`'s inputs plus the bound".into());
    }
    let [Stmt::Expr(Expr::Call(clamp), None)] = element.block.stmts.as_slice() else {
        return Err(format!(
            "`element`'s body is not one call: {}",
            element.block.to_token_stream()
        ));
    };
    let Expr::Path(func) = &*clamp.func else {
        return Err("`element` does not call a path".into());
    };
    if !path_is(
        &func.path,
        true,
        &["adamant_kernels", "clamp", "weight_clamp"],
    ) {
        return Err(format!(
            "`element` calls `{}`, not `::adamant_kernels::clamp::weight_clamp`",
            func.path.to_token_stream()
        ));
    }
    let args: Vec<&Expr> = clamp.args.iter().collect();
    let [Expr::Call(inner), bound] = args.as_slice() else {
        return Err("`weight_clamp` does not take (update(..), bound)".into());
    };
    let calls_update =
        matches!(&*inner.func, Expr::Path(p) if path_is(&p.path, false, &["self", "update"]));
    if !calls_update || !expr_is_ident(bound, BOUND) {
        return Err(format!(
            "`element` clamps `{}` with `{}`",
            inner.to_token_stream(),
            bound.to_token_stream()
        ));
    }
    if inner.args.len() != update.sig.inputs.len() {
        return Err("`element` does not forward every argument to `update`".into());
    }
    Ok(())
}

fn check_all(file: &File, name: &str, param: &str) -> Result<(), String> {
    check_bound_last(file, name)?;
    check_param_stores(file, name, param)?;
    check_element_clamps(file, name)
}

#[test]
fn every_test_kernel_has_the_epilogue() {
    for (name, param, kernel) in test_kernels::all() {
        let file = expand(kernel);
        if let Err(e) = check_all(&file, name, param) {
            panic!("{name}: {e}\n{}", prettyplease::unparse(&file));
        }
    }
}

fn loops_mut(file: &mut File) -> Vec<&mut syn::ExprWhile> {
    entry_mut(file)
        .block
        .stmts
        .iter_mut()
        .filter_map(|s| match s {
            Stmt::Expr(Expr::While(w), _) => Some(w),
            _ => None,
        })
        .collect()
}

fn element_mut<'a>(file: &'a mut File, name: &str) -> &'a mut ItemFn {
    let module = file
        .items
        .iter_mut()
        .find_map(|item| match item {
            Item::Mod(m) if m.ident == name => Some(m),
            _ => None,
        })
        .expect("the kernel module");
    module
        .content
        .as_mut()
        .expect("inline")
        .1
        .iter_mut()
        .find_map(|item| match item {
            Item::Fn(f) if f.sig.ident == "element" => Some(f),
            _ => None,
        })
        .expect("element")
}

/// Each tampering removes or bypasses part of the epilogue; the checks must notice every one.
#[test]
fn tampered_expansions_are_caught() {
    let (name, param) = ("curiosity_adam_step", "p");
    let pristine = expand(test_kernels::curiosity_adam_step());
    check_all(&pristine, name, param).expect("the pristine expansion passes");

    let mut tampered: Vec<(&str, File)> = vec![];

    let mut f = pristine.clone();
    entry_mut(&mut f).sig.inputs.pop();
    tampered.push(("entry without the bound", f));

    let mut f = pristine.clone();
    let inputs = &mut entry_mut(&mut f).sig.inputs;
    let bound = inputs.pop().expect("bound").into_value();
    inputs.insert(0, bound);
    tampered.push(("bound moved first", f));

    let mut f = pristine.clone();
    let element = element_mut(&mut f, name);
    let Some(Stmt::Expr(Expr::Call(clamp), None)) = element.block.stmts.first() else {
        panic!("element body");
    };
    let unclamped = clamp.args[0].clone();
    element.block.stmts = vec![Stmt::Expr(unclamped, None)];
    tampered.push(("element returns update() unclamped", f));

    let mut f = pristine.clone();
    let element = element_mut(&mut f, name);
    element.block = syn::parse_quote!({
        ::adamant_kernels::clamp::weight_clamp(
            self::update(
                p,
                g,
                m,
                v,
                v_max,
                lr,
                beta1,
                beta2,
                eps,
                bias_correction1,
                bias_correction2,
            ),
            f32::INFINITY,
        )
    });
    tampered.push(("element clamps with another bound", f));

    let mut f = pristine.clone();
    let scalar = loops_mut(&mut f).pop().expect("scalar loop");
    scalar
        .body
        .stmts
        .insert(0, syn::parse_quote!(*p.add(__adamant_i) = __adamant_p;));
    tampered.push(("second, unclamped store in the scalar loop", f));

    let mut f = pristine.clone();
    let vector = loops_mut(&mut f).remove(0);
    for stmt in &mut vector.body.stmts {
        if let Stmt::Expr(Expr::Assign(assign), _) = stmt {
            if assign.to_token_stream().to_string().starts_with("* (p as") {
                *assign.right = syn::parse_quote!(__adamant_p);
            }
        }
    }
    tampered.push(("vector loop stores the loaded value", f));

    let mut f = pristine.clone();
    let scalar = loops_mut(&mut f).pop().expect("scalar loop");
    let store = scalar.body.stmts.len() - 1;
    scalar.body.stmts.insert(
        store,
        syn::parse_quote!(__adamant_new = curiosity_adam_step::update(__adamant_p, __adamant_g, &mut __adamant_m, &mut __adamant_v, &mut __adamant_v_max, lr, beta1, beta2, eps, bias_correction1, bias_correction2);),
    );
    tampered.push(("scalar loop overwrites the clamped value", f));

    let mut f = pristine.clone();
    let scalar = loops_mut(&mut f).pop().expect("scalar loop");
    let new_binding = scalar
        .body
        .stmts
        .iter_mut()
        .find_map(|s| match s {
            Stmt::Local(l) if l.to_token_stream().to_string().contains(NEW) => Some(l),
            _ => None,
        })
        .expect("binding");
    new_binding.init.as_mut().expect("init").expr = syn::parse_quote!(curiosity_adam_step::update(
        __adamant_p,
        __adamant_g,
        &mut __adamant_m,
        &mut __adamant_v,
        &mut __adamant_v_max,
        lr,
        beta1,
        beta2,
        eps,
        bias_correction1,
        bias_correction2
    ));
    tampered.push(("scalar loop stores update() directly", f));

    for (what, file) in tampered {
        assert!(
            check_all(&file, name, param).is_err(),
            "the checks missed: {what}\n{}",
            prettyplease::unparse(&file)
        );
    }
}
