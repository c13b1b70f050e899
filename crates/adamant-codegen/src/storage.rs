//! A buffer's storage type, as a kernel declares it (`#[param(bf16)]`, `#[grad(f16)]`), and
//! the code that loads and stores one element or one group of four in it. The update always
//! computes in `f32`: a 16-bit element is widened exactly when loaded, and the parameter's new
//! value is clamped, rounded to nearest even, and held within the bound in the storage type
//! itself (`adamant_device::storage::Half::store`), which is what the PTX audit proves of the
//! stored bits. `#[param(bf16, stochastic)]` rounds stochastically instead, with a random word
//! per element that the macro derives from the kernel's `rounding_seed`, the step, the tensor
//! and the element (`adamant_device::storage::stochastic_word`).
use proc_macro2::TokenStream;
use quote::quote;
use syn::{Attribute, Meta};

use crate::device_crate::DeviceCratePath;

/// The storage type of one buffer (mirrors `adamant_abi::Storage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Storage {
    #[default]
    F32,
    Bf16,
    F16,
    /// bf16, rounded stochastically when stored (`#[param(bf16, stochastic)]`).
    Bf16Stochastic,
}

/// The scalars a stochastic store takes its random words from (the fields of
/// `adamant_device::scalar_groups::StochasticRounding`): the step number, from the record's
/// shared part, and the run's seed, one of the record's own words.
pub const ROUNDING_SCALARS: [&str; 2] = [crate::signature::STEP_NUMBER, "rounding_seed"];

