//! Proc-macros for adamant's device crate.
//!
//! - [`optimizer_kernel`]: the author writes the per-element update of one optimizer; the macro
//!   generates the PTX entry (loads, stores, grid-stride loop, 16-byte vector path), a trailing
//!   `weight_clamp_max_abs: f32` parameter, and the clamp of the new parameter value before its
//!   only store. On the host it generates the math as plain functions and a typed descriptor.
//! - [`kernel_entry`]: declares a kernel that is not an optimizer (it never writes parameters),
//!   so the PTX audit can tell it from a hand-written optimizer entry.
//!
//! Expansion functions return `proc_macro2::TokenStream` so unit tests can snapshot them.
use proc_macro::TokenStream;

mod body;
mod domain;
mod entry;
mod multi_tensor;
mod optimizer;
mod signature;
#[cfg(test)]
mod snapshot_tests;
#[cfg(test)]
mod structure_tests;
#[cfg(test)]
mod test_kernels;

/// Turns a per-element update into a clamped optimizer kernel. See `signature` for the argument
/// roles (`#[param]`, `#[input]`, `#[state]`, `#[uniform_ptr(default = ..)]`, plain scalars).
#[proc_macro_attribute]
pub fn optimizer_kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    optimizer::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Declares a device entry that is not an optimizer kernel (for example the NaN checker).
#[proc_macro_attribute]
pub fn kernel_entry(attr: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
