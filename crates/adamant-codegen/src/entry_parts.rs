//! What the single-tensor and multi-tensor entries share: which scalars an entry reads from
//! where ([`ScalarSource`]: launch arguments or the step record), and the pieces of an entry's
//! signature and descriptor that both forms build the same way (the uniforms, the records
//! header, one `KernelParam`). `optimizer` and `multi_tensor` both build on this module, and
//! neither on the other's internals.
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::ext::IdentExt;
use syn::{Ident, Lit};

use crate::descriptor::kernel_param;
use crate::device_crate::DeviceCratePath;
use crate::signature::{Arg, OptimizerFn, Role, ScalarType, BOUND, RECORDS, STEP_STATE};

/// Which pair of entries: the plain ones take the bound and every scalar as arguments; the
/// stepped ones take a `StepState` pointer last instead of the bound, and read the bound and the
/// `#[step]` scalars from the record it points at.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScalarSource {
    /// The plain entries (`<kernel>`, `<kernel>_multi`): every scalar and the bound are launch
    /// arguments.
    Arguments,
    /// The stepped entries (`<kernel>_stepped`, `<kernel>_multi_stepped`): every scalar and the
    /// bound come from the step record the last argument points at.
    Record,
}

impl ScalarSource {
    /// The exported name's suffix after the kernel's (and `_multi`).
    pub(crate) fn suffix(self) -> &'static str {
        match self {
            ScalarSource::Arguments => "",
            ScalarSource::Record => "_stepped",
        }
    }

    /// The uniforms this flavor's entries take as arguments, in declared order.
    pub(crate) fn uniforms(self, k: &OptimizerFn) -> Vec<&Arg> {
        match self {
            ScalarSource::Arguments => k.uniforms().collect(),
            ScalarSource::Record => k.step_uniforms().collect(),
        }
    }

    /// The last parameter of this flavor's entries: the bound, or the step-state pointer.
    pub(crate) fn last_param(self, kernels: &DeviceCratePath) -> TokenStream {
        match self {
            ScalarSource::Arguments => {
                kernel_param(kernels, BOUND, quote!(F32), quote!(ClampBound))
            }
            ScalarSource::Record => {
                kernel_param(kernels, STEP_STATE, quote!(Ptr), quote!(StepState))
            }
        }
    }

    /// The last parameter in the entry's Rust signature.
    pub(crate) fn last_arg(self, kernels: &DeviceCratePath) -> TokenStream {
        let bound = format_ident!("{}", BOUND);
        let state = format_ident!("{}", STEP_STATE);
        match self {
            ScalarSource::Arguments => quote! { #bound: f32 },
            ScalarSource::Record => quote! { #state: *const #kernels::step::StepRecord },
        }
    }

    /// For the stepped entries, the loads of the bound and of every scalar from the record, once
    /// per thread, under the names the sweep is called with, and the guard's verdict
    /// (`adamant_device::guard::verdict` for a single-tensor entry, `verdict_in_one_trip` for
    /// a multi-tensor one, whose many short blocks each pay the record's trips).
    pub(crate) fn state_loads(
        self,
        k: &OptimizerFn,
        kernels: &DeviceCratePath,
        multi: bool,
    ) -> TokenStream {
        if self == ScalarSource::Arguments {
            return quote! {};
        }
        let bound = format_ident!("{}", BOUND);
        let state = format_ident!("{}", STEP_STATE);
        let scalars = crate::record::loads(k, &state);
        let verdict = if multi {
            quote!(verdict_in_one_trip)
        } else {
            quote!(verdict)
        };
        quote! {
            let #bound: f32 = (*#state).state.bound;
            #scalars
            let __adamant_verdict = #kernels::guard::#verdict(&*#state);
        }
    }

    /// The step guard's part of an entry (`adamant_device::guard`): `__adamant_grad_coef`, the
    /// multiplier of the `#[grad]` inputs (the record's clip coefficient; 1 in a plain entry),
    /// and `__adamant_skip` (false in a plain entry). A skipped step sweeps no element, so it
    /// stores nothing and publishes an empty diagnostics record: the single-tensor entry's length
    /// becomes 0, and so does every chunk's length in the multi-tensor entry.
    pub(crate) fn guard(self) -> TokenStream {
        match self {
            ScalarSource::Arguments => quote! {
                let __adamant_grad_coef: f32 = 1.0;
                let __adamant_skip = false;
            },
            ScalarSource::Record => quote! {
                let __adamant_grad_coef: f32 = __adamant_verdict.grad_coef;
                let __adamant_skip = __adamant_verdict.skip;
            },
        }
    }

    /// The record layout of this flavor's descriptors: the stepped entries' scalars, none for
    /// the plain ones.
    pub(crate) fn record(self, k: &OptimizerFn, kernels: &DeviceCratePath) -> TokenStream {
        match self {
            ScalarSource::Arguments => quote! { &[] },
            ScalarSource::Record => crate::record::layout(k, kernels),
        }
    }
}

/// The uniforms' `KernelParam`s, in the order of `flavor`'s entries.
pub(crate) fn uniform_descriptor_params(
    k: &OptimizerFn,
    kernels: &DeviceCratePath,
    flavor: ScalarSource,
) -> Vec<TokenStream> {
    flavor
        .uniforms(k)
        .into_iter()
        .map(|a| {
            let name = a.ident.unraw().to_string();
            match &a.role {
                Role::UniformPtr(default) => {
                    let default = lit_f32(default);
                    kernel_param(
                        kernels,
                        &name,
                        quote!(Ptr),
                        quote!(UniformPtr { default: #default }),
                    )
                }
                Role::Scalar(ScalarType::U32) => kernel_param(
                    kernels,
                    &name,
                    quote!(U32),
                    quote!(Scalar {
                        domain: #kernels::abi::Domain::ANY
                    }),
                ),
                Role::Scalar(ScalarType::F32(domain)) => {
                    let domain = domain.f32_tokens(kernels);
                    kernel_param(
                        kernels,
                        &name,
                        quote!(F32),
                        quote!(Scalar { domain: #domain }),
                    )
                }
                _ => unreachable!("uniforms are scalars and uniform pointers"),
            }
        })
        .collect()
}

/// The records header's `KernelParam`: every optimizer entry's, just before the last.
pub(crate) fn records_param(kernels: &DeviceCratePath) -> TokenStream {
    kernel_param(kernels, RECORDS, quote!(Ptr), quote!(Records))
}

/// The records header in an entry's Rust signature.
pub(crate) fn records_arg(kernels: &DeviceCratePath) -> TokenStream {
    let records = format_ident!("{}", RECORDS);
    quote! { #records: *const #kernels::diagnostics::RecordsHeader }
}

/// The kernel's buffer count, as the const generic of the diagnostics functions.
pub(crate) fn buffer_count(k: &OptimizerFn) -> usize {
    k.buffers().count()
}

/// The uniforms of `flavor`'s entries as entry parameters (a `#[uniform_ptr]` is a
/// `*const f32`).
pub(crate) fn uniform_params(k: &OptimizerFn, flavor: ScalarSource) -> Vec<TokenStream> {
    flavor
        .uniforms(k)
        .into_iter()
        .map(|a| {
            let ident = &a.ident;
            match a.role {
                Role::UniformPtr(_) => quote! { #ident: *const f32 },
                Role::Scalar(ScalarType::U32) => quote! { #ident: u32 },
                _ => quote! { #ident: f32 },
            }
        })
        .collect()
}

/// Loads of the `#[uniform_ptr]`s, once per thread; null means the declared default.
pub(crate) fn uniform_loads(k: &OptimizerFn) -> Vec<TokenStream> {
    k.uniforms()
        .filter_map(|a| match &a.role {
            Role::UniformPtr(default) => {
                let ident = &a.ident;
                let default = lit_f32(default);
                Some(quote! {
                    let #ident: f32 = if #ident.is_null() { #default } else { *#ident };
                })
            }
            _ => None,
        })
        .collect()
}

/// The uniforms' names, as passed on to `sweep`.
pub(crate) fn uniform_idents(k: &OptimizerFn) -> Vec<&Ident> {
    k.uniforms().map(|a| &a.ident).collect()
}

pub(crate) fn lit_f32(lit: &Lit) -> TokenStream {
    quote! { (#lit) as f32 }
}
