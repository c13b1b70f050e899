//! `#[scalar_group]`: scalars declared once, for every kernel that takes them as `#[group]`.
//!
//! Each field is checked here as the kernel argument it becomes ([`signature::parse_arg`]: a
//! lifetime, a domain that holds, a reserved name), so a group that is wrong is reported once,
//! at its definition, and not in every kernel. The expansion is the struct (the field
//! attributes consumed, the fields as visible as the struct, since kernels in other modules and
//! crates build it), an `impl ScalarGroup`, and the macro through which kernels learn the
//! fields ([`crate::group_use`]).
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::ext::IdentExt;
use syn::{Attribute, Fields, FnArg, ItemStruct, Visibility};

use crate::device_crate::DeviceCratePath;
use crate::signature::{self, Errors};

const STRUCT_HELP: &str = "#[scalar_group] applies to a struct with named fields, each a scalar \
of the kernels that take the group: `#[step]`/`#[hyper]`/`#[derived(init = ..)]`, an optional \
#[domain(..)], then `name: f32` (or `u32`)";

/// The attributes a field hands to the kernel: its lifetime and domain (its docs stay on the
/// struct).
fn is_scalar_attr(attr: &Attribute) -> bool {
    ["step", "hyper", "derived", "domain"]
        .iter()
        .any(|name| attr.path().is_ident(name))
}

pub fn expand(
    attr: TokenStream,
    item: TokenStream,
    kernels: &DeviceCratePath,
) -> syn::Result<TokenStream> {
    let mut errors = Errors::default();
    if !attr.is_empty() {
        errors.push(syn::Error::new_spanned(
            &attr,
            "#[scalar_group] takes no arguments",
        ));
    }
    let mut group: ItemStruct =
        syn::parse2(item).map_err(|e| syn::Error::new(e.span(), STRUCT_HELP))?;
    if !group.generics.params.is_empty() || group.generics.where_clause.is_some() {
        errors.push(syn::Error::new_spanned(
            &group.generics,
            "a scalar group cannot be generic: its fields are scalars of concrete type",
        ));
    }
    let Fields::Named(named) = &group.fields else {
        errors.push(syn::Error::new_spanned(&group.fields, STRUCT_HELP));
        return Err(errors.finish().expect_err("an error was pushed"));
    };
    if named.named.is_empty() {
        errors.push(syn::Error::new_spanned(
            &group.ident,
            "a scalar group has at least one field",
        ));
    }
    let mut handed = Vec::new();
    for field in &named.named {
        let ident = field.ident.as_ref().expect("named fields");
        if let Some(nested) = field.attrs.iter().find(|a| a.path().is_ident("group")) {
            errors.push(syn::Error::new_spanned(
                nested,
                "scalar groups do not nest: declare the scalars here, or give the kernel both \
                 groups",
            ));
            continue;
        }
        // A role is refused before the field is read as a scalar: a buffer's type checks would
        // otherwise speak first, about a `&mut f32` the group must not hold anyway.
        let buffer = field.attrs.iter().find(|a| {
            ["param", "input", "grad", "state", "uniform_ptr"]
                .iter()
                .any(|role| a.path().is_ident(role))
        });
        if let Some(role) = buffer {
            let what = match role.path().is_ident("uniform_ptr") {
                true => "a #[uniform_ptr] (device memory read at every launch)",
                false => "a buffer",
            };
            errors.push(syn::Error::new_spanned(
                role,
                format!(
                    "a scalar group holds scalars only; `{}` is {what}: buffers (#[param], \
                     #[input], #[grad], #[state]) and #[uniform_ptr]s are each kernel's own \
                     arguments",
                    ident.unraw()
                ),
            ));
            continue;
        }
        let attrs = field.attrs.iter().filter(|a| !a.path().is_ident("doc"));
        let ty = &field.ty;
        let tokens = quote! { #(#attrs)* #ident: #ty };
        let arg: FnArg = syn::parse2(tokens.clone())?;
        if errors.check(signature::parse_arg(&arg)).is_some() {
            handed.push(tokens);
        }
    }
    errors.finish()?;

    let vis = group.vis.clone();
    let name = group.ident.clone();
    let names: Vec<String> = named
        .named
        .iter()
        .map(|f| f.ident.as_ref().expect("named").unraw().to_string())
        .collect();
    if let Fields::Named(named) = &mut group.fields {
        for field in &mut named.named {
            field.attrs.retain(|a| !is_scalar_attr(a));
            if matches!(field.vis, Visibility::Inherited) {
                field.vis = vis.clone();
            }
        }
    }
    // One crate-root name per group (where `#[macro_export]` puts it), re-exported beside the
    // struct: a macro-expanded `#[macro_export]` macro may not be named by an absolute path in
    // its own crate, but this `use` reaches it by its textual scope, and downstream crates name
    // it through the re-export, at the struct's path.
    let hidden = format_ident!("__adamant_scalar_group_{}", name.unraw());
    Ok(quote! {
        #group

        impl #kernels::scalar_groups::ScalarGroup for #name {
            const FIELDS: &'static [&'static str] = &[#(#names),*];
        }

        #[doc(hidden)]
        #[macro_export]
        macro_rules! #hidden {
            ([$($callback:tt)*] $($state:tt)*) => {
                $($callback)*! { $($state)* { #(#handed,)* } }
            };
        }

        #[doc(hidden)]
        #[allow(unused_imports)]
        #vis use #hidden as #name;
    })
}
