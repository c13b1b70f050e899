//! Structural checks of the `#[optimizer_kernel]` expansion, on the syn tree rather than on text.
//!
//! The expansion is `mod <kernel> { update, element, sweep, DESCRIPTOR, MULTI_DESCRIPTOR, Buffers,
//! Scalars, Entry }` plus two nvptx entries, `<kernel>` (one buffer set) and `<kernel>_multi`
//! (pointer tables and a chunk table), which both hand their work to `<kernel>::sweep`:
//!
//! - [`check_entry_signatures`]: exactly those two exported functions, each nvptx-only,
//!   `#[no_mangle]`, taking `weight_clamp_max_abs: f32` last and exactly once; the single entry
//!   takes `sweep`'s buffers and `len`, the multi entry one `*const u64` table per buffer, then
//!   `chunks` and `n_chunks`, and both the same uniforms.
//! - [`check_descriptors`]: `DESCRIPTOR` and `MULTI_DESCRIPTOR` name their entries' parameters in
//!   order and end in their one `ClampBound`; the multi descriptor's buffers have the `*Table`
//!   roles; both are registered, `Entry` points at them, and `args` / `multi_args` pass the
//!   bound last.
//! - [`check_entries_delegate`]: each entry calls `<kernel>::sweep` exactly once, passing its own
//!   bound last (never shadowed or reassigned) and the buffers in `sweep`'s order (the multi
//!   entry's taken from their own tables), and stores nothing itself.
//! - [`check_sweep_stores`]: `sweep` is device-only, takes the bound last, and stores the
//!   parameter buffer exactly twice, once in its vector loop and once in its scalar loop, always
//!   `__adamant_new`, bound right from `self::element` calls (4 lanes, then 1) that get the bound
//!   last and never the parameter pointer; no other kind of write.
//! - [`check_element_clamps`]: `element`'s body is exactly
//!   `::adamant_kernels::clamp::weight_clamp(self::update(..), weight_clamp_max_abs)`.
//!
//! Each check returns `Err` on a violation; `tampered_expansions_are_caught` feeds every check
//! expansions with part of the epilogue removed or bypassed, to show that it would catch a macro
//! that stopped stamping it.
use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::ext::IdentExt;
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{
    BinOp, Expr, ExprAssign, ExprBinary, ExprCall, ExprMethodCall, ExprPath, File, FnArg, ImplItem,
    ImplItemFn, Item, ItemFn, ItemImpl, ItemMod, Pat, Signature, Stmt, Token, UnOp,
};

use crate::signature::{is_ident_type, BOUND, CHUNKS, LEN, N_CHUNKS};
use crate::test_kernels;

const NEW: &str = "__adamant_new";
const SWEEP: &str = "sweep";

/// A structural check: `(expansion, kernel name, parameter buffer name)`.
type Check = fn(&File, &str, &str) -> Result<(), String>;

const CHECKS: [(&str, Check); 5] = [
    ("entry_signatures", check_entry_signatures),
    ("descriptors", check_descriptors),
    ("entries_delegate", check_entries_delegate),
    ("sweep_stores", check_sweep_stores),
    ("element_clamps", check_element_clamps),
];

fn expand(kernel: TokenStream) -> File {
    let tokens = crate::optimizer::expand(quote!(), kernel).expect("valid kernel");
    syn::parse2(tokens).expect("the expansion parses as a file")
}

fn multi_name(name: &str) -> String {
    format!("{name}_multi")
}

fn tokens(t: &impl ToTokens) -> String {
    t.to_token_stream().to_string()
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

const NVPTX: &str = "target_arch = \"nvptx64\"";

fn is_gpu_kernel(sig: &Signature) -> bool {
    sig.abi
        .as_ref()
        .and_then(|a| a.name.as_ref())
        .is_some_and(|n| n.value() == "gpu-kernel")
}

/// Whether a function is (or could be) an exported symbol: a gpu-kernel, or `no_mangle` /
/// `export_name` in any spelling (`#[unsafe(no_mangle)]`, under `cfg_attr`, ...).
fn is_exported(attrs: &[syn::Attribute], sig: &Signature) -> bool {
    is_gpu_kernel(sig)
        || attrs.iter().any(|a| {
            let a = tokens(a);
            a.contains("no_mangle") || a.contains("export_name")
        })
}

/// Every exported function of the expansion, at any depth (module, impl, fn body).
#[derive(Default)]
struct Exported {
    names: Vec<String>,
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

fn top_fn<'a>(file: &'a File, ident: &str) -> Result<&'a ItemFn, String> {
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
fn entries<'a>(file: &'a File, name: &str) -> Result<[&'a ItemFn; 2], String> {
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

fn kernel_mod<'a>(file: &'a File, name: &str) -> Result<&'a ItemMod, String> {
    file.items
        .iter()
        .find_map(|item| match item {
            Item::Mod(m) if m.ident == name => Some(m),
            _ => None,
        })
        .ok_or_else(|| format!("no `mod {name}` in the expansion"))
}

fn mod_items(m: &ItemMod) -> Result<&[Item], String> {
    Ok(&m.content.as_ref().ok_or("the kernel module is inline")?.1)
}

fn mod_fn<'a>(m: &'a ItemMod, name: &str) -> Result<&'a ItemFn, String> {
    mod_items(m)?
        .iter()
        .find_map(|item| match item {
            Item::Fn(f) if f.sig.ident == name => Some(f),
            _ => None,
        })
        .ok_or_else(|| format!("no `fn {name}` in the kernel module"))
}

fn input_name(arg: &FnArg) -> Option<String> {
    match arg {
        FnArg::Typed(t) => match &*t.pat {
            Pat::Ident(p) => Some(p.ident.unraw().to_string()),
            _ => None,
        },
        FnArg::Receiver(_) => None,
    }
}

fn input_names(sig: &Signature) -> Vec<Option<String>> {
    sig.inputs.iter().map(input_name).collect()
}

fn input_type(arg: &FnArg) -> Option<String> {
    match arg {
        FnArg::Typed(t) => Some(tokens(&t.ty)),
        FnArg::Receiver(_) => None,
    }
}

