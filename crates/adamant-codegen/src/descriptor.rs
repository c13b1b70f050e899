//! The host `static` that describes one generated entry (`abi::KernelDescriptor`) and its
//! registration in `abi::KERNELS`: one definition for every entry the macros generate (plain,
//! stepped, multi-tensor, schedule, `#[kernel_entry]`), so a field added to the descriptor is
//! one change here; and one `KernelParam` of a descriptor ([`kernel_param`]).
use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::device_crate::DeviceCratePath;
use crate::storage::Storage;

/// One entry's descriptor, as [`registered`] emits it.
pub(crate) struct Descriptor {
    /// Outer attributes of the `static` (its doc comment).
    pub(crate) docs: TokenStream,
    /// The `static`'s name (`DESCRIPTOR`, `STEPPED_DESCRIPTOR`, ...).
    pub(crate) ident: Ident,
    /// The registration `static`'s name, unique in its module.
    pub(crate) register: Ident,
    /// The exported name, a string expression.
    pub(crate) name: TokenStream,
    /// `Optimizer` or `Other` (`abi::KernelKind`).
    pub(crate) kind: TokenStream,
    /// The parameters, an expression of type `&'static [KernelParam]` in PTX order
    /// ([`param_list`] of `KernelParam` literals, or a list defined elsewhere).
    pub(crate) params: TokenStream,
    /// The record layout expression (`&[]` for an entry that reads no step record).
    pub(crate) record: TokenStream,
}

/// The host-only `static` describing `d` and the one registering it in `abi::KERNELS`.
pub(crate) fn registered(kernels: &DeviceCratePath, d: Descriptor) -> TokenStream {
    let Descriptor {
        docs,
        ident,
        register,
        name,
        kind,
        params,
        record,
    } = d;
    quote! {
        #docs
        #[cfg(not(target_arch = "nvptx64"))]
        pub static #ident: #kernels::abi::KernelDescriptor =
            #kernels::abi::KernelDescriptor {
                set: ::core::env!("CARGO_CRATE_NAME"),
                defined_at: ::core::concat!(::core::module_path!(), " (", ::core::file!(), ":", ::core::line!(), ")"),
                name: #name,
                kind: #kernels::abi::KernelKind::#kind,
                params: #params,
                record: #record,
            };

        #[cfg(not(target_arch = "nvptx64"))]
        #[#kernels::__linkme::distributed_slice(#kernels::abi::KERNELS)]
        #[linkme(crate = #kernels::__linkme)]
        static #register: &#kernels::abi::KernelDescriptor = &#ident;
    }
}

/// `params`, `KernelParam` literals in PTX order, as a descriptor's parameter list.
pub(crate) fn param_list(params: &[TokenStream]) -> TokenStream {
    quote! { &[#(#params),*] }
}

/// One `KernelParam` literal of a parameter that is not a buffer (its storage `F32`).
pub(crate) fn kernel_param(
    kernels: &DeviceCratePath,
    name: &str,
    ty: TokenStream,
    role: TokenStream,
) -> TokenStream {
    param_literal(kernels, name, ty, role, Storage::F32)
}

/// One `KernelParam` literal of a buffer pointer (or of a table of them) whose elements are
/// stored as `storage`.
pub(crate) fn buffer_param(
    kernels: &DeviceCratePath,
    name: &str,
    role: TokenStream,
    storage: Storage,
) -> TokenStream {
    param_literal(kernels, name, quote!(Ptr), role, storage)
}

fn param_literal(
    kernels: &DeviceCratePath,
    name: &str,
    ty: TokenStream,
    role: TokenStream,
    storage: Storage,
) -> TokenStream {
    let rounding = storage.rounding_abi(kernels);
    let storage = storage.abi(kernels);
    quote! {
        #kernels::abi::KernelParam {
            name: #name,
            ty: #kernels::abi::ParamType::#ty,
            role: #kernels::abi::ParamRole::#role,
            storage: #storage,
            rounding: #rounding,
        }
    }
}
