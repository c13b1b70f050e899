//! The parameter's companion buffer (issue 26's exact bf16 paths), which `#[optimizer_kernel]`
//! adds next to the parameter and reads and writes itself:
//! - `#[param(bf16, master)]`: `<p>_master`, an f32 master. The update reads the master (the
//!   bf16 buffer is only written); the entry stores the master clamped and the bf16 copy the
//!   model reads, rounded to nearest and held within the bound (28 B per element with bf16
//!   gradients).
//! - `#[param(bf16, remainder)]`: `<p>_remainder`, the master's low 16 bits. The update reads
//!   the exact f32 the two halves hold (`storage::split_join`); the entry stores both halves of
//!   the clamped new value (`storage::split_store`: 26 B per element).
//!
//! Every store to either buffer is a store to parameter memory: the PTX audit proves each
//! against its own storage contract (`adamant_abi::Storage`, `Rounding`), as a function of the
//! raw value and the bound. The records see the f32 clamp as the companion's value
//! (`optimizer::observe` says why that is exact for what they keep).
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::device_crate::DeviceCratePath;
use crate::signature::{Arg, OptimizerFn, BOUND};
use crate::storage::Storage;
use syn::Ident;

/// The companion of `k`'s parameter `param`, for a storage that has one.
fn companion<'k>(k: &'k OptimizerFn, param: &Arg) -> Option<&'k Arg> {
    param.storage.companion().and(k.companion.as_ref())
}

