//! The kernel's side of scalar groups: `#[group] adam: Adam` in an `#[optimizer_kernel]`.
//!
//! A proc macro sees only its own item, so the kernel macro cannot read `Adam`'s fields. It asks
//! the group for them instead: `#[scalar_group]` ([`crate::scalar_group`]) defines, beside the
//! struct, a `macro_rules!` macro under the struct's own name and path (a hidden
//! `#[macro_export]` macro re-exported by a `use` next to the struct, so the path that names the
//! type names the macro too, in the group's crate and downstream). The kernel macro expands to a
//! call of that macro, handing it the kernel's tokens and a callback,
//! `<kernels>::__optimizer_kernel_with_groups`; the group's macro calls the callback with its
//! fields appended. The callback resolves the next `#[group]` the same way and, once every
//! group's fields are there, expands the kernel ([`crate::optimizer::expand_resolved`]).
//!
//! The kernel is then the kernel it would be with the fields written out in place of the
//! `#[group]` argument: the same entries, descriptors and record (the fields keep their
//! lifetimes and domains, in the group's order). Only the body differs: it sees the group as one
//! value (`adam.lr`), built from the fields at the top of `update`; the fields themselves are
//! hidden from it (their names are given mixed-site hygiene).
use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::quote;
use syn::ext::IdentExt;
use syn::punctuated::Punctuated;
use syn::{FnArg, Ident, ItemFn, Pat, PatIdent, Token, Type, TypePath};

use crate::device_crate::DeviceCratePath;
use crate::signature::{Arg, Errors};

/// The name of the callback, re-exported by `adamant-device` (hidden).
const CALLBACK: &str = "__optimizer_kernel_with_groups";

/// One `#[group] adam: Adam` of a kernel, resolved.
#[derive(Clone, Debug)]
pub struct GroupBinding {
    /// The name the body reads the group by (`adam`), with the author's `mut` if any.
    pub pat: PatIdent,
    /// The group's type, as written (`Adam`, `adamant_device::Adam`).
    pub ty: TypePath,
    /// The fields, as the kernel's arguments (mixed-site names, hidden from the body).
    pub fields: Vec<Ident>,
}

/// Whether `arg` is a `#[group]` argument.
pub fn is_group(arg: &FnArg) -> bool {
    matches!(arg, FnArg::Typed(t) if t.attrs.iter().any(|a| a.path().is_ident("group")))
}

const GROUP_HELP: &str = "a #[group] argument is `#[group] name: Group`, where `Group` is a \
struct declared with #[scalar_group] (its scalars, each with its lifetime and #[domain], become \
the kernel's, in the group's order, and the body reads them as `name.field`)";

/// The path of the group a `#[group]` argument names, after checking the argument's shape.
fn group_type(arg: &FnArg) -> syn::Result<&TypePath> {
    let FnArg::Typed(typed) = arg else {
        unreachable!("is_group holds for typed arguments only")
    };
    let mut errors = Errors::default();
    for attr in &typed.attrs {
        if attr.path().is_ident("group") {
            if !matches!(attr.meta, syn::Meta::Path(_)) {
                errors.push(syn::Error::new_spanned(attr, "#[group] takes no arguments"));
            }
        } else {
            errors.push(syn::Error::new_spanned(
                attr,
                "a #[group] argument takes no other attribute: each field of the group carries \
                 its own lifetime and #[domain], in the #[scalar_group] definition",
            ));
        }
    }
    if !matches!(&*typed.pat, Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none()) {
        errors.push(syn::Error::new_spanned(&typed.pat, GROUP_HELP));
    }
    let path = match &*typed.ty {
        Type::Path(p)
            if p.qself.is_none()
                && p.path.segments.iter().all(|s| s.arguments.is_none())
                && !["f32", "u32"].iter().any(|t| p.path.is_ident(t)) =>
        {
            Some(p)
        }
        other => {
            errors.push(syn::Error::new_spanned(other, GROUP_HELP));
            None
        }
    };
    errors.finish()?;
    Ok(path.expect("no error, so a path"))
}

/// While a `#[group]` of the kernel is unresolved (`resolved` holds the fields of the first
/// ones), the call of the next group's macro that resolves it; `None` once all are (or when
/// the item is no function, which the kernel's parse reports).
pub fn next_callback(
    attr: &TokenStream,
    item: &TokenStream,
    resolved: &[TokenStream],
    kernels: &DeviceCratePath,
) -> syn::Result<Option<TokenStream>> {
    let Ok(func) = syn::parse2::<ItemFn>(item.clone()) else {
        return Ok(None);
    };
    let uses: Vec<&FnArg> = func.sig.inputs.iter().filter(|a| is_group(a)).collect();
    if uses.len() <= resolved.len() {
        return Ok(None);
    }
    let mut errors = Errors::default();
    let paths: Vec<Option<&TypePath>> = uses.iter().map(|u| errors.check(group_type(u))).collect();
    errors.finish()?;
    let paths: Vec<&TypePath> = paths.into_iter().flatten().collect();
    let next = &paths[resolved.len()].path;
    // Once, before the first callback: a type that is not a group (a plain struct, whose path
    // names no macro) gets a message that says so, beside rustc's unresolved macro.
    let checks = paths.iter().filter(|_| resolved.is_empty()).map(|p| {
        quote! {
            const _: &[&str] = <#p as #kernels::scalar_groups::ScalarGroup>::FIELDS;
        }
    });
    let callback = Ident::new(CALLBACK, Span::call_site());
    Ok(Some(quote! {
        #(#checks)*
        #next! { [#kernels::#callback] (#attr) { #item } #({ #resolved })* }
    }))
}

