//! The step-state record of a kernel's stepped entries, generated from the kernel's own scalars,
//! and the kernel's schedule.
//!
//! Every scalar declares a lifetime (`signature::Lifetime`), and a stepped entry reads every one
//! of them from its record (`adamant_device::step::StepRecord`), none from a launch argument: a
//! captured graph replays its launches' arguments as they were at capture, so an argument that
//! changes from step to step would be replayed frozen (the bug class of a rule every kernel author
//! must remember). `#[step]` scalars are fields of the shared `StepState`; `#[hyper]` and
//! `#[derived]` ones take consecutive words of the record's own scalars, in declared order.
//!
//! For the host this module generates, inside the kernel's module: `Hyper` and `Derived` (one
//! field per `#[hyper]` / `#[derived]` scalar), `derived_at(t, &hyper)` (the `#[derived]` values
//! of step `t`, from their `init` values by the schedule, on the host), the record layout
//! (`RECORD`, which the stepped descriptors carry) and, for a kernel with a schedule, the
//! descriptor of its schedule entry `<kernel>_schedule`. On nvptx it generates that entry: for
//! each record index in its table, it reads the record's step number, `Hyper` and previous
//! `Derived`, calls the author's schedule and writes the new `Derived` words (in the record and in
//! its page-locked mirror). The schedule is a plain Rust function; whatever it compiles to is held
//! to the PTX audit like any entry (a `#[kernel_entry]`-kind entry that may write only its
//! `#[output]` record words).
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, Lit};

use crate::descriptor::kernel_param;
use crate::device_crate::DeviceCratePath;
use crate::signature::{Arg, Lifetime, OptimizerFn, Role, ScalarType};

/// The schedule entry's exported name.
pub(crate) fn schedule_name(k: &OptimizerFn) -> String {
    format!("{}_schedule", k.name().unraw())
}

fn is_u32(a: &Arg) -> bool {
    matches!(a.role, Role::Scalar(ScalarType::U32))
}

fn rust_type(a: &Arg) -> TokenStream {
    if is_u32(a) {
        quote!(u32)
    } else {
        quote!(f32)
    }
}