/// The number of buffers, read off `sweep`: the inputs before `len`.
fn buffer_count(sweep: &ItemFn) -> Result<usize, String> {
    input_names(&sweep.sig)
        .iter()
        .position(|n| n.as_deref() == Some(LEN))
        .ok_or_else(|| format!("`{SWEEP}` takes no `{LEN}`"))
}

/// `weight_clamp_max_abs: f32` is the last input (a plain binding: not `mut`, not `ref`) and no
/// other input has that name.
fn takes_bound_last_once(sig: &Signature) -> Result<(), String> {
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

/// Exactly `<kernel>` and `<kernel>_multi` are exported; both are nvptx-only `#[no_mangle]
/// unsafe extern "gpu-kernel"` fns that take the bound last, once. The single entry takes
/// `sweep`'s buffer pointers and `len`; the multi entry takes a `*const u64` table per buffer (in
/// the same order, under the same names), `chunks` and `n_chunks`; then both take the same
/// uniforms and the bound.
fn check_entry_signatures(file: &File, name: &str, _param: &str) -> Result<(), String> {
    let [single, multi] = entries(file, name)?;
    for entry in [single, multi] {
        let ident = &entry.sig.ident;
        if !cfg_is(&entry.attrs, NVPTX) {
            return Err(format!("`{ident}` is not `#[cfg({NVPTX})]`"));
        }
        if !entry.attrs.iter().any(|a| a.path().is_ident("no_mangle")) {
            return Err(format!("`{ident}` is not `#[no_mangle]`"));
        }
        if !is_gpu_kernel(&entry.sig) || entry.sig.unsafety.is_none() {
            return Err(format!(
                "`{ident}` is not an `unsafe extern \"gpu-kernel\" fn`"
            ));
        }
        takes_bound_last_once(&entry.sig)?;
    }
    let sweep = mod_fn(kernel_mod(file, name)?, SWEEP)?;
    let n = buffer_count(sweep)?;
    let single_inputs: Vec<String> = single.sig.inputs.iter().map(tokens).collect();
    let multi_inputs: Vec<String> = multi.sig.inputs.iter().map(tokens).collect();
    let sweep_inputs: Vec<String> = sweep.sig.inputs.iter().map(tokens).collect();
    if single_inputs.len() < n + 2 || single_inputs[..=n] != sweep_inputs[..=n] {
        return Err(format!(
            "`{name}` does not start with `{SWEEP}`'s buffers and `{LEN}`: {single_inputs:?}"
        ));
    }
    let tables: Vec<String> = input_names(&sweep.sig)[..n]
        .iter()
        .map(|b| format!("{} : * const u64", b.as_deref().unwrap_or("?")))
        .collect();
    let chunk_params = [
        format!("{CHUNKS} : * const :: adamant_kernels :: multi :: Chunk"),
        format!("{N_CHUNKS} : u32"),
    ];
    if multi_inputs.len() < n + 3
        || multi_inputs[..n] != tables[..]
        || multi_inputs[n..n + 2] != chunk_params[..]
    {
        return Err(format!(
            "`{}` does not start with the buffer tables, `{CHUNKS}` and `{N_CHUNKS}`: \
             {multi_inputs:?}",
            multi.sig.ident
        ));
    }
    if single_inputs[n + 1..] != multi_inputs[n + 2..] {
        return Err(format!(
            "the entries take different uniforms: {:?} and {:?}",
            &single_inputs[n + 1..],
            &multi_inputs[n + 2..]
        ));
    }
    Ok(())
}

struct Param {
    name: String,
    /// The `ParamRole` variant.
    role: String,
    /// The whole role expression (a `UniformPtr` carries its default).
    role_tokens: String,
}

struct Descriptor {
    name: String,
    params: Vec<Param>,
}

fn struct_field<'a>(s: &'a syn::ExprStruct, field: &str) -> Result<&'a Expr, String> {
    s.fields
        .iter()
        .find(|f| tokens(&f.member) == field)
        .map(|f| &f.expr)
        .ok_or_else(|| format!("`{}` has no field `{field}`", tokens(&s.path)))
}

fn str_lit(e: &Expr) -> Result<String, String> {
    match e {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Ok(s.value()),
        other => Err(format!("`{}` is not a string literal", tokens(other))),
    }
}

fn role_variant(path: &syn::Path) -> Result<String, String> {
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    match segments.as_slice() {
        [a, b, c, variant]
            if path.leading_colon.is_some()
                && [a, b, c] == ["adamant_kernels", "abi", "ParamRole"] =>
        {
            Ok(variant.clone())
        }
        _ => Err(format!(
            "`{}` is not a `::adamant_kernels::abi::ParamRole`",
            tokens(path)
        )),
    }
}