impl Storage {
    /// `adamant_abi::Storage::<variant>`, for a descriptor.
    pub fn abi(self, kernels: &DeviceCratePath) -> TokenStream {
        match self {
            Storage::F32 => quote! { #kernels::abi::Storage::F32 },
            Storage::Bf16 | Storage::Bf16Stochastic => quote! { #kernels::abi::Storage::Bf16 },
            Storage::F16 => quote! { #kernels::abi::Storage::F16 },
        }
    }

    /// `adamant_abi::Rounding::<variant>`, for a descriptor.
    pub fn rounding_abi(self, kernels: &DeviceCratePath) -> TokenStream {
        match self {
            Storage::Bf16Stochastic => quote! { #kernels::abi::Rounding::Stochastic },
            Storage::F32 | Storage::Bf16 | Storage::F16 => {
                quote! { #kernels::abi::Rounding::Nearest }
            }
        }
    }

    /// Whether a store to this buffer rounds stochastically (and so needs a random word).
    pub fn is_stochastic(self) -> bool {
        self == Storage::Bf16Stochastic
    }

    /// The element's type in device memory.
    pub fn element(self) -> TokenStream {
        match self {
            Storage::F32 => quote!(f32),
            Storage::Bf16 | Storage::F16 | Storage::Bf16Stochastic => quote!(u16),
        }
    }

    /// The type of a group of four elements (one vector load or store).
    pub fn group(self, kernels: &DeviceCratePath) -> TokenStream {
        match self {
            Storage::F32 => quote! { #kernels::vector::F4 },
            Storage::Bf16 | Storage::F16 | Storage::Bf16Stochastic => {
                quote! { #kernels::vector::H4 }
            }
        }
    }

    /// `adamant_device::storage::Half::<variant>` of a 16-bit type.
    pub(crate) fn half(self, kernels: &DeviceCratePath) -> Option<TokenStream> {
        match self {
            Storage::F32 => None,
            Storage::Bf16 | Storage::Bf16Stochastic => {
                Some(quote! { #kernels::storage::Half::Bf16 })
            }
            Storage::F16 => Some(quote! { #kernels::storage::Half::F16 }),
        }
    }

    /// A thread's fresh diagnostics facts (`ThreadFacts::<n>`) for a parameter of this storage:
    /// the record's largest stored `|p|` is derived from the largest raw one through the store,
    /// which rounding to nearest keeps monotone; a stochastic store (two equal values may round
    /// apart) keeps the largest stored value itself.
    pub fn facts(self, kernels: &DeviceCratePath, n: TokenStream) -> TokenStream {
        let facts = quote! { #kernels::diagnostics::ThreadFacts::<#n> };
        match (self.half(kernels), self.is_stochastic()) {
            (None, _) => quote! { #facts::new() },
            (Some(_), true) => quote! { #facts::keeping_stored() },
            (Some(half), false) => quote! { #facts::stored_as(#half) },
        }
    }

    /// `stored` (an element as loaded) as the `f32` the update computes with: exact.
    pub fn widen(self, kernels: &DeviceCratePath, stored: TokenStream) -> TokenStream {
        match self.half(kernels) {
            None => stored,
            Some(half) => quote! { #half.to_f32(#stored) },
        }
    }

    /// The element stored for the raw (unclamped) new parameter value `raw` with `bound`: the
    /// clamp, then for a 16-bit type the rounding and the hold within the bound. `word` is the
    /// element's random word (a `u32` expression), used by a stochastic store only.
    pub fn store_param(
        self,
        kernels: &DeviceCratePath,
        raw: TokenStream,
        bound: TokenStream,
        word: TokenStream,
    ) -> TokenStream {
        let rounding = self.rounding(kernels, word);
        match self.half(kernels) {
            None => quote! { #kernels::clamp::weight_clamp(#raw, #bound) },
            Some(half) => quote! { #half.store(#raw, #bound, #rounding) },
        }
    }

    /// `adamant_device::storage::Rounding` of a store to this buffer: stochastic with `word`
    /// (a `u32` expression), or to nearest.
    pub fn rounding(self, kernels: &DeviceCratePath, word: TokenStream) -> TokenStream {
        match self.is_stochastic() {
            true => quote! { #kernels::storage::Rounding::Stochastic(#word) },
            false => quote! { #kernels::storage::Rounding::Nearest },
        }
    }
}

/// The storage a role attribute names: `#[param]` is `f32`, `#[param(bf16)]` bfloat16,
/// `#[param(f16)]` binary16 (likewise `#[grad(..)]`, `#[input(..)]`), and on a parameter
/// `#[param(bf16, stochastic)]` bfloat16 rounded stochastically.
pub fn parse(attr: &Attribute, role: &str) -> syn::Result<Storage> {
    let help = || {
        format!(
            "#[{role}] takes at most a storage type: #[{role}], #[{role}(f32)], #[{role}(bf16)] \
             or #[{role}(f16)] (the update computes in f32 whatever the storage){}",
            match role {
                "param" => ", and a bf16 parameter may add a rounding: #[param(bf16, stochastic)]",
                "state" => "; a 16-bit state is #[state(bf16, stochastic)]",
                _ => "",
            }
        )
    };
    match &attr.meta {
        Meta::Path(_) => Ok(Storage::F32),
        Meta::List(list) => {
            let words = list
                .parse_args_with(
                    syn::punctuated::Punctuated::<syn::Ident, syn::Token![,]>::parse_terminated,
                )
                .map_err(|_| syn::Error::new_spanned(&list.tokens, help()))?;
            let mut words = words.into_iter();
            let Some(ident) = words.next() else {
                return Err(syn::Error::new_spanned(&list.tokens, help()));
            };
            let storage = match ident.to_string().as_str() {
                "f32" => Storage::F32,
                "bf16" => Storage::Bf16,
                "f16" => Storage::F16,
                _ => return Err(syn::Error::new_spanned(ident, help())),
            };
            let Some(rounding) = words.next() else {
                if role == "state" && storage != Storage::F32 {
                    // Rounded to nearest, an update smaller than half a step of the moment is
                    // lost every step (Adam's `v` barely moves late in training).
                    return Err(syn::Error::new_spanned(
                        &list.tokens,
                        "16-bit moments need stochastic rounding (rounded to nearest, an update \
                         smaller than half a step of the moment is lost every step): write \
                         #[state(bf16, stochastic)], or leave the state f32",
                    ));
                }
                return Ok(storage);
            };
            if let Some(extra) = words.next() {
                return Err(syn::Error::new_spanned(extra, help()));
            }
            if rounding != "stochastic" {
                return Err(syn::Error::new_spanned(
                    rounding,
                    "the rounding of a stored parameter is `stochastic` (to nearest is the \
                     default and is not written)",
                ));
            }
            match (role, storage) {
                ("param" | "state", Storage::Bf16) => Ok(Storage::Bf16Stochastic),
                ("state", _) => Err(syn::Error::new_spanned(
                    rounding,
                    "a state is f32 or bf16 rounded stochastically: #[state(bf16, stochastic)]",
                )),
                ("param", _) => Err(syn::Error::new_spanned(
                    rounding,
                    "stochastic rounding stores bf16 parameters only: an f32 store is exact, and \
                     f16 weights are rounded to nearest (their narrow range wants loss scaling, \
                     not noise)",
                )),
                _ => Err(syn::Error::new_spanned(
                    rounding,
                    format!(
                        "#[{role}] buffers are only read, so nothing rounds them: a rounding \
                         belongs to a stored buffer, #[param(bf16, stochastic)] or \
                         #[state(bf16, stochastic)]"
                    ),
                )),
            }
        }
        Meta::NameValue(nv) => Err(syn::Error::new_spanned(&nv.value, help())),
    }
}