/// A record word's value as the scalar's type (`w` is a `u32` expression).
fn from_word(a: &Arg, w: TokenStream) -> TokenStream {
    if is_u32(a) {
        w
    } else {
        quote! { f32::from_bits(#w) }
    }
}

/// A scalar's value as its record word (`v` is an expression of the scalar's type).
fn to_word(a: &Arg, v: TokenStream) -> TokenStream {
    if is_u32(a) {
        v
    } else {
        quote! { (#v).to_bits() }
    }
}

/// The `init` literal as a value of the scalar's type.
fn init_value(a: &Arg, lit: &Lit) -> TokenStream {
    if is_u32(a) {
        quote! { (#lit) as u32 }
    } else {
        quote! { (#lit) as f32 }
    }
}

/// The loads a stepped entry makes of its scalars, once per thread, under their own names:
/// `#[step]` fields from the shared part, the others from their words. `state` is the record
/// pointer (`*const StepRecord`).
pub(crate) fn loads(k: &OptimizerFn, state: &Ident) -> TokenStream {
    let words: Vec<(usize, &Arg)> = k.record_words().collect();
    let loads = k.scalars().map(|a| {
        let ident = &a.ident;
        let ty = rust_type(a);
        match a.lifetime {
            Some(Lifetime::Step) => {
                let field = format_ident!("{}", a.ident.unraw().to_string());
                quote! { let #ident: #ty = (*#state).state.#field; }
            }
            _ => {
                let slot = words
                    .iter()
                    .find(|(_, w)| w.ident == a.ident)
                    .map(|(slot, _)| *slot)
                    .expect("every #[hyper]/#[derived] scalar has a word");
                let value = from_word(a, quote! { (*#state).scalars[#slot] });
                quote! { let #ident: #ty = #value; }
            }
        }
    });
    quote! { #(#loads)* }
}

/// The record layout literal (`&[RecordScalar, ..]`) of `k`'s stepped entries.
pub(crate) fn layout(k: &OptimizerFn, kernels: &DeviceCratePath) -> TokenStream {
    let mut slot = 0u32;
    let scalars = k.scalars().map(|a| {
        let name = a.ident.unraw().to_string();
        let ty = if is_u32(a) { quote!(U32) } else { quote!(F32) };
        let lifetime = match (&a.lifetime, &a.role) {
            (Some(Lifetime::Step), _) => quote!(Step),
            (Some(Lifetime::Hyper), role) => {
                let domain = match role {
                    Role::Scalar(ScalarType::F32(domain)) => domain.f32_tokens(kernels),
                    _ => quote!(#kernels::abi::Domain::ANY),
                };
                let s = slot;
                slot += 1;
                quote!(Hyper { slot: #s, domain: #domain })
            }
            (Some(Lifetime::Derived(init)), _) => {
                let bits = to_word(a, init_value(a, init));
                let s = slot;
                slot += 1;
                quote!(Derived { slot: #s, initial_bits: #bits })
            }
            (None, _) => unreachable!("scalars() yields scalars with a lifetime"),
        };
        quote! {
            #kernels::abi::RecordScalar {
                name: #name,
                ty: #kernels::abi::ParamType::#ty,
                lifetime: #kernels::abi::Lifetime::#lifetime,
            }
        }
    });
    quote! { &[#(#scalars),*] }
}

/// The path of the author's schedule as seen from inside the kernel's module (`use super::*`
/// brings a plain name; a path through `self` or `super` moves one level up).
pub(crate) fn path_from_module(path: &syn::Path) -> TokenStream {
    let first = path.segments.first().map(|s| s.ident.to_string());
    match first.as_deref() {
        Some("self") => {
            let rest = path.segments.iter().skip(1);
            quote! { super #(::#rest)* }
        }
        Some("super") => quote! { super::#path },
        _ => quote! { #path },
    }
}

/// `Hyper`, `Derived` and `derived_at`, on both targets (the schedule entry uses them on the
/// device, the runtime on the host), inside the kernel's module.
pub(crate) fn value_items(k: &OptimizerFn, kernels: &DeviceCratePath) -> TokenStream {
    let words = quote! { [u32; #kernels::step::RECORD_SCALARS] };
    let slot_of = |a: &Arg| {
        k.record_words()
            .find(|(_, w)| w.ident == a.ident)
            .map(|(slot, _)| slot)
            .expect("every #[hyper]/#[derived] scalar has a word")
    };
    let hypers: Vec<&Arg> = k.hypers().collect();
    let derived: Vec<&Arg> = k.derived().collect();
    let hyper_fields = hypers.iter().map(|a| {
        let (ident, ty) = (&a.ident, rust_type(a));
        quote! { pub #ident: #ty }
    });
    let hyper_reads = hypers.iter().map(|a| {
        let (ident, slot) = (&a.ident, slot_of(a));
        let value = from_word(a, quote! { words[#slot] });
        quote! { #ident: #value }
    });
    let derived_fields = derived.iter().map(|a| {
        let (ident, ty) = (&a.ident, rust_type(a));
        quote! { pub #ident: #ty }
    });
    let derived_reads = derived.iter().map(|a| {
        let (ident, slot) = (&a.ident, slot_of(a));
        let value = from_word(a, quote! { words[#slot] });
        quote! { #ident: #value }
    });
    let derived_writes = derived.iter().map(|a| {
        let (ident, slot) = (&a.ident, slot_of(a));
        let value = to_word(a, quote! { self.#ident });
        quote! { words[#slot] = #value; }
    });
    let initial = derived.iter().map(|a| {
        let ident = &a.ident;
        let Some(Lifetime::Derived(init)) = &a.lifetime else {
            unreachable!("derived() yields #[derived] scalars")
        };
        let value = init_value(a, init);
        quote! { #ident: #value }
    });
    let n_words = k.record_words().count();
    let too_many = format!(
        "#[optimizer_kernel] `{}` has {n_words} #[hyper] and #[derived] scalars; a step-state \
         record holds at most step::RECORD_SCALARS",
        k.name().unraw()
    );
    // The schedule's call, spanned at the path the author gave, so a schedule of the wrong type
    // is reported there.
    let step = match &k.schedule {
        Some(path) => {
            let path = path_from_module(path);
            quote_spanned! {path.span()=>
                let next: Derived = #path(t, hyper, previous);
                next
            }
        }
        None => quote! {
            let _ = (t, hyper, previous);
            Derived {}
        },
    };
    let name = k.name().unraw().to_string();
    quote! {
        // The record has a fixed number of words for the kernel's own scalars.
        const _: () = ::core::assert!(#n_words <= #kernels::step::RECORD_SCALARS, #too_many);

        #[doc = ::core::concat!("The `#[hyper]` scalars of `", #name, "`: the hyperparameters its step-state record holds, set by the host (when the record is made, and between steps).")]
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct Hyper {
            #(#hyper_fields,)*
        }

        #[doc = ::core::concat!("The `#[derived]` scalars of `", #name, "`: what its schedule computes from the step number after every advance.")]
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct Derived {
            #(#derived_fields,)*
        }

        impl Hyper {
            /// The hyperparameters as a record's words hold them.
            #[doc(hidden)]
            #[inline(always)]
            #[allow(unused_variables)]
            pub fn from_words(words: &#words) -> Hyper {
                Hyper { #(#hyper_reads,)* }
            }
        }

        impl Derived {
            /// Every `#[derived]` scalar at `t = 0` (its `init`).
            pub const INITIAL: Derived = Derived { #(#initial,)* };

            /// The derived values as a record's words hold them.
            #[doc(hidden)]
            #[inline(always)]
            #[allow(unused_variables)]
            pub fn from_words(words: &#words) -> Derived {
                Derived { #(#derived_reads,)* }
            }

            /// Writes the derived values into their words (and no other).
            #[doc(hidden)]
            #[inline(always)]
            #[allow(unused_variables)]
            pub fn write_words(&self, words: &mut #words) {
                #(#derived_writes)*
            }

            /// One step of the schedule: step `t`'s values from step `t - 1`'s.
            #[inline(always)]
            pub fn next(t: u32, hyper: &Hyper, previous: &Derived) -> Derived {
                #step
            }
        }

        /// The `#[derived]` scalars of step `t` (1 for the first step; 0 gives their `init`),
        /// from `hyper`: the schedule run on the host from `t = 1`, with the code the device
        /// runs. What a record resumed at step `t` starts from, and what a plain launch of step
        /// `t` passes.
        pub fn derived_at(t: u32, hyper: &Hyper) -> Derived {
            let mut derived = Derived::INITIAL;
            let mut s: u32 = 1;
            while s <= t {
                derived = Derived::next(s, hyper, &derived);
                s += 1;
            }
            derived
        }
    }
}

/// The schedule entry's descriptor and registration (host), for a kernel with a schedule.
pub(crate) fn schedule_descriptor(k: &OptimizerFn, kernels: &DeviceCratePath) -> TokenStream {
    if k.schedule.is_none() {
        return quote! {
            /// This kernel has no `#[derived]` scalars, hence no schedule entry.
            #[cfg(not(target_arch = "nvptx64"))]
            pub const SCHEDULE_DESCRIPTOR: ::core::option::Option<&'static #kernels::abi::KernelDescriptor> = None;
        };
    }
    let name = schedule_name(k);
    let any = quote!(Scalar {
        domain: #kernels::abi::Domain::ANY
    });
    let params = [
        kernel_param(kernels, "states", quote!(Ptr), quote!(Output)),
        kernel_param(kernels, "indices", quote!(Ptr), quote!(IndexTable)),
        kernel_param(kernels, "n_indices", quote!(U32), any),
        kernel_param(kernels, "mirror", quote!(Ptr), quote!(Output)),
    ];
    let descriptor = crate::descriptor::registered(
        kernels,
        crate::descriptor::Descriptor {
            docs: quote! {
                /// The schedule entry's parameters, in PTX order: the record array, the indices of the
                /// records this kernel's schedule advances, their count, and the page-locked mirror.
            },
            ident: format_ident!("SCHEDULE"),
            register: format_ident!("__ADAMANT_REGISTER_SCHEDULE"),
            name: quote!(#name),
            kind: quote!(Other),
            params: crate::descriptor::param_list(&params),
            record: quote!(&[]),
        },
    );
    quote! {
        #descriptor

        /// The schedule entry, run after every advance of a record made for this kernel.
        #[cfg(not(target_arch = "nvptx64"))]
        pub const SCHEDULE_DESCRIPTOR: ::core::option::Option<&'static #kernels::abi::KernelDescriptor> = Some(&SCHEDULE);
    }
}

/// The nvptx schedule entry (in the kernel's anonymous device block), for a kernel with one.
pub(crate) fn schedule_entry(k: &OptimizerFn, kernels: &DeviceCratePath) -> TokenStream {
    if k.schedule.is_none() {
        return quote! {};
    }
    let name = format_ident!("{}", schedule_name(k));
    let kernel = k.name();
    let record = quote! { #kernels::step::StepRecord };
    quote! {
        #[no_mangle]
        unsafe extern "gpu-kernel" fn #name(
            states: *mut u32,
            indices: *const u32,
            n_indices: u32,
            mirror: *mut u32,
        ) {
            let i = #kernels::builtins::global_thread_index();
            if i < n_indices as usize {
                let r = *indices.add(i) as usize;
                let record = &mut *(states as *mut #record).add(r);
                // A skipped step (the guard's) did not advance: its derived values stay.
                if #kernels::guard::verdict(record).skip {
                    return;
                }
                let hyper = #kernel::Hyper::from_words(&record.scalars);
                let previous = #kernel::Derived::from_words(&record.scalars);
                let next = #kernel::Derived::next(record.state.step, &hyper, &previous);
                next.write_words(&mut record.scalars);
                next.write_words(&mut (*(mirror as *mut #record).add(r)).scalars);
            }
        }
    }
}
