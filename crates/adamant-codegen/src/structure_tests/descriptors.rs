//! The `descriptors` check, with the reading of the descriptor statics it needs.
use syn::ext::IdentExt;
use syn::punctuated::Punctuated;
use syn::{Expr, File, ImplItem, ImplItemFn, Item, ItemFn, ItemImpl, Stmt, Token};

use super::expansion::{entries, kernel_mod, mod_items};
use super::syntax::{cfg_is, input_names, tokens, NVPTX};
use crate::signature::BOUND;

struct Param {
    name: String,
    /// The `ParamType` variant.
    ty: String,
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
                && [a, b, c] == ["adamant_device", "abi", "ParamRole"] =>
        {
            Ok(variant.clone())
        }
        _ => Err(format!(
            "`{}` is not a `::adamant_device::abi::ParamRole`",
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
            let ty = match struct_field(p, "ty")? {
                Expr::Path(t) => t.path.segments.last().map(|s| s.ident.to_string()),
                _ => None,
            }
            .ok_or_else(|| format!("`{}`'s type is not a path", tokens(p)))?;
            Ok(Param {
                name: str_lit(struct_field(p, "name")?)?,
                ty,
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
/// then ChunkTable, ChunkCount and ClampScales, then the same uniform roles. Both are registered in
/// `abi::KERNELS`, `Entry` points at them, and `scalar_values` passes exactly the uniforms, in
/// order (never the bound: the runtime appends the validated one).
pub(super) fn check_descriptors(file: &File, name: &str, param: &str) -> Result<(), String> {
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
    want.extend(["ChunkTable", "ChunkCount", "ClampScales"].map(String::from));
    let got: Vec<String> = mdesc.params.iter().map(|p| p.role.clone()).collect();
    if got.len() != desc.params.len() + 2 || got[..n + 3] != want[..] {
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
    if uniforms(&desc, n + 1) != uniforms(&mdesc, n + 3) {
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
    // `scalar_values` passes exactly the uniforms, in the descriptor's order, each as the
    // `ArgValue` of its type, read from `scalars`: never the bound (the runtime appends the
    // validated one itself), never a buffer or the length.
    let f = impl_fn(imp, "scalar_values")?;
    let elems: Vec<String> = vec_elems(f)?.iter().map(tokens).collect();
    // Both descriptors end in the records header, then the bound.
    for (d, which) in [(&desc, "DESCRIPTOR"), (&mdesc, "MULTI_DESCRIPTOR")] {
        let records = d.params.len().checked_sub(2).map(|i| &d.params[i]);
        if !records.is_some_and(|r| r.role == "Records" && r.name == crate::signature::RECORDS) {
            return Err(format!(
                "{which} does not end in `records` (Records), then the bound"
            ));
        }
    }
    let want: Vec<String> = desc.params[n + 1..desc.params.len() - 2]
        .iter()
        .map(|p| {
            let (variant, suffix) = match (p.ty.as_str(), p.role.as_str()) {
                (_, "UniformPtr") => ("Ptr", " . address ()"),
                ("U32", _) => ("U32", ""),
                _ => ("F32", ""),
            };
            format!(
                ":: adamant_device :: abi :: ArgValue :: {variant} (scalars . {}{suffix})",
                p.name
            )
        })
        .collect();
    if elems != want {
        return Err(format!(
            "`scalar_values` passes {elems:?}, expected the uniforms {want:?}"
        ));
    }
    if elems.iter().any(|e| e.contains(BOUND)) {
        return Err(format!("`scalar_values` passes `{BOUND}`"));
    }
    Ok(())
}
