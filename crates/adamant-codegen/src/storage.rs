//! A buffer's storage type, as a kernel declares it (`#[param(bf16)]`, `#[grad(f16)]`), and
//! the code that loads and stores one element or one group of four in it. The update always
//! computes in `f32`: a 16-bit element is widened exactly when loaded, and the parameter's new
//! value is clamped, rounded to nearest even, and held within the bound in the storage type
//! itself (`adamant_device::storage::Half::store`), which is what the PTX audit proves of the
//! stored bits.
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
}

impl Storage {
    /// `adamant_abi::Storage::<variant>`, for a descriptor.
    pub fn abi(self, kernels: &DeviceCratePath) -> TokenStream {
        match self {
            Storage::F32 => quote! { #kernels::abi::Storage::F32 },
            Storage::Bf16 => quote! { #kernels::abi::Storage::Bf16 },
            Storage::F16 => quote! { #kernels::abi::Storage::F16 },
        }
    }

    /// The element's type in device memory.
    pub fn element(self) -> TokenStream {
        match self {
            Storage::F32 => quote!(f32),
            Storage::Bf16 | Storage::F16 => quote!(u16),
        }
    }

    /// The type of a group of four elements (one vector load or store).
    pub fn group(self, kernels: &DeviceCratePath) -> TokenStream {
        match self {
            Storage::F32 => quote! { #kernels::vector::F4 },
            Storage::Bf16 | Storage::F16 => quote! { #kernels::vector::H4 },
        }
    }

    /// `adamant_device::storage::Half::<variant>` of a 16-bit type.
    fn half(self, kernels: &DeviceCratePath) -> Option<TokenStream> {
        match self {
            Storage::F32 => None,
            Storage::Bf16 => Some(quote! { #kernels::storage::Half::Bf16 }),
            Storage::F16 => Some(quote! { #kernels::storage::Half::F16 }),
        }
    }

    /// A thread's fresh diagnostics facts (`ThreadFacts::<n>`) for a parameter of this storage:
    /// the record's largest stored `|p|` is derived from the largest raw one through the store.
    pub fn facts(self, kernels: &DeviceCratePath, n: TokenStream) -> TokenStream {
        match self.half(kernels) {
            None => quote! { #kernels::diagnostics::ThreadFacts::<#n>::new() },
            Some(half) => quote! { #kernels::diagnostics::ThreadFacts::<#n>::stored_as(#half) },
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
    /// clamp, then for a 16-bit type the rounding and the hold within the bound.
    pub fn store_param(
        self,
        kernels: &DeviceCratePath,
        raw: TokenStream,
        bound: TokenStream,
    ) -> TokenStream {
        match self.half(kernels) {
            None => quote! { #kernels::clamp::weight_clamp(#raw, #bound) },
            Some(half) => quote! {
                #half.store(#raw, #bound, #kernels::storage::Rounding::Nearest)
            },
        }
    }
}

/// The storage a role attribute names: `#[param]` is `f32`, `#[param(bf16)]` bfloat16,
/// `#[param(f16)]` binary16 (likewise `#[grad(..)]`, `#[input(..)]`).
pub fn parse(attr: &Attribute, role: &str) -> syn::Result<Storage> {
    let help = || {
        format!(
            "#[{role}] takes at most a storage type: #[{role}], #[{role}(f32)], #[{role}(bf16)] \
             or #[{role}(f16)] (the update computes in f32 whatever the storage)"
        )
    };
    match &attr.meta {
        Meta::Path(_) => Ok(Storage::F32),
        Meta::List(list) => {
            let ident: syn::Ident = syn::parse2(list.tokens.clone())
                .map_err(|_| syn::Error::new_spanned(&list.tokens, help()))?;
            match ident.to_string().as_str() {
                "f32" => Ok(Storage::F32),
                "bf16" => Ok(Storage::Bf16),
                "f16" => Ok(Storage::F16),
                _ => Err(syn::Error::new_spanned(ident, help())),
            }
        }
        Meta::NameValue(nv) => Err(syn::Error::new_spanned(&nv.value, help())),
    }
}