/// The callback's input, `(attr) { item } { fields } ..`: the kernel's attribute, the kernel,
/// and the fields of each group resolved so far.
pub fn parse_state(
    input: TokenStream,
) -> syn::Result<(TokenStream, TokenStream, Vec<TokenStream>)> {
    let mut groups = input.into_iter().map(|tt| match tt {
        TokenTree::Group(g) => Ok(g),
        other => Err(syn::Error::new_spanned(
            other,
            "__optimizer_kernel_with_groups is called by #[optimizer_kernel]'s scalar groups only",
        )),
    });
    let mut next = |delimiter: Delimiter| match groups.next() {
        Some(Ok(g)) if g.delimiter() == delimiter => Ok(g.stream()),
        Some(Err(e)) => Err(e),
        _ => Err(syn::Error::new(
            Span::call_site(),
            "__optimizer_kernel_with_groups is called by #[optimizer_kernel]'s scalar groups only",
        )),
    };
    let attr = next(Delimiter::Parenthesis)?;
    let item = next(Delimiter::Brace)?;
    let mut resolved = Vec::new();
    for g in groups {
        resolved.push(g?.stream());
    }
    Ok((attr, item, resolved))
}

/// A `#[group]` argument as its binding and its fields, each a kernel argument whose name is
/// hidden from the body. `fields` are the group's, as its macro hands them over
/// (`#[step] #[domain(..)] lr: f32, ..`, checked by `#[scalar_group]`).
pub fn flatten(input: &FnArg, fields: &TokenStream) -> syn::Result<(GroupBinding, Vec<FnArg>)> {
    let ty = group_type(input)?.clone();
    let FnArg::Typed(typed) = input else {
        unreachable!("group_type checked it")
    };
    let Pat::Ident(pat) = &*typed.pat else {
        unreachable!("group_type checked it")
    };
    let parser = Punctuated::<FnArg, Token![,]>::parse_terminated;
    let mut fields: Vec<FnArg> = syn::parse::Parser::parse2(parser, fields.clone())?
        .into_iter()
        .collect();
    let mut names = Vec::new();
    for field in &mut fields {
        if let FnArg::Typed(t) = field {
            if let Pat::Ident(p) = &mut *t.pat {
                p.ident = Ident::new(&p.ident.unraw().to_string(), Span::mixed_site());
                names.push(p.ident.clone());
            }
        }
    }
    let mut pat = pat.clone();
    pat.attrs.clear();
    Ok((
        GroupBinding {
            pat,
            ty,
            fields: names,
        },
        fields,
    ))
}

/// Every scalar of a kernel has its own name (the descriptor, the record and the host's structs
/// name each once), and a group's name in the body is no other argument's. A name a group brings
/// twice is reported at the kernel's own argument of that name, or at the later group.
pub fn check_names(args: &[Arg], groups: &[GroupBinding]) -> syn::Result<()> {
    let mut errors = Errors::default();
    let name = |i: &Ident| i.unraw().to_string();
    let group_name = |g: usize| {
        let path = &groups[g].ty.path;
        quote!(#path).to_string().replace(' ', "")
    };
    for (i, a) in args.iter().enumerate() {
        let Some(earlier) = args[..i].iter().find(|b| name(&b.ident) == name(&a.ident)) else {
            continue;
        };
        let (own, from_group) = match (earlier.group, a.group) {
            (_, None) => (a, earlier.group),
            (None, Some(_)) => (earlier, a.group),
            // Both from groups: at the later group's type.
            (Some(first), Some(second)) => {
                if first != second {
                    errors.push(syn::Error::new_spanned(
                        &groups[second].ty,
                        format!(
                            "`{}` is a field of both `{}` and `{}`: a kernel's scalars have \
                             distinct names (the descriptor and the step record name each once)",
                            name(&a.ident),
                            group_name(first),
                            group_name(second)
                        ),
                    ));
                }
                continue;
            }
        };
        let Some(g) = from_group else {
            continue; // two arguments of the kernel's own: rustc reports the duplicate
        };
        errors.push(syn::Error::new_spanned(
            &own.ident,
            format!(
                "`{n}` is also a field of the scalar group `{group}` (`#[group] {binding}`): a \
                 kernel's scalars have distinct names (the descriptor and the step record name \
                 each once); remove this one and read `{binding}.{n}`, or rename it",
                n = name(&own.ident),
                group = group_name(g),
                binding = groups[g].pat.ident.unraw(),
            ),
        ));
    }
    for (i, g) in groups.iter().enumerate() {
        let binding = name(&g.pat.ident);
        let visible = args.iter().filter(|a| a.group.is_none()).map(|a| &a.ident);
        let bindings = groups[..i].iter().map(|g| &g.pat.ident);
        if visible.chain(bindings).any(|other| name(other) == binding) {
            errors.push(syn::Error::new_spanned(
                &g.pat.ident,
                format!("`{binding}` names another argument of this kernel"),
            ));
        }
    }
    errors.finish()
}

/// The statement at the top of `update` that builds each group from its fields.
pub fn bindings(groups: &[GroupBinding]) -> TokenStream {
    let lets = groups.iter().map(|g| {
        let (pat, ty, fields) = (&g.pat, &g.ty, &g.fields);
        let names = fields
            .iter()
            .map(|f| Ident::new(&f.unraw().to_string(), Span::call_site()));
        quote! { let #pat: #ty = #ty { #(#names: #fields),* }; }
    });
    quote! { #(#lets)* }
}
