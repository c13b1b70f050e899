//! `#[kernel_entry]`: a device entry that is not an optimizer (it never writes a parameter
//! buffer), written by hand as `unsafe extern "gpu-kernel" fn`. Every pointer argument declares
//! its role: `#[input]` (`*const`, read only), `#[output]` (`*mut`, written; the runtime binds
//! only buffers it owns) or `#[index]` (`*const`, a read-only table of records whose values may
//! be offsets); a pointer without one, `#[param]`/`#[state]` (those make an optimizer kernel) and
//! a role on a scalar are compile errors. Scalars are `Scalar { domain: Domain::ANY }`. The PTX
//! audit holds the entry to its roles. The macro exports it on nvptx and registers its
//! descriptor on the host, so the PTX audit knows the entry was declared as non-optimizer on
//! purpose; an entry nobody declared fails the audit.
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::ext::IdentExt;
use syn::{Attribute, FnArg, ItemFn, Meta, Pat, Type};

use crate::device_crate::DeviceCratePath;
use crate::signature::{is_ident_type, Errors};

/// The expansion of `#[kernel_entry]` on `item`, with every path into the device crate starting
/// at `kernels`.
pub fn expand(
    attr: TokenStream,
    item: TokenStream,
    kernels: &DeviceCratePath,
) -> syn::Result<TokenStream> {
    let func: ItemFn = syn::parse2(item).map_err(|e| {
        syn::Error::new(
            e.span(),
            "#[kernel_entry] applies to an `unsafe extern \"gpu-kernel\" fn`",
        )
    })?;
    // Every independent error is reported (see `signature::Errors`).
    let mut errors = Errors::default();
    if !attr.is_empty() {
        errors.push(syn::Error::new_spanned(
            attr,
            "#[kernel_entry] takes no arguments",
        ));
    }
    let sig = &func.sig;
    match &sig.abi {
        Some(abi) if abi.name.as_ref().is_some_and(|n| n.value() == "gpu-kernel") => {}
        Some(abi) => errors.push(syn::Error::new_spanned(
            abi,
            "#[kernel_entry] applies to an `unsafe extern \"gpu-kernel\" fn`: a device \
             entry has the `gpu-kernel` ABI",
        )),
        None => errors.push(syn::Error::new_spanned(
            sig.fn_token,
            "#[kernel_entry] applies to an `unsafe extern \"gpu-kernel\" fn`: declare the \
             entry with `extern \"gpu-kernel\"`",
        )),
    }
    if sig.unsafety.is_none() {
        let (abi, fn_token) = (&sig.abi, sig.fn_token);
        errors.push(syn::Error::new_spanned(
            quote!(#abi #fn_token),
            "#[kernel_entry] applies to an `unsafe extern \"gpu-kernel\" fn`: a device entry \
             dereferences raw pointers, so it is declared `unsafe`",
        ));
    }
    if !sig.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(
            &sig.generics,
            "a kernel entry cannot be generic: it is exported under its own name",
        ));
    } else if let Some(where_clause) = &sig.generics.where_clause {
        errors.push(syn::Error::new_spanned(
            where_clause,
            "a kernel entry cannot be generic: it is exported under its own name",
        ));
    }
    if let Some(attr) = func.attrs.iter().find(|a| exports(a)) {
        errors.push(syn::Error::new_spanned(
            attr,
            "#[kernel_entry] exports the entry itself; remove this attribute",
        ));
    }
    let name = sig.ident.clone();
    let name_str = name.unraw().to_string();
    let params: Vec<TokenStream> = sig
        .inputs
        .iter()
        .filter_map(|arg| errors.check(param_descriptor(arg, kernels)))
        .collect();
    errors.finish()?;
    // The role attributes are ours: the emitted function keeps every other attribute.
    let mut func = func;
    for arg in func.sig.inputs.iter_mut() {
        if let FnArg::Typed(typed) = arg {
            typed.attrs.retain(|a| role_attr(a).is_none());
        }
    }
    let descriptor = crate::descriptor::registered(
        kernels,
        crate::descriptor::Descriptor {
            docs: quote!(),
            ident: format_ident!("DESCRIPTOR"),
            register: format_ident!("__ADAMANT_REGISTER"),
            name: quote!(#name_str),
            kind: quote!(Other),
            params: crate::descriptor::param_list(&params),
            record: quote!(&[]),
        },
    );
    let entries_cfg = crate::device_crate::entries_cfg();
    // Compiled only into the PTX of the crate that defines it (`adamant_entries`, see
    // `optimizer::expand`); the block can still see the module's items.
    Ok(quote! {
        #[cfg(target_arch = "nvptx64")]
        #[allow(unexpected_cfgs)]
        const _: () = {
            #entries_cfg
            #[no_mangle]
            #func
        };

        /// Host-side description of this (non-optimizer) entry.
        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(non_snake_case)]
        pub mod #name {
            #descriptor
        }
    })
}

/// An attribute that exports or places a symbol (`body::EXPORTING`: `#[no_mangle]`,
/// `#[export_name = ..]`, ...), bare or wrapped in `#[unsafe(..)]`.
fn exports(attr: &Attribute) -> bool {
    let is_export = |path: &syn::Path| {
        crate::body::EXPORTING
            .iter()
            .any(|name| path.is_ident(name))
    };
    if is_export(attr.path()) {
        return true;
    }
    if !attr.path().is_ident("unsafe") {
        return false;
    }
    let Meta::List(list) = &attr.meta else {
        return false;
    };
    list.parse_args::<Meta>()
        .is_ok_and(|inner| is_export(inner.path()))
}