fn descriptor(items: &[Item], ident: &str) -> Result<Descriptor, String> {
    let s = items
        .iter()
        .find_map(|item| match item {
            Item::Static(s) if s.ident == ident => Some(s),
            _ => None,
        })
        .ok_or_else(|| format!("no `{ident}`"))?;
    if !cfg_is(&s.attrs, &format!("not({NVPTX})")) {
        return Err(format!("`{ident}` is not host-only"));
    }
    let Expr::Struct(desc) = &*s.expr else {
        return Err(format!("`{ident}` is not a struct literal"));
    };
    let name = str_lit(struct_field(desc, "name")?)?;
    let Expr::Reference(params) = struct_field(desc, "params")? else {
        return Err(format!("`{ident}`'s params are not `&[..]`"));
    };
    let Expr::Array(params) = &*params.expr else {
        return Err(format!("`{ident}`'s params are not `&[..]`"));
    };
    let params = params
        .elems
        .iter()
        .map(|p| {
            let Expr::Struct(p) = p else {
                return Err(format!("`{}` is not a `KernelParam`", tokens(p)));
            };
            let role_expr = struct_field(p, "role")?;
            let role = match role_expr {
                Expr::Path(r) => role_variant(&r.path)?,
                Expr::Struct(r) => role_variant(&r.path)?,
                other => return Err(format!("the role `{}` is not a path", tokens(other))),
            };
            Ok(Param {
                name: str_lit(struct_field(p, "name")?)?,
                role,
                role_tokens: tokens(role_expr),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Descriptor { name, params })
}

/// The descriptor names the entry and its parameters in order, and ends in its one ClampBound.
fn describes(d: &Descriptor, entry: &ItemFn, what: &str) -> Result<(), String> {
    if entry.sig.ident.unraw() != d.name {
        return Err(format!("{what} is named `{}`", d.name));
    }
    let names: Vec<Option<String>> = d.params.iter().map(|p| Some(p.name.clone())).collect();
    if names != input_names(&entry.sig) {
        return Err(format!(
            "{what} lists {names:?}, the entry takes {:?}",
            input_names(&entry.sig)
        ));
    }
    let clamp_bounds = d.params.iter().filter(|p| p.role == "ClampBound").count();
    let last = d.params.last();
    if clamp_bounds != 1 || !last.is_some_and(|p| p.role == "ClampBound" && p.name == BOUND) {
        return Err(format!(
            "{what}'s params do not end in the one ClampBound `{BOUND}`: {:?}",
            d.params.iter().map(|p| &p.role).collect::<Vec<_>>()
        ));
    }
    Ok(())
}

/// The `OptimizerEntry` impl of the kernel module.
fn entry_impl(items: &[Item]) -> Result<&ItemImpl, String> {
    items
        .iter()
        .find_map(|item| match item {
            Item::Impl(i)
                if i.trait_
                    .as_ref()
                    .and_then(|(_, p, _)| p.segments.last())
                    .is_some_and(|s| s.ident == "OptimizerEntry") =>
            {
                Some(i)
            }
            _ => None,
        })
        .ok_or_else(|| "no `impl OptimizerEntry`".to_string())
}

fn impl_fn<'a>(i: &'a ItemImpl, name: &str) -> Result<&'a ImplItemFn, String> {
    i.items
        .iter()
        .find_map(|item| match item {
            ImplItem::Fn(f) if f.sig.ident == name => Some(f),
            _ => None,
        })
        .ok_or_else(|| format!("no `fn {name}` in `impl OptimizerEntry`"))
}

/// The elements of the `vec![..]` a host fn consists of.
fn vec_elems(f: &ImplItemFn) -> Result<Vec<Expr>, String> {
    let mac = match f.block.stmts.as_slice() {
        [Stmt::Macro(m)] => &m.mac,
        [Stmt::Expr(Expr::Macro(m), None)] => &m.mac,
        _ => return Err(format!("`{}` is not one `vec![..]`", f.sig.ident)),
    };
    if !mac.path.is_ident("vec") {
        return Err(format!("`{}` is not one `vec![..]`", f.sig.ident));
    }
    mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated)
        .map(|p| p.into_iter().collect())
        .map_err(|e| e.to_string())
}

