//! Scalar groups: a kernel with `#[group]` arguments first expands to a call of its first
//! group's macro, and once the fields are resolved it is the kernel with the fields written out
//! (every item but `update`, which builds the group from them, is the same).
use proc_macro2::TokenStream;
use quote::quote;

use crate::device_crate::DeviceCratePath;
use crate::optimizer::{expand, expand_resolved};

fn grouped() -> TokenStream {
    quote! {
        pub fn k(
            #[param] p: f32,
            #[grad] g: f32,
            #[state] m: &mut f32,
            #[group] rates: Rates,
            #[hyper] #[domain(ge = 0.0)] weight_decay: f32,
            #[group] bc: crate::groups::Bias,
        ) -> f32 {
            *m = rates.beta1 * *m + g;
            p - rates.lr * *m / bc.bias_correction1 - weight_decay * p
        }
    }
}

fn rates() -> TokenStream {
    quote!(#[step] #[domain(ge = 0.0)] lr: f32, #[step] #[domain(ge = 0.0, lt = 1.0)] beta1: f32,)
}

fn bias() -> TokenStream {
    quote!(#[step] #[domain(gt = 0.0, le = 1.0)] bias_correction1: f32,)
}

fn written_out() -> TokenStream {
    quote! {
        pub fn k(
            #[param] p: f32,
            #[grad] g: f32,
            #[state] m: &mut f32,
            #[step] #[domain(ge = 0.0)] lr: f32,
            #[step] #[domain(ge = 0.0, lt = 1.0)] beta1: f32,
            #[hyper] #[domain(ge = 0.0)] weight_decay: f32,
            #[step] #[domain(gt = 0.0, le = 1.0)] bias_correction1: f32,
        ) -> f32 {
            *m = beta1 * *m + g;
            p - lr * *m / bias_correction1 - weight_decay * p
        }
    }
}

/// The expansion as text, `update`'s body left out, and the allowance a grouped `update` gets
/// for the arity of its fields.
fn without_update_body(tokens: TokenStream) -> String {
    let mut file: syn::File = syn::parse2(tokens).expect("an expansion parses");
    for item in &mut file.items {
        if let syn::Item::Mod(module) = item {
            for inner in &mut module.content.as_mut().expect("inline").1 {
                if let syn::Item::Fn(f) = inner {
                    if f.sig.ident == "update" {
                        f.block = syn::parse_quote!({});
                        let arity: syn::Attribute =
                            syn::parse_quote!(#[allow(clippy::too_many_arguments)]);
                        f.attrs.retain(|a| *a != arity);
                    }
                }
            }
        }
    }
    prettyplease::unparse(&file)
}

#[test]
fn a_kernel_with_groups_calls_its_first_groups_macro() {
    let kernels = DeviceCratePath::own_name();
    let first = expand(quote!(), grouped(), &kernels).expect("expands");
    let text = first.to_string();
    assert!(
        text.contains("Rates ! { [:: adamant_device :: __optimizer_kernel_with_groups]"),
        "{text}"
    );
    // The check that each group's type is a group, once, before the first call.
    assert_eq!(text.matches("ScalarGroup").count(), 2, "{text}");
    // With the first resolved, the second; with both, the kernel.
    let second = expand_resolved(quote!(), grouped(), &[rates()], &kernels).expect("expands");
    let text = second.to_string();
    assert!(text.starts_with("crate :: groups :: Bias !"), "{text}");
    assert!(!text.contains("ScalarGroup"), "{text}");
}

#[test]
fn a_resolved_kernel_is_its_written_out_twin() {
    let kernels = DeviceCratePath::own_name();
    let grouped = expand_resolved(quote!(), grouped(), &[rates(), bias()], &kernels).expect("ok");
    let twin = expand(quote!(), written_out(), &kernels).expect("expands");
    assert_eq!(
        without_update_body(grouped.clone()),
        without_update_body(twin)
    );
    let text = grouped.to_string();
    assert!(
        text.contains("let rates : Rates = Rates { lr : lr , beta1 : beta1 } ;"),
        "{text}"
    );
}

#[test]
fn a_field_named_like_a_scalar_of_the_kernel_is_refused_there() {
    let kernels = DeviceCratePath::own_name();
    let with_decay = quote!(#[step] bias_correction1: f32, #[hyper] weight_decay: f32,);
    let e = expand_resolved(quote!(), grouped(), &[rates(), with_decay], &kernels)
        .expect_err("weight_decay twice");
    let message = e.to_string();
    assert!(
        message
            .contains("`weight_decay` is also a field of the scalar group `crate::groups::Bias`"),
        "{message}"
    );
}
