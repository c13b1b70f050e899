//! Proc-macros for adamant's device crate.
//!
//! - [`optimizer_kernel`]: the author writes the per-element update of one optimizer; the macro
//!   generates the PTX entries (loads, stores, grid-stride loop, 16-byte vector path, and the
//!   multi-tensor entry `<name>_multi`), a trailing `weight_clamp_max_abs: f32` parameter, and the
//!   clamp of the new parameter value before its only store. On the host it generates the math as
//!   plain functions (`<name>::update`, `<name>::element`) and a typed, registered descriptor
//!   with each scalar's domain (`#[domain(..)]`).
//! - [`kernel_entry`]: declares a kernel that is not an optimizer (it never writes parameters),
//!   with a role on every pointer, so the PTX audit can tell it from a hand-written optimizer
//!   entry and hold it to what it may write.
//!
//! What an optimizer body may contain is checked on its syntax tree (`body`): no `unsafe` in any
//! form, no macros (the allow-list `body::ALLOWED_MACROS` is empty), no nested items, only lint
//! attributes. The generated device code (the entries and the `__adamant_sweep` loop that
//! stores through the clamp) sits in an anonymous `const _: () = { .. };` block, so no other code
//! can name it.
//!
//! The generated code names `adamant-device` by the name the expanding crate's `Cargo.toml`
//! gives it, so the macros work through a renamed dependency
//! (`kernels = { package = "adamant-device", .. }`, then `use kernels::optimizer_kernel;`), and a
//! crate that does not depend on `adamant-device` at all gets one error that says to add it
//! (`device_crate`).
//!
//! Expansion functions return `proc_macro2::TokenStream` so unit tests can snapshot them.
use proc_macro::TokenStream;

use device_crate::DeviceCratePath;

mod body;
mod companion;
mod descriptor;
mod device_crate;
mod domain;
mod entry;
mod entry_parts;
mod fused;
mod fused_rule;
mod group_use;
mod multi_tensor;
mod optimizer;
mod record;
mod scalar_group;
mod signature;
#[cfg(test)]
mod snapshot_tests;
mod storage;
#[cfg(test)]
mod structure_tests;
#[cfg(test)]
mod test_kernels;

/// The expansion `expand` makes with the device crate's path, or its errors.
fn with_device_crate(
    expand: impl FnOnce(&DeviceCratePath) -> syn::Result<proc_macro2::TokenStream>,
) -> TokenStream {
    DeviceCratePath::resolve()
        .and_then(|kernels| expand(&kernels))
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Turns a per-element update into a clamped optimizer kernel. See `signature` for the argument
/// roles (`#[param]`, `#[input]`, `#[state]`, `#[uniform_ptr(default = ..)]`, plain scalars with
/// an optional `#[domain(..)]`) and `body` for what the body may contain.
///
/// # Scalar groups
///
/// Scalars that several kernels take are declared once, as a [`macro@scalar_group`], and a
/// kernel takes the group as one argument, `#[group] name: Group`:
///
/// ```ignore
/// #[optimizer_kernel]
/// pub fn iqn_adam_kernel(
///     #[param] p: f32,
///     #[grad] g: f32,
///     #[state] m: &mut f32,
///     #[state] v: &mut f32,
///     #[group] adam: Adam,          // lr, beta1, beta2, eps
///     #[group] decay: WeightDecay,  // weight_decay
///     #[group] bc: BiasCorrections, // bias_correction1, bias_correction2
/// ) -> f32 {
///     adam_step(p, l2_decay(g, p, decay.weight_decay), m, v, adam.with(bc))
/// }
/// ```
///
/// The kernel is the one with the group's fields written out in place of the argument, each with
/// the lifetime and `#[domain]` the group gives it: the same entries, descriptors (scalar names
/// and order) and step record. The body reads the group as one value (`adam.lr`); the fields are
/// not in scope by their own names. A field named like another scalar of the kernel, or two
/// groups with a field in common, is an error (a kernel names each scalar once).
///
/// A proc macro cannot read another item, so the kernel learns the fields from the group: the
/// group's path (`Adam`, `adamant_device::scalar_groups::WeightDecay`, or either through a `use`) names, besides the
/// struct, a macro that `#[scalar_group]` defined; the kernel expands to a call of that macro,
/// which calls back into this crate with the fields appended, one group after the other. A path
/// that names no group is rustc's "cannot find macro", with "`T` is not a scalar group" beside
/// it when `T` is a type.
#[proc_macro_attribute]
pub fn optimizer_kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    with_device_crate(|kernels| optimizer::expand(attr.into(), item.into(), kernels))
}

/// Declares a device entry that is not an optimizer kernel (for example the NaN checker); every
/// pointer argument takes `#[input]`, `#[output]` or `#[index]`.
#[proc_macro_attribute]
pub fn kernel_entry(attr: TokenStream, item: TokenStream) -> TokenStream {
    with_device_crate(|kernels| entry::expand(attr.into(), item.into(), kernels))
}

/// Declares a scalar group: scalars that kernels share, declared once with their lifetimes and
/// domains, and taken by an `#[optimizer_kernel]` as one argument, `#[group] name: Group`.
///
/// ```ignore
/// #[scalar_group]
/// #[derive(Clone, Copy, Debug)]
/// pub struct BiasCorrections {
///     #[step]
///     #[domain(gt = 0.0, le = 1.0)]
///     bias_correction1: f32,
///     #[step]
///     #[domain(gt = 0.0, le = 1.0)]
///     bias_correction2: f32,
/// }
/// ```
///
/// Each field is a scalar as a kernel declares one (`f32` or `u32`, a lifetime, an optional
/// `#[domain]`); a buffer, a `#[uniform_ptr]` or a field without a lifetime is an error here.
/// The struct keeps its other attributes (write `#[scalar_group]` first) and its fields become
/// as visible as the struct. Beside it the macro defines a hidden `#[macro_export]` macro and
/// re-exports it under the struct's name, at the struct's path: the kernel macro calls it to
/// learn the fields (a proc macro cannot read another item), wherever the type's path reaches,
/// in this crate or downstream. Group names are therefore unique within a crate. The
/// kernel side is described at [`optimizer_kernel`].
#[proc_macro_attribute]
pub fn scalar_group(attr: TokenStream, item: TokenStream) -> TokenStream {
    with_device_crate(|kernels| scalar_group::expand(attr.into(), item.into(), kernels))
}

/// The callback a scalar group's macro calls with its fields (see [`optimizer_kernel`]); not
/// for direct use.
#[doc(hidden)]
#[proc_macro]
pub fn __optimizer_kernel_with_groups(input: TokenStream) -> TokenStream {
    with_device_crate(|kernels| optimizer::expand_with_groups(input.into(), kernels))
}

/// Declares a fused entry: one launch that updates every tensor of a set, each tensor with its
/// own rule (one of the named `#[optimizer_kernel]`s, of this crate or another) and its own step
/// record (its group's hyperparameters, step and bound).
///
/// ```ignore
/// fused_optimizer! {
///     /// Every group of the RL step in one launch.
///     pub rl_step = [dqn_adam_update_kernel, iqn_adam_kernel, soft_update_kernel];
/// }
/// ```
///
/// Each rule's branch calls the code that rule's own macro generated, with the clamp stamped in:
/// nothing of a rule is written twice. See `adamant_abi::fused` for the tables.
#[proc_macro]
pub fn fused_optimizer(input: TokenStream) -> TokenStream {
    with_device_crate(|kernels| fused::expand(input.into(), kernels))
}