/// `DESCRIPTOR` and `MULTI_DESCRIPTOR` describe the two entries (names in order, the one
/// ClampBound last); `DESCRIPTOR` has one ParamBuffer, the parameter; `MULTI_DESCRIPTOR` has, in
/// the buffers' places, ParamTable / InputTable / StateTable for ParamBuffer / Input / State,
/// then ChunkTable and ChunkCount, then the same uniform roles. Both are registered in
/// `abi::KERNELS`, `Entry` points at them, and `args` / `multi_args` take the bound last and
/// pass it last (one argument per descriptor param).
fn check_descriptors(file: &File, name: &str, param: &str) -> Result<(), String> {
    let [single, multi] = entries(file, name)?;
    let items = mod_items(kernel_mod(file, name)?)?;
    let desc = descriptor(items, "DESCRIPTOR")?;
    let mdesc = descriptor(items, "MULTI_DESCRIPTOR")?;
    describes(&desc, single, "DESCRIPTOR")?;
    describes(&mdesc, multi, "MULTI_DESCRIPTOR")?;
    let params: Vec<&str> = desc
        .params
        .iter()
        .filter(|p| p.role == "ParamBuffer")
        .map(|p| p.name.as_str())
        .collect();
    if params != [param] {
        return Err(format!("DESCRIPTOR's ParamBuffers are {params:?}"));
    }
    let n = desc
        .params
        .iter()
        .position(|p| p.role == "Len")
        .ok_or("DESCRIPTOR has no Len")?;
    let mut want: Vec<String> = desc.params[..n]
        .iter()
        .map(|p| match p.role.as_str() {
            "ParamBuffer" => Ok("ParamTable".to_string()),
            "Input" => Ok("InputTable".to_string()),
            "State" => Ok("StateTable".to_string()),
            other => Err(format!("DESCRIPTOR has a {other} among the buffers")),
        })
        .collect::<Result<_, _>>()?;
    want.extend(["ChunkTable".to_string(), "ChunkCount".to_string()]);
    let got: Vec<String> = mdesc.params.iter().map(|p| p.role.clone()).collect();
    if got.len() != desc.params.len() + 1 || got[..n + 2] != want[..] {
        return Err(format!(
            "MULTI_DESCRIPTOR's roles are {got:?}, expected {want:?}, the uniforms, ClampBound"
        ));
    }
    let uniforms = |d: &Descriptor, from: usize| -> Vec<String> {
        d.params[from..]
            .iter()
            .map(|p| p.role_tokens.clone())
            .collect()
    };
    if uniforms(&desc, n + 1) != uniforms(&mdesc, n + 2) {
        return Err("the descriptors' uniform roles differ".into());
    }

    for (register, target) in [
        ("__ADAMANT_REGISTER", "DESCRIPTOR"),
        ("__ADAMANT_REGISTER_MULTI", "MULTI_DESCRIPTOR"),
    ] {
        let registered = items.iter().any(|item| {
            matches!(item, Item::Static(s) if s.ident == register
                && tokens(&s.expr) == format!("& {target}")
                && s.attrs.iter().any(|a| tokens(a).contains("distributed_slice")))
        });
        if !registered {
            return Err(format!("`{target}` is not registered by `{register}`"));
        }
    }

    let imp = entry_impl(items)?;
    for target in ["DESCRIPTOR", "MULTI_DESCRIPTOR"] {
        let points = imp.items.iter().any(|item| {
            matches!(item, ImplItem::Const(c) if c.ident == target
                && tokens(&c.expr) == format!("& {target}"))
        });
        if !points {
            return Err(format!("`Entry::{target}` is not `&{target}`"));
        }
    }
    for (f, d) in [("args", &desc), ("multi_args", &mdesc)] {
        let f = impl_fn(imp, f)?;
        takes_bound_last_once(&f.sig)?;
        let elems = vec_elems(f)?;
        let bound_last = elems.last().is_some_and(|e| {
            tokens(e) == format!(":: adamant_kernels :: abi :: ArgValue :: F32 ({BOUND})")
        });
        let mentions_bound = elems.iter().filter(|e| mentions(e, BOUND)).count();
        if elems.len() != d.params.len() || !bound_last || mentions_bound != 1 {
            return Err(format!(
                "`{}` does not pass {} arguments ending in `{BOUND}` (once): {:?}",
                f.sig.ident,
                d.params.len(),
                elems.iter().map(tokens).collect::<Vec<_>>()
            ));
        }
    }
    Ok(())
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
fn base_ident(target: &Expr) -> Option<String> {
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
struct Stores<'a> {
    /// (base pointer, stored value) of each `*.. = ..`.
    derefs: Vec<(Option<String>, &'a Expr)>,
    /// `*.. op= ..`
    compound: Vec<String>,
    /// Write-like calls and macro invocations.
    writes: Vec<String>,
    /// Names assigned with `x = ..` or `x op= ..`.
    assigned: Vec<String>,
}

impl Stores<'_> {
    fn stores_anything(&self) -> bool {
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

/// Calls of `<kernel>::sweep` and `self::element`, and any other call naming `update`,
/// `element` or `sweep` (which would compute or store outside the checked path).
struct Calls<'a> {
    kernel: &'a str,
    sweep: Vec<&'a ExprCall>,
    element: Vec<&'a ExprCall>,
    other: Vec<String>,
}

impl<'a> Calls<'a> {
    fn new(kernel: &'a str) -> Self {
        Calls {
            kernel,
            sweep: vec![],
            element: vec![],
            other: vec![],
        }
    }
}

impl<'a> Visit<'a> for Calls<'a> {
    fn visit_expr_call(&mut self, node: &'a ExprCall) {
        if let Expr::Path(ExprPath { path, .. }) = &*node.func {
            if path_is(path, false, &[self.kernel, SWEEP]) {
                self.sweep.push(node);
            } else if path_is(path, false, &["self", "element"]) {
                self.element.push(node);
            } else if path
                .segments
                .iter()
                .any(|s| s.ident == "update" || s.ident == "element" || s.ident == SWEEP)
            {
                self.other.push(tokens(path));
            }
        }
        visit::visit_expr_call(self, node);
    }

    fn visit_expr_method_call(&mut self, node: &'a ExprMethodCall) {
        if node.method == "update" || node.method == "element" || node.method == SWEEP {
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

fn mentions(expr: &Expr, ident: &str) -> bool {
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

fn bindings(block: &syn::Block) -> Vec<String> {
    let mut b = Bindings::default();
    b.visit_block(block);
    b.names
}

/// The `let <name>: <ty> = <init>;` statements of a block, by name.
fn lets<'a>(stmts: &'a [Stmt], name: &str) -> Vec<(&'a syn::Type, &'a Expr)> {
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

/// Each entry calls `<kernel>::sweep` exactly once, with as many arguments as `sweep` takes: its
/// buffers first, under `sweep`'s names, and its own `weight_clamp_max_abs` last (mentioned
/// nowhere else in the call, never rebound or reassigned in the entry). The multi entry rebinds
/// each buffer, once, in its chunk loop, from that buffer's own table. Neither entry writes
/// anything itself (no `*.. = ..`, no write-like call, no macro) nor calls `update` / `element`.
fn check_entries_delegate(file: &File, name: &str, _param: &str) -> Result<(), String> {
    let [single, multi] = entries(file, name)?;
    let sweep = mod_fn(kernel_mod(file, name)?, SWEEP)?;
    let n = buffer_count(sweep)?;
    let sweep_inputs = input_names(&sweep.sig);
    for entry in [single, multi] {
        let ident = &entry.sig.ident;
        let mut calls = Calls::new(name);
        calls.visit_block(&entry.block);
        let [call] = calls.sweep.as_slice() else {
            return Err(format!(
                "`{ident}` calls `{name}::{SWEEP}` {} times",
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
        if !expr_is_ident(last, BOUND) || rest.iter().any(|a| mentions(a, BOUND)) {
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
        if bindings(&entry.block).iter().any(|b| b == BOUND) {
            return Err(format!("`{ident}` rebinds `{BOUND}`"));
        }
        let mut stores = Stores::default();
        stores.visit_block(&entry.block);
        if stores.assigned.iter().any(|a| a == BOUND) {
            return Err(format!("`{ident}` reassigns `{BOUND}`"));
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

fn is_element_call(e: &Expr) -> Option<&ExprCall> {
    match e {
        Expr::Call(c) => match &*c.func {
            Expr::Path(p) if path_is(&p.path, false, &["self", "element"]) => Some(c),
            _ => None,
        },
        _ => None,
    }
}

/// The `element` calls `__adamant_new` is made of: exactly `self::element(..)` (scalar loop), or
/// exactly `::adamant_kernels::vector::F4([self::element(..); 4 lanes])` (vector loop).
fn new_value_calls(init: &Expr, lanes: usize) -> Option<Vec<&ExprCall>> {
    if lanes == 1 {
        return is_element_call(init).map(|c| vec![c]);
    }
    let Expr::Call(f4) = init else { return None };
    let Expr::Path(p) = &*f4.func else {
        return None;
    };
    if !path_is(&p.path, true, &["adamant_kernels", "vector", "F4"]) || f4.args.len() != 1 {
        return None;
    }
    let Expr::Array(lanes_array) = &f4.args[0] else {
        return None;
    };
    let calls: Option<Vec<&ExprCall>> = lanes_array.elems.iter().map(is_element_call).collect();
    calls.filter(|c| c.len() == lanes)
}

/// `sweep` is device-only (nvptx cfg, no ABI, not exported) and takes the bound last, once. It has
/// a vector loop and a scalar loop; each stores the parameter buffer exactly once, with
/// `__adamant_new`, bound once in that loop to exactly the `self::element` calls (4 lanes, then
/// 1), each passing `sweep`'s bound last (and nowhere else) and never the parameter pointer; there
/// are no other `element` / `update` calls. `sweep` stores the parameter buffer nowhere else,
/// stores only through its `*mut f32` buffers, never with `op=`, a write-like call or a macro,
/// never reassigns `__adamant_new` or the bound and never rebinds any of its inputs.
fn check_sweep_stores(file: &File, name: &str, param: &str) -> Result<(), String> {
    let sweep = mod_fn(kernel_mod(file, name)?, SWEEP)?;
    if !cfg_is(&sweep.attrs, NVPTX) {
        return Err(format!("`{SWEEP}` is not `#[cfg({NVPTX})]`"));
    }
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
        let Some(calls) = new_value_calls(init, lanes) else {
            return Err(format!(
                "the {which} loop's `{NEW}` is not exactly {lanes} `self::element` call(s): `{}`",
                tokens(*init)
            ));
        };
        for call in calls {
            let args: Vec<&Expr> = call.args.iter().collect();
            let Some((last, rest)) = args.split_last() else {
                return Err("an `element` call without arguments".into());
            };
            if !expr_is_ident(last, BOUND) || rest.iter().any(|a| mentions(a, BOUND)) {
                return Err(format!(
                    "an `element` call in the {which} loop passes `{}` as the bound",
                    tokens(*last)
                ));
            }
            if args.iter().any(|a| mentions(a, param)) {
                return Err(format!(
                    "`element` receives the parameter buffer `{param}` in the {which} loop"
                ));
            }
        }
    }
    let mut calls = Calls::new(name);
    calls.visit_block(&sweep.block);
    if calls.element.len() != 5 || !calls.other.is_empty() || !calls.sweep.is_empty() {
        return Err(format!(
            "`{SWEEP}` calls `element` {} times (expected 5), `{SWEEP}` {} times and {:?}",
            calls.element.len(),
            calls.sweep.len(),
            calls.other
        ));
    }
    Ok(())
}

/// `<kernel>::element` takes `update`'s inputs plus the bound, last, and its body is exactly
/// `::adamant_kernels::clamp::weight_clamp(self::update(..every input..), weight_clamp_max_abs)`.
fn check_element_clamps(file: &File, name: &str, _param: &str) -> Result<(), String> {
    let module = kernel_mod(file, name)?;
    let element = mod_fn(module, "element")?;
    let update = mod_fn(module, "update")?;
    takes_bound_last_once(&element.sig)?;
    if element.sig.inputs.len() != update.sig.inputs.len() + 1 {
        return Err("`element` does not take `update`'s inputs plus the bound".into());
    }
    let [Stmt::Expr(Expr::Call(clamp), None)] = element.block.stmts.as_slice() else {
        return Err(format!(
            "`element`'s body is not one call: {}",
            tokens(&element.block)
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
            tokens(&func.path)
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
            tokens(inner),
            tokens(*bound)
        ));
    }
    let forwarded: Vec<Option<String>> = inner
        .args
        .iter()
        .map(|a| match a {
            Expr::Path(p) => p.path.get_ident().map(|i| i.unraw().to_string()),
            _ => None,
        })
        .collect();
    let element_inputs = input_names(&element.sig);
    if forwarded[..] != element_inputs[..element_inputs.len() - 1] {
        return Err(format!(
            "`element` forwards {forwarded:?} to `update`, not its inputs {:?}",
            &element_inputs[..element_inputs.len() - 1]
        ));
    }
    Ok(())
}

fn check_all(file: &File, name: &str, param: &str) -> Result<(), String> {
    for (check, f) in CHECKS {
        f(file, name, param).map_err(|e| format!("{check}: {e}"))?;
    }
    Ok(())
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

// Tampering helpers: `syn`'s `visit-mut` is not enabled, so these walk to the spot by hand.

fn top_fn_mut<'a>(file: &'a mut File, ident: &str) -> &'a mut ItemFn {
    file.items
        .iter_mut()
        .find_map(|item| match item {
            Item::Fn(f) if f.sig.ident == ident => Some(f),
            _ => None,
        })
        .expect("the entry")
}

fn mod_items_mut<'a>(file: &'a mut File, name: &str) -> &'a mut Vec<Item> {
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

fn mod_fn_mut<'a>(file: &'a mut File, name: &str, f: &str) -> &'a mut ItemFn {
    mod_items_mut(file, name)
        .iter_mut()
        .find_map(|item| match item {
            Item::Fn(func) if func.sig.ident == f => Some(func),
            _ => None,
        })
        .expect("the module fn")
}

fn loops_mut(f: &mut ItemFn) -> Vec<&mut syn::ExprWhile> {
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
fn sweep_call_mut(stmts: &mut [Stmt]) -> Option<&mut ExprCall> {
    stmts.iter_mut().find_map(|s| match s {
        Stmt::Expr(Expr::Call(c), _) if tokens(&c.func).ends_with(":: sweep") => Some(c),
        Stmt::Expr(Expr::While(w), _) => sweep_call_mut(&mut w.body.stmts),
        _ => None,
    })
}

fn descriptor_params_mut<'a>(
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

fn entry_impl_mut<'a>(file: &'a mut File, name: &str) -> &'a mut ItemImpl {
    mod_items_mut(file, name)
        .iter_mut()
        .find_map(|item| match item {
            Item::Impl(i) if tokens(&i.trait_.as_ref()?.1).ends_with("OptimizerEntry") => Some(i),
            _ => None,
        })
        .expect("impl OptimizerEntry")
}

/// Each tampering removes or bypasses part of the epilogue; the named check must notice it, and
/// every check must notice at least one tampering.
#[test]
fn tampered_expansions_are_caught() {
    let (name, param) = ("curiosity_adam_step", "p");
    let multi = multi_name(name);
    let pristine = expand(test_kernels::curiosity_adam_step());
    for (check, f) in CHECKS {
        if let Err(e) = f(&pristine, name, param) {
            panic!("the pristine expansion fails {check}: {e}");
        }
    }

    let unclamped: Expr = syn::parse_quote!(self::update(
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

    // (what, the check that must fail, a fragment of its error, the tampered expansion)
    let mut tampered: Vec<(&str, &str, &str, File)> = vec![];
    let mut tamper =
        |what: &'static str, check: &'static str, error: &'static str, edit: &dyn Fn(&mut File)| {
            let mut f = pristine.clone();
            edit(&mut f);
            tampered.push((what, check, error, f));
        };

    // entry_signatures
    tamper(
        "entry without the bound",
        "entry_signatures",
        "`curiosity_adam_step`'s last input is `bias_correction2",
        &|f| {
            top_fn_mut(f, name).sig.inputs.pop();
        },
    );
    tamper(
        "bound moved first",
        "entry_signatures",
        "`curiosity_adam_step`'s last input is `bias_correction2",
        &|f| {
            let inputs = &mut top_fn_mut(f, name).sig.inputs;
            let bound = inputs.pop().expect("bound").into_value();
            inputs.insert(0, bound);
        },
    );
    tamper(
        "bound declared `mut`",
        "entry_signatures",
        "last input is `mut weight_clamp_max_abs",
        &|f| {
            let inputs = &mut top_fn_mut(f, name).sig.inputs;
            inputs.pop();
            inputs.push(syn::parse_quote!(mut weight_clamp_max_abs: f32));
        },
    );
    tamper(
        "multi entry drops the bound",
        "entry_signatures",
        "`curiosity_adam_step_multi`'s last input is `bias_correction2",
        &|f| {
            top_fn_mut(f, &multi).sig.inputs.pop();
        },
    );
    tamper(
        "multi entry takes the bound twice",
        "entry_signatures",
        "`curiosity_adam_step_multi` takes `weight_clamp_max_abs` 2 times",
        &|f| {
            let inputs = &mut top_fn_mut(f, &multi).sig.inputs;
            inputs.insert(0, syn::parse_quote!(weight_clamp_max_abs: f32));
        },
    );
    tamper(
        "multi entry takes a plain pointer for the param table",
        "entry_signatures",
        "does not start with the buffer tables",
        &|f| {
            top_fn_mut(f, &multi).sig.inputs[0] = syn::parse_quote!(p: *mut f32);
        },
    );
    tamper(
        "multi entry missing",
        "entry_signatures",
        "the exported functions are [\"curiosity_adam_step\"]",
        &|f| {
            f.items
                .retain(|i| !matches!(i, Item::Fn(func) if func.sig.ident == multi));
        },
    );
    tamper(
        "sweep exported",
        "entry_signatures",
        "\"sweep\"], expected",
        &|f| {
            mod_fn_mut(f, name, SWEEP)
                .attrs
                .push(syn::parse_quote!(#[no_mangle]));
        },
    );
    tamper(
        "a third, unclamped entry",
        "entry_signatures",
        "\"curiosity_adam_step_raw\"], expected",
        &|f| {
            f.items.push(syn::parse_quote! {
                #[no_mangle]
                pub unsafe extern "gpu-kernel" fn curiosity_adam_step_raw(p: *mut f32, v: f32) {
                    *p = v;
                }
            });
        },
    );

    // descriptors
    tamper(
        "MULTI_DESCRIPTOR drops the ClampBound",
        "descriptors",
        "MULTI_DESCRIPTOR lists",
        &|f| {
            descriptor_params_mut(f, name, "MULTI_DESCRIPTOR").pop();
        },
    );
    tamper(
        "MULTI_DESCRIPTOR calls the param table a ParamBuffer",
        "descriptors",
        "MULTI_DESCRIPTOR's roles are [\"ParamBuffer\"",
        &|f| {
            let params = descriptor_params_mut(f, name, "MULTI_DESCRIPTOR");
            params[0] = syn::parse_quote!(::adamant_kernels::abi::KernelParam {
                name: "p",
                ty: ::adamant_kernels::abi::ParamType::Ptr,
                role: ::adamant_kernels::abi::ParamRole::ParamBuffer,
            });
        },
    );
    tamper(
        "MULTI_DESCRIPTOR describes the bound as a Scalar",
        "descriptors",
        "MULTI_DESCRIPTOR's params do not end in the one ClampBound",
        &|f| {
            let params = descriptor_params_mut(f, name, "MULTI_DESCRIPTOR");
            *params.last_mut().expect("bound") =
                syn::parse_quote!(::adamant_kernels::abi::KernelParam {
                    name: "weight_clamp_max_abs",
                    ty: ::adamant_kernels::abi::ParamType::F32,
                    role: ::adamant_kernels::abi::ParamRole::Scalar,
                });
        },
    );
    tamper(
        "DESCRIPTOR's bound moved first",
        "descriptors",
        "DESCRIPTOR lists [Some(\"weight_clamp_max_abs\")",
        &|f| {
            let params = descriptor_params_mut(f, name, "DESCRIPTOR");
            let bound = params.pop().expect("bound").into_value();
            params.insert(0, bound);
        },
    );
    tamper(
        "Entry::MULTI_DESCRIPTOR points at DESCRIPTOR",
        "descriptors",
        "`Entry::MULTI_DESCRIPTOR` is not `&MULTI_DESCRIPTOR`",
        &|f| {
            for item in &mut entry_impl_mut(f, name).items {
                if let ImplItem::Const(c) = item {
                    if c.ident == "MULTI_DESCRIPTOR" {
                        c.expr = syn::parse_quote!(&DESCRIPTOR);
                    }
                }
            }
        },
    );
    tamper(
        "multi_args drops the bound",
        "descriptors",
        "`multi_args` does not pass 14 arguments",
        &|f| {
            for item in &mut entry_impl_mut(f, name).items {
                let ImplItem::Fn(func) = item else { continue };
                if func.sig.ident != "multi_args" {
                    continue;
                }
                let mac = match func.block.stmts.last_mut() {
                    Some(Stmt::Macro(m)) => &mut m.mac,
                    Some(Stmt::Expr(Expr::Macro(m), None)) => &mut m.mac,
                    _ => panic!("vec!"),
                };
                let mut elems = mac
                    .parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated)
                    .expect("vec elements");
                elems.pop();
                mac.tokens = elems.to_token_stream();
            }
        },
    );

    // entries_delegate
    tamper(
        "entry stores the parameter directly",
        "entries_delegate",
        "`curiosity_adam_step` writes memory itself",
        &|f| {
            let entry = top_fn_mut(f, name);
            let at = entry.block.stmts.len() - 1;
            entry
                .block
                .stmts
                .insert(at, syn::parse_quote!(*p.add(0) = 0.0;));
        },
    );
    tamper(
        "multi entry stores directly after the sweep",
        "entries_delegate",
        "`curiosity_adam_step_multi` writes memory itself",
        &|f| {
            let chunk_loop = loops_mut(top_fn_mut(f, &multi)).pop().expect("chunk loop");
            let at = chunk_loop.body.stmts.len() - 1;
            chunk_loop
                .body
                .stmts
                .insert(at, syn::parse_quote!(*p = 1.0e30;));
        },
    );
    tamper(
        "multi entry stores with `write`",
        "entries_delegate",
        "p . write (1.0e30)",
        &|f| {
            let chunk_loop = loops_mut(top_fn_mut(f, &multi)).pop().expect("chunk loop");
            let at = chunk_loop.body.stmts.len() - 1;
            chunk_loop
                .body
                .stmts
                .insert(at, syn::parse_quote!(p.write(1.0e30);));
        },
    );
    tamper(
        "entry passes f32::INFINITY as sweep's bound",
        "entries_delegate",
        "passes `f32 :: INFINITY` as `sweep`'s bound",
        &|f| {
            let call = sweep_call_mut(&mut top_fn_mut(f, name).block.stmts).expect("sweep call");
            *call.args.last_mut().expect("bound") = syn::parse_quote!(f32::INFINITY);
        },
    );
    tamper(
        "multi entry passes 0.0 (disabled) as sweep's bound",
        "entries_delegate",
        "passes `0.0` as `sweep`'s bound",
        &|f| {
            let call = sweep_call_mut(&mut top_fn_mut(f, &multi).block.stmts).expect("sweep call");
            *call.args.last_mut().expect("bound") = syn::parse_quote!(0.0);
        },
    );
    tamper(
        "multi entry passes the bound as a uniform and a constant last",
        "entries_delegate",
        "passes `f32 :: MAX` as `sweep`'s bound",
        &|f| {
            let call = sweep_call_mut(&mut top_fn_mut(f, &multi).block.stmts).expect("sweep call");
            let n = call.args.len();
            call.args[n - 2] = syn::parse_quote!(weight_clamp_max_abs);
            call.args[n - 1] = syn::parse_quote!(f32::MAX);
        },
    );
    tamper(
        "entry shadows the bound before the call",
        "entries_delegate",
        "`curiosity_adam_step` rebinds `weight_clamp_max_abs`",
        &|f| {
            top_fn_mut(f, name).block.stmts.insert(
                0,
                syn::parse_quote!(let weight_clamp_max_abs = f32::INFINITY;),
            );
        },
    );
    tamper(
        "multi entry no longer calls sweep",
        "entries_delegate",
        "calls `curiosity_adam_step::sweep` 0 times",
        &|f| {
            let chunk_loop = loops_mut(top_fn_mut(f, &multi)).pop().expect("chunk loop");
            chunk_loop
                .body
                .stmts
                .retain(|s| !tokens(s).contains(":: sweep"));
        },
    );
    tamper(
        "entry swaps the param and gradient pointers",
        "entries_delegate",
        "passes `g` as `sweep`'s buffer `p`",
        &|f| {
            let call = sweep_call_mut(&mut top_fn_mut(f, name).block.stmts).expect("sweep call");
            let (p, g) = (call.args[0].clone(), call.args[1].clone());
            call.args[0] = g;
            call.args[1] = p;
        },
    );
    tamper(
        "multi entry takes the param chunk from the gradient table",
        "entries_delegate",
        "the chunk loop binds `p: * mut f32` from `(* g",
        &|f| {
            let chunk_loop = loops_mut(top_fn_mut(f, &multi)).pop().expect("chunk loop");
            for s in &mut chunk_loop.body.stmts {
                if tokens(s).starts_with("let p :") {
                    // The gradient table's pointer for this chunk, as the param's.
                    let from_g: Expr = syn::parse_quote!(
                        (*g.add(__adamant_tensor) as *mut f32).add(__adamant_start)
                    );
                    *s = syn::parse_quote!(let p: *mut f32 = #from_g;);
                }
            }
        },
    );

    // sweep_stores
    tamper(
        "sweep without the bound",
        "sweep_stores",
        "`sweep`'s last input is `bias_correction2",
        &|f| {
            mod_fn_mut(f, name, SWEEP).sig.inputs.pop();
        },
    );
    tamper(
        "sweep shadows the bound",
        "sweep_stores",
        "`sweep` rebinds its input `weight_clamp_max_abs`",
        &|f| {
            mod_fn_mut(f, name, SWEEP).block.stmts.insert(
                0,
                syn::parse_quote!(let weight_clamp_max_abs = f32::INFINITY;),
            );
        },
    );
    tamper(
        "second, unclamped store in the scalar loop",
        "sweep_stores",
        "stores the parameter buffer `p` 3 times",
        &|f| {
            let scalar = loops_mut(mod_fn_mut(f, name, SWEEP))
                .pop()
                .expect("scalar loop");
            scalar
                .body
                .stmts
                .insert(0, syn::parse_quote!(*p.add(__adamant_i) = __adamant_p;));
        },
    );
    tamper(
        "vector loop stores the loaded value",
        "sweep_stores",
        "the vector loop stores `p` 1 times ([\"__adamant_p\"])",
        &|f| {
            let vector = loops_mut(mod_fn_mut(f, name, SWEEP)).remove(0);
            for stmt in &mut vector.body.stmts {
                if let Stmt::Expr(Expr::Assign(assign), _) = stmt {
                    if tokens(assign).starts_with("* (p as") {
                        *assign.right = syn::parse_quote!(__adamant_p);
                    }
                }
            }
        },
    );
    tamper(
        "scalar loop overwrites the clamped value",
        "sweep_stores",
        "`sweep` reassigns `__adamant_new`",
        &|f| {
            let scalar = loops_mut(mod_fn_mut(f, name, SWEEP))
                .pop()
                .expect("scalar loop");
            let store = scalar.body.stmts.len() - 1;
            scalar
                .body
                .stmts
                .insert(store, syn::parse_quote!(__adamant_new = #unclamped;));
        },
    );
    let set_scalar_new = |f: &mut File, value: &Expr| {
        let scalar = loops_mut(mod_fn_mut(f, name, SWEEP))
            .pop()
            .expect("scalar loop");
        for s in &mut scalar.body.stmts {
            if let Stmt::Local(l) = s {
                if tokens(&l.pat).contains(NEW) {
                    *l.init.as_mut().expect("init").expr = value.clone();
                }
            }
        }
    };
    tamper(
        "scalar loop stores update() directly",
        "sweep_stores",
        "scalar loop's `__adamant_new` is not exactly 1 `self::element` call(s): `self :: update",
        &|f| set_scalar_new(f, &unclamped),
    );
    tamper(
        "scalar loop scales the clamped value",
        "sweep_stores",
        "weight_clamp_max_abs) * 2.0`",
        &|f| {
            set_scalar_new(
                f,
                &syn::parse_quote!(
                    self::element(
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
                        bias_correction2,
                        weight_clamp_max_abs
                    ) * 2.0
                ),
            )
        },
    );
    tamper(
        "an element call in the scalar loop passes another bound",
        "sweep_stores",
        "in the scalar loop passes `f32 :: MAX` as the bound",
        &|f| {
            set_scalar_new(
                f,
                &syn::parse_quote!(self::element(
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
                    bias_correction2,
                    f32::MAX
                )),
            )
        },
    );
    tamper(
        "compound store to the parameter after the clamped one",
        "sweep_stores",
        "* p . add (__adamant_i) += 1.0",
        &|f| {
            let scalar = loops_mut(mod_fn_mut(f, name, SWEEP))
                .pop()
                .expect("scalar loop");
            let after_store = scalar.body.stmts.len() - 1;
            scalar
                .body
                .stmts
                .insert(after_store, syn::parse_quote!(*p.add(__adamant_i) += 1.0;));
        },
    );
    tamper(
        "store through an alias of the parameter pointer",
        "sweep_stores",
        "stores through `Some(\"__adamant_alias\")`",
        &|f| {
            let scalar = loops_mut(mod_fn_mut(f, name, SWEEP))
                .pop()
                .expect("scalar loop");
            let after_store = scalar.body.stmts.len() - 1;
            scalar.body.stmts.insert(
                after_store,
                syn::parse_quote!(let __adamant_alias: *mut f32 = p;),
            );
            scalar.body.stmts.insert(
                after_store + 1,
                syn::parse_quote!(*__adamant_alias.add(__adamant_i) = __adamant_p;),
            );
        },
    );
    tamper(
        "sweep stores through ptr::write",
        "sweep_stores",
        ":: core :: ptr :: write",
        &|f| {
            let scalar = loops_mut(mod_fn_mut(f, name, SWEEP))
                .pop()
                .expect("scalar loop");
            let after_store = scalar.body.stmts.len() - 1;
            scalar.body.stmts.insert(
                after_store,
                syn::parse_quote!(::core::ptr::write(p.add(__adamant_i), __adamant_p);),
            );
        },
    );

    // element_clamps
    tamper(
        "element returns update() unclamped",
        "element_clamps",
        "`element` calls `self :: update`, not",
        &|f| {
            let element = mod_fn_mut(f, name, "element");
            let Some(Stmt::Expr(Expr::Call(clamp), None)) = element.block.stmts.first() else {
                panic!("element body");
            };
            let unclamped = clamp.args[0].clone();
            element.block.stmts = vec![Stmt::Expr(unclamped, None)];
        },
    );
    tamper(
        "element clamps with another bound",
        "element_clamps",
        "with `f32 :: INFINITY`",
        &|f| {
            mod_fn_mut(f, name, "element").block = syn::parse_quote!({
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
        },
    );
    tamper(
        "element feeds update the parameter twice",
        "element_clamps",
        "`element` forwards [Some(\"p\"), Some(\"p\")",
        &|f| {
            mod_fn_mut(f, name, "element").block = syn::parse_quote!({
                ::adamant_kernels::clamp::weight_clamp(
                    self::update(
                        p,
                        p,
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
                    weight_clamp_max_abs,
                )
            });
        },
    );

    for (check, _) in CHECKS {
        assert!(
            tampered.iter().any(|(_, c, _, _)| *c == check),
            "no tampering exercises {check}"
        );
    }
    for (what, check, error, file) in &tampered {
        let (_, f) = CHECKS
            .iter()
            .find(|(c, _)| c == check)
            .expect("a known check");
        match f(file, name, param) {
            Err(e) if e.contains(error) => {}
            Err(e) => panic!("{check} caught `{what}`, but not as expected ({error}): {e}"),
            Ok(()) => panic!("{check} missed: {what}\n{}", prettyplease::unparse(file)),
        }
    }
}