/// The statement that defines the parameter's local (`__adamant_<p>`, a group of four or one
/// f32) as the update reads it, for a parameter with a companion: the master, or the exact f32 of
/// the two halves. None for every other parameter (loaded like any buffer).
pub(crate) fn param_load(
    k: &OptimizerFn,
    kernels: &DeviceCratePath,
    param: &Arg,
    vector: bool,
) -> Option<TokenStream> {
    let companion = companion(k, param)?;
    let local = format_ident!("__adamant_{}", param.ident);
    let (high, low) = (&param.ident, &companion.ident);
    let f4 = quote! { #kernels::vector::F4 };
    let join = quote! { #kernels::storage::split_join };
    let group =
        |(buffer, ty): &(&Ident, TokenStream)| quote! { *(#buffer as *const #ty).add(__adamant_i) };
    let reads = vector_reads(k, kernels, param)?;
    Some(match (param.storage, vector) {
        (Storage::Bf16Master, true) => {
            let master = group(&reads[0]);
            quote! { let #local: #f4 = #master; }
        }
        (Storage::Bf16Master, false) => quote! { let #local: f32 = *#low.add(__adamant_i); },
        (_, true) => {
            let lanes =
                (0..4usize).map(|l| quote! { #join(__adamant_high.0[#l], __adamant_low.0[#l]) });
            let (high_group, low_group) = (group(&reads[0]), group(&reads[1]));
            let (high_ty, low_ty) = (&reads[0].1, &reads[1].1);
            quote! {
                let #local: #f4 = {
                    let __adamant_high: #high_ty = #high_group;
                    let __adamant_low: #low_ty = #low_group;
                    #f4([#(#lanes),*])
                };
            }
        }
        (_, false) => quote! {
            let #local: f32 = #join(*#high.add(__adamant_i), *#low.add(__adamant_i));
        },
    })
}

/// What a group of [`param_load`] reads for a parameter with a companion, each as a buffer and
/// the type its group is read as: the master alone (`F4`: the bf16 copy is only written), or
/// both halves (`H4`, high then low). None for every other parameter. The load and the sweep's
/// prefetch of the next group ([`param_prefetch`]) both follow it.
fn vector_reads<'k>(
    k: &'k OptimizerFn,
    kernels: &DeviceCratePath,
    param: &'k Arg,
) -> Option<Vec<(&'k Ident, TokenStream)>> {
    let companion = companion(k, param)?;
    let (f4, h4) = (
        quote! { #kernels::vector::F4 },
        quote! { #kernels::vector::H4 },
    );
    Some(match param.storage {
        Storage::Bf16Master => vec![(&companion.ident, f4)],
        _ => vec![(&param.ident, h4.clone()), (&companion.ident, h4)],
    })
}

/// The L1 prefetches of the group at `__adamant_next` of what [`param_load`] reads for a
/// parameter with a companion ([`vector_reads`]: asking for the write-only bf16 copy's line
/// would read it from memory for nothing). None for every other parameter.
pub(crate) fn param_prefetch(
    k: &OptimizerFn,
    kernels: &DeviceCratePath,
    param: &Arg,
) -> Option<TokenStream> {
    let each = vector_reads(k, kernels, param)?
        .into_iter()
        .map(|(buffer, ty)| {
            quote! { #kernels::builtins::prefetch_l1((#buffer as *const #ty).add(__adamant_next)); }
        });
    Some(quote! { #(#each)* })
}

/// The stores of a parameter with a companion for the group (`vector`) or element whose raw
/// values are `__adamant_raw`, with the states' stores (`state_stores`) between the values and
/// the parameter's stores, as for every parameter. Defines `__adamant_stored` (the bf16 weights,
/// `H4` or `u16`). None for a parameter without a companion.
pub(crate) fn param_store(
    k: &OptimizerFn,
    kernels: &DeviceCratePath,
    param: &Arg,
    vector: bool,
    state_stores: &[TokenStream],
) -> Option<TokenStream> {
    let companion = companion(k, param)?;
    let bound = format_ident!("{}", BOUND);
    let (high, low) = (&param.ident, &companion.ident);
    let f4 = quote! { #kernels::vector::F4 };
    let h4 = quote! { #kernels::vector::H4 };
    let storage = quote! { #kernels::storage };
    let lanes: Vec<Option<usize>> = match vector {
        true => (0..4).map(Some).collect(),
        false => vec![None],
    };
    let raw = |l: Option<usize>| match l {
        Some(l) => quote! { __adamant_raw.0[#l] },
        None => quote! { __adamant_raw },
    };
    let pick = |e: TokenStream, l: Option<usize>| match l {
        Some(l) => quote! { #e[#l] },
        None => e,
    };
    let group = |lanes: Vec<TokenStream>, ty: &TokenStream| match vector {
        true => quote! { #ty([#(#lanes),*]) },
        false => quote! { #(#lanes)* },
    };
    let (f32_ty, u16_ty) = match vector {
        true => (f4.clone(), h4.clone()),
        false => (quote!(f32), quote!(u16)),
    };
    // One store of a group writes its four lanes as one `st.v4.b16` (`store_lanes`); one element
    // is a plain store.
    let store16 = |ident: &syn::Ident, value: TokenStream| match vector {
        true => {
            let values = (0..4usize).map(|l| quote! { #value.0[#l] });
            crate::optimizer::store_lanes(ident, &h4, values)
        }
        false => quote! { *#ident.add(__adamant_i) = #value; },
    };
    Some(match param.storage {
        Storage::Bf16Master => {
            let copies = lanes.iter().map(|&l| {
                let raw = raw(l);
                quote! { #storage::Half::Bf16.store(#raw, #bound, #storage::Rounding::Nearest) }
            });
            let masters = lanes.iter().map(|&l| {
                let raw = raw(l);
                quote! { #kernels::clamp::weight_clamp(#raw, #bound) }
            });
            let stored = group(copies.collect(), &h4);
            let master = group(masters.collect(), &f4);
            let store_copy = store16(high, quote!(__adamant_stored));
            let store_master = match vector {
                true => quote! { *(#low as *mut #f4).add(__adamant_i) = __adamant_master; },
                false => quote! { *#low.add(__adamant_i) = __adamant_master; },
            };
            quote! {
                let __adamant_stored: #u16_ty = #stored;
                let __adamant_master: #f32_ty = #master;
                #(#state_stores)*
                #store_copy
                #store_master
            }
        }
        _ => {
            let splits = lanes.iter().map(|&l| {
                let raw = raw(l);
                quote! { #storage::split_store(#raw, #bound) }
            });
            let split_ty = match vector {
                true => quote!([(u16, u16); 4]),
                false => quote!((u16, u16)),
            };
            let splits = match vector {
                true => quote! { [#(#splits),*] },
                false => quote! { #(#splits)* },
            };
            let halves = |half: TokenStream| {
                let lanes = lanes.iter().map(|&l| {
                    let split = pick(quote!(__adamant_split), l);
                    quote! { #split.#half }
                });
                group(lanes.collect(), &h4)
            };
            let (highs, lows) = (halves(quote!(0)), halves(quote!(1)));
            let store_high = store16(high, quote!(__adamant_stored));
            let store_low = store16(low, quote!(__adamant_low));
            quote! {
                let __adamant_split: #split_ty = #splits;
                let __adamant_stored: #u16_ty = #highs;
                let __adamant_low: #u16_ty = #lows;
                #(#state_stores)*
                #store_high
                #store_low
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use crate::device_crate::DeviceCratePath;

    /// The expansion of a two-buffer kernel whose parameter is declared `#[param(bf16, <how>)]`,
    /// as text with the whitespace removed.
    fn expansion(how: proc_macro2::TokenStream) -> String {
        let kernel = quote! {
            pub fn half(
                #[param(bf16, #how)] p: f32,
                #[grad(bf16)] g: f32,
                #[hyper] #[domain(ge = 0.0)] lr: f32,
            ) -> f32 {
                p - lr * g
            }
        };
        crate::optimizer::expand(quote!(), kernel, &DeviceCratePath::own_name())
            .expect("valid kernel")
            .to_string()
            .split_whitespace()
            .collect()
    }

    fn prefetch(buffer: &str, group: &str) -> String {
        format!(
            "prefetch_l1(({buffer}as*const::adamant_device::vector::{group}).add(__adamant_next))"
        )
    }

    #[test]
    fn a_sweep_prefetches_the_master_and_not_the_bf16_copy_it_only_writes() {
        let text = expansion(quote!(master));
        assert!(text.contains(&prefetch("p_master", "F4")), "{text}");
        assert!(text.contains(&prefetch("g", "W2")), "{text}");
        assert!(
            !text.contains("prefetch_l1((pas"),
            "the write-only bf16 copy is prefetched"
        );
    }

    #[test]
    fn a_sweep_prefetches_both_halves_of_a_remainder_master() {
        let text = expansion(quote!(remainder));
        assert!(text.contains(&prefetch("p", "H4")), "{text}");
        assert!(text.contains(&prefetch("p_remainder", "H4")), "{text}");
    }
}