/// The role an argument attribute declares: `#[input]`, `#[output]` or `#[index]`.
fn role_attr(attr: &Attribute) -> Option<&'static str> {
    ["input", "output", "index"]
        .into_iter()
        .find(|name| attr.path().is_ident(name))
}

const ROLE_HELP: &str = "every pointer of a #[kernel_entry] declares what the entry does with it: \
#[input] (read only), #[output] (written; the runtime binds only buffers it owns) or #[index] \
(a read-only table of records the runtime builds, whose values may be used as offsets)";

/// The descriptor role of one argument, from its attributes and type.
fn role_of(typed: &syn::PatType, kernels: &DeviceCratePath) -> syn::Result<TokenStream> {
    let mut role = None;
    for attr in &typed.attrs {
        for forbidden in ["param", "state"] {
            if attr.path().is_ident(forbidden) {
                return Err(syn::Error::new_spanned(
                    attr,
                    format!(
                        "a #[kernel_entry] cannot take a #[{forbidden}] buffer: a kernel that \
                         writes parameters (or optimizer state) is an optimizer kernel, written \
                         with #[optimizer_kernel] so that it carries the clamp"
                    ),
                ));
            }
        }
        if attr.path().is_ident("domain") {
            return Err(syn::Error::new_spanned(
                attr,
                "#[domain] bounds the scalars of an #[optimizer_kernel]; a #[kernel_entry]'s \
                 scalars take any value (`Domain::ANY`), so the attribute would promise a check \
                 that no launch makes",
            ));
        }
        let Some(name) = role_attr(attr) else {
            continue;
        };
        if !matches!(attr.meta, Meta::Path(_)) {
            return Err(syn::Error::new_spanned(
                attr,
                format!("#[{name}] takes no arguments"),
            ));
        }
        if role.is_some() {
            return Err(syn::Error::new_spanned(
                attr,
                "an argument has at most one role",
            ));
        }
        role = Some((name, attr));
    }
    match (&*typed.ty, role) {
        (Type::Ptr(ptr), Some((name, attr))) => {
            const REPORT_WORDS: [&str; 10] = [
                "u8", "u16", "u32", "u64", "usize", "i8", "i16", "i32", "i64", "isize",
            ];
            let integer = REPORT_WORDS.iter().any(|t| is_ident_type(&ptr.elem, t));
            if name == "output" && !integer {
                return Err(syn::Error::new_spanned(
                    &ptr.elem,
                    "a #[kernel_entry] writes only integer report words (flags, counts, indices, \
                     float bits as u32): an entry that writes floating-point values could be \
                     writing a parameter buffer, and a kernel that writes parameters is an \
                     optimizer kernel, written with #[optimizer_kernel] so that it carries the \
                     clamp",
                ));
            }
            if name == "output" && ptr.mutability.is_none() {
                return Err(syn::Error::new_spanned(
                    &typed.ty,
                    "an #[output] pointer is `*mut`: the entry writes through it",
                ));
            }
            if name != "output" && ptr.mutability.is_some() {
                return Err(syn::Error::new_spanned(
                    &typed.ty,
                    format!("an #[{name}] pointer is read only: declare it `*const`"),
                ));
            }
            let _ = attr;
            Ok(match name {
                "input" => quote!(Input),
                "output" => quote!(Output),
                _ => quote!(IndexTable),
            })
        }
        (Type::Ptr(_), None) => Err(syn::Error::new_spanned(&typed.ty, ROLE_HELP)),
        (_, Some((name, attr))) => Err(syn::Error::new_spanned(
            attr,
            format!("#[{name}] is a pointer role; this argument is not a pointer"),
        )),
        (_, None) => Ok(quote!(Scalar {
            domain: #kernels::abi::Domain::ANY
        })),
    }
}

fn param_descriptor(arg: &FnArg, kernels: &DeviceCratePath) -> syn::Result<TokenStream> {
    let FnArg::Typed(typed) = arg else {
        return Err(syn::Error::new_spanned(
            arg,
            "a kernel entry takes no `self`",
        ));
    };
    let Pat::Ident(pat) = &*typed.pat else {
        return Err(syn::Error::new_spanned(
            &typed.pat,
            "kernel arguments must be plain names",
        ));
    };
    let name = pat.ident.unraw().to_string();
    let ty = match &*typed.ty {
        Type::Ptr(_) => quote!(Ptr),
        t if is_ident_type(t, "f32") => quote!(F32),
        t if is_ident_type(t, "u32") => quote!(U32),
        t if is_ident_type(t, "usize") => quote!(Usize),
        other => {
            return Err(syn::Error::new_spanned(
                other,
                "kernel entry arguments are raw pointers, f32, u32 or usize",
            ))
        }
    };
    let role = role_of(typed, kernels)?;
    Ok(quote! {
        #kernels::abi::KernelParam {
            name: #name,
            ty: #kernels::abi::ParamType::#ty,
            role: #kernels::abi::ParamRole::#role,
            storage: #kernels::abi::Storage::F32,
            rounding: #kernels::abi::Rounding::Nearest,
        }
    })
}
