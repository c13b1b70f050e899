//! Code generation for `#[optimizer_kernel]`.
//!
//! From one validated definition it emits:
//! - `mod <name>` (both targets): `update` (the author's math, unchanged) and `element` (update,
//!   then the clamp epilogue: exactly the value the entry stores); neither touches memory beyond
//!   the `&mut f32` state it is handed;
//! - on the host, in that module: `DESCRIPTOR` (registered in `abi::KERNELS`), typed `Buffers`
//!   and `Scalars`, and `Entry: OptimizerEntry` (sealed: `unsafe impl GeneratedEntry`), from
//!   which the runtime builds launches;
//! - on nvptx, in an anonymous `const _: () = { .. };` block, so that none of it can be named
//!   from Rust: `__adamant_sweep` (the loop that loads, calls `element` and stores) and the two
//!   `#[no_mangle] extern "gpu-kernel"` entries that call it, `<name>` and `<name>_multi`. The
//!   single entry's parameters are the buffers in declared order, `len`, the uniforms in
//!   declared order, then `weight_clamp_max_abs`, always last.
use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::ext::IdentExt;
use syn::{FnArg, Ident};

use crate::descriptor::kernel_param;
use crate::device_crate::DeviceCratePath;
use crate::entry_parts::{
    buffer_count, records_arg, records_param, uniform_descriptor_params, uniform_idents,
    uniform_loads, uniform_params, ScalarSource,
};
use crate::signature::{self, Arg, OptimizerFn, Role, ScalarType, BOUND, LEN, RECORDS};
use crate::storage::Storage;

/// The expansion of `#[optimizer_kernel]` on `item`, with every path into the device crate
/// starting at `kernels`.
pub fn expand(
    attr: TokenStream,
    item: TokenStream,
    kernels: &DeviceCratePath,
) -> syn::Result<TokenStream> {
    expand_resolved(attr, item, &[], kernels)
}

/// The expansion of the callback that a scalar group's macro calls with its fields
/// ([`crate::group_use`]): the next group's call, or the kernel once every group is resolved.
pub fn expand_with_groups(
    input: TokenStream,
    kernels: &DeviceCratePath,
) -> syn::Result<TokenStream> {
    let (attr, item, groups) = crate::group_use::parse_state(input)?;
    expand_resolved(attr, item, &groups, kernels)
}

/// The kernel `item`, `groups` holding the fields of its first `#[group]` arguments.
pub fn expand_resolved(
    attr: TokenStream,
    item: TokenStream,
    groups: &[TokenStream],
    kernels: &DeviceCratePath,
) -> syn::Result<TokenStream> {
    if let Some(call) = crate::group_use::next_callback(&attr, &item, groups, kernels)? {
        return Ok(call);
    }
    let kernel = signature::parse(attr, item, groups)?;
    let module = module(&kernel, kernels);
    let sweep = sweep(&kernel, kernels);
    let entry = device_entry(&kernel, kernels, ScalarSource::Arguments);
    let stepped_entry = device_entry(&kernel, kernels, ScalarSource::Record);
    let multi_entry = crate::multi_tensor::device_entry(&kernel, kernels, ScalarSource::Arguments);
    let multi_stepped_entry =
        crate::multi_tensor::device_entry(&kernel, kernels, ScalarSource::Record);
    let schedule_entry = crate::record::schedule_entry(&kernel, kernels);
    // The device code sits in an anonymous const block: its items are exported by name
    // (`#[no_mangle]`) but cannot be named from Rust, so nothing but the kernel's entries can call
    // `__adamant_sweep` (with a bound of its choosing), and nothing can call the entries (which
    // `extern "gpu-kernel"` forbids anyway).
    let entries_cfg = crate::device_crate::entries_cfg();
    // `adamant_entries` is set by the PTX build for the crate it compiles only
    // (adamant_build::KernelCrate passes it after `--`), so a kernel crate's PTX holds its own
    // entries and none of its dependencies' (adamant's among them). The outer block allows the
    // cfg name, which no Cargo.toml declares.
    Ok(quote! {
        #module

        #[cfg(target_arch = "nvptx64")]
        #[allow(unexpected_cfgs)]
        const _: () = {
            #entries_cfg
            const _: () = {
                #sweep
                #entry
                #stepped_entry
                #multi_entry
                #multi_stepped_entry
                #schedule_entry
            };
        };
    })
}

fn module(k: &OptimizerFn, kernels: &DeviceCratePath) -> TokenStream {
    let name = k.name();
    let vis = &k.func.vis;
    let docs = k.func.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let lints = k.func.attrs.iter().filter(|a| !a.path().is_ident("doc"));
    // A kernel with groups builds them from their fields before its own statements. Its
    // `update` takes the fields one by one, an arity the author never wrote: not theirs to allow.
    let (body, arity) = match k.groups.is_empty() {
        true => (k.func.block.to_token_stream(), quote!()),
        false => {
            let (groups, block) = (crate::group_use::bindings(&k.groups), &k.func.block);
            let arity = quote!(#[allow(clippy::too_many_arguments)]);
            (quote! {{ #groups #block }}, arity)
        }
    };
    let bound = format_ident!("{}", BOUND);
    // The author's arguments without their role attributes. `update` keeps the author's patterns
    // (`mut x`); `element` only forwards, so it takes plain names.
    let inputs: Vec<TokenStream> = k
        .func
        .sig
        .inputs
        .iter()
        .map(|arg| match arg {
            FnArg::Typed(t) => {
                let (pat, ty) = (&t.pat, &t.ty);
                quote! { #pat: #ty }
            }
            FnArg::Receiver(_) => unreachable!("rejected by signature::parse"),
        })
        .collect();
    let forwarded: Vec<TokenStream> = k
        .func
        .sig
        .inputs
        .iter()
        .zip(&k.args)
        .map(|(arg, a)| match arg {
            FnArg::Typed(t) => {
                let (ident, ty) = (&a.ident, &t.ty);
                quote! { #ident: #ty }
            }
            FnArg::Receiver(_) => unreachable!("rejected by signature::parse"),
        })
        .collect();
    let idents: Vec<&Ident> = k.args.iter().map(|a| &a.ident).collect();
    // What the parameter buffer holds afterwards, as an f32 (a 16-bit store widened back).
    let param_storage = param_arg(k).storage;
    let stored = param_storage.store_param(
        kernels,
        quote! { self::update(#(#idents),*) },
        quote!(#bound),
        quote!(rounding_word),
    );
    // A stochastic store's element takes its random word too
    // (`storage::stochastic_word(storage::rounding_key(seed, step, tensor), ordinal, index)`).
    let word_param = match param_storage.is_stochastic() {
        true => quote! { rounding_word: u32, },
        false => quote!(),
    };
    let stored_value = param_storage.widen(kernels, stored);
    let host = host_items(k, kernels);
    let multi_host = crate::multi_tensor::host_items(k, kernels);
    let record_values = crate::record::value_items(k, kernels);
    let schedule = crate::record::schedule_descriptor(k, kernels);
    let fused = crate::fused_rule::items(k, kernels);
    let n_buffers = buffer_count(k);
    let too_many = format!(
        "#[optimizer_kernel] `{}` has {n_buffers} buffers; a diagnostics record holds at most \
         diagnostics::MAX_BUFFERS",
        k.name().unraw()
    );
    quote! {
        #(#docs)*
        #[allow(non_snake_case)]
        #vis mod #name {
            #[allow(unused_imports)]
            use super::*;

            /// The per-element update as written in the kernel's definition (no clamp).
            #[inline(always)]
            #(#lints)*
            #arity
            pub fn update(#(#inputs),*) -> f32 #body

            /// What the entry stores to the parameter buffer for one element: [`update`], then the
            /// clamp epilogue stamped by `#[optimizer_kernel]`. A kernel whose parameter is stored
            /// stochastically takes the element's random word last (`rounding_word`, as the entry
            /// draws it: `storage::stochastic_word(storage::rounding_key(seed, step, tensor),
            /// ordinal, element)` with the parameter's stochastic ordinal).
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            pub fn element(#(#forwarded,)* #bound: f32, #word_param) -> f32 {
                #stored_value
            }

            // The diagnostics record has a fixed number of buffer slots.
            const _: () = ::core::assert!(#n_buffers <= #kernels::diagnostics::MAX_BUFFERS, #too_many);

            #record_values

            #host

            #multi_host

            #schedule

            #fused
        }
    }
}

fn host_items(k: &OptimizerFn, kernels: &DeviceCratePath) -> TokenStream {
    let name_str = k.name().unraw().to_string();
    let stepped_params = descriptor_params(k, kernels, ScalarSource::Record);
    let descriptor_params = descriptor_params(k, kernels, ScalarSource::Arguments);
    let buffer_fields: Vec<&Ident> = k.buffers().map(|a| &a.ident).collect();
    let buffer_names: Vec<String> = buffer_fields
        .iter()
        .map(|i| i.unraw().to_string())
        .collect();
    // Each buffer's role picks its type in `Buffers<K>` and its variant in `BufferRef`: the role
    // the descriptor declares is the role the host types give the field.
    let role_of = |a: &Arg| match a.role {
        Role::Param => format_ident!("Param"),
        Role::Input => format_ident!("Input"),
        Role::State => format_ident!("State"),
        _ => unreachable!("buffers are params, inputs or states"),
    };
    let buffer_roles: Vec<Ident> = k.buffers().map(role_of).collect();
    let field = |a: &&Arg| {
        let ident = &a.ident;
        match a.role {
            Role::UniformPtr(_) => quote! { pub #ident: #kernels::abi::UniformPtr },
            Role::Scalar(ScalarType::U32) => quote! { pub #ident: u32 },
            _ => quote! { pub #ident: f32 },
        }
    };
    let scalar_fields: Vec<TokenStream> = ScalarSource::Arguments
        .uniforms(k)
        .iter()
        .map(field)
        .collect();
    let step_scalar_fields: Vec<TokenStream> =
        ScalarSource::Record.uniforms(k).iter().map(field).collect();
    let step_scalar_args = scalar_args(k, kernels, ScalarSource::Record);
    let scalar_args = scalar_args(k, kernels, ScalarSource::Arguments);
    let stepped_name = format!("{name_str}{}", ScalarSource::Record.suffix());
    let stepped_record = ScalarSource::Record.record(k, kernels);
    let hyper_values = field_values(k.hypers(), kernels, quote!(hyper));
    let derived_values = field_values(k.derived(), kernels, quote!(derived));
    let plain_descriptor = crate::descriptor::registered(
        kernels,
        crate::descriptor::Descriptor {
            docs: quote! {
                /// The entry's parameters, in PTX order.
            },
            ident: format_ident!("DESCRIPTOR"),
            register: format_ident!("__ADAMANT_REGISTER"),
            name: quote!(#name_str),
            kind: quote!(Optimizer),
            params: crate::descriptor::param_list(&descriptor_params),
            record: quote!(&[]),
        },
    );
    let stepped_descriptor = crate::descriptor::registered(
        kernels,
        crate::descriptor::Descriptor {
            docs: quote! {
                /// The stepped entry's parameters, in PTX order (the step-state pointer last).
            },
            ident: format_ident!("STEPPED_DESCRIPTOR"),
            register: format_ident!("__ADAMANT_REGISTER_STEPPED"),
            name: quote!(#stepped_name),
            kind: quote!(Optimizer),
            params: crate::descriptor::param_list(&stepped_params),
            record: stepped_record,
        },
    );
    quote! {
        #plain_descriptor
        #stepped_descriptor

        /// The per-element buffers of one launch, in entry order, each of the type the buffer
        /// family `K` gives its role (`#[param]`, `#[input]` or `#[state]`).
        #[cfg(not(target_arch = "nvptx64"))]
        pub struct Buffers<K: #kernels::abi::BufferKinds> {
            #(pub #buffer_fields: K::#buffer_roles,)*
        }

        #[cfg(not(target_arch = "nvptx64"))]
        impl<K: #kernels::abi::BufferKinds> ::core::fmt::Debug for Buffers<K>
        where
            K::Param: ::core::fmt::Debug,
            K::Input: ::core::fmt::Debug,
            K::State: ::core::fmt::Debug,
        {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct("Buffers")
                    #(.field(#buffer_names, &self.#buffer_fields))*
                    .finish()
            }
        }

        /// The uniform arguments of one launch (everything but the buffers, the length and the
        /// clamp bound, which the runtime supplies from its clamp policy).
        #[cfg(not(target_arch = "nvptx64"))]
        #[derive(Clone, Copy, Debug)]
        pub struct Scalars {
            #(#scalar_fields,)*
        }

        /// The uniform arguments of one stepped launch: its `#[uniform_ptr]`s (every scalar is
        /// read from the step-state record).
        #[cfg(not(target_arch = "nvptx64"))]
        #[derive(Clone, Copy, Debug)]
        pub struct StepScalars {
            #(#step_scalar_fields,)*
        }

        /// The typed host view of this entry.
        #[cfg(not(target_arch = "nvptx64"))]
        #[derive(Clone, Copy, Debug)]
        pub struct Entry;

        // SAFETY: generated by #[optimizer_kernel] for its own entry (the seal).
        #[cfg(not(target_arch = "nvptx64"))]
        unsafe impl #kernels::abi::GeneratedEntry for Entry {}

        #[cfg(not(target_arch = "nvptx64"))]
        impl #kernels::abi::OptimizerEntry for Entry {
            const DESCRIPTOR: &'static #kernels::abi::KernelDescriptor = &DESCRIPTOR;
            const MULTI_DESCRIPTOR: &'static #kernels::abi::KernelDescriptor =
                &MULTI_DESCRIPTOR;
            const STEPPED_DESCRIPTOR: &'static #kernels::abi::KernelDescriptor =
                &STEPPED_DESCRIPTOR;
            const MULTI_STEPPED_DESCRIPTOR: &'static #kernels::abi::KernelDescriptor =
                &MULTI_STEPPED_DESCRIPTOR;
            type Buffers<K: #kernels::abi::BufferKinds> = Buffers<K>;
            type Scalars = Scalars;
            type StepScalars = StepScalars;
            type Hyper = Hyper;
            const SCHEDULE: ::core::option::Option<&'static #kernels::abi::KernelDescriptor> =
                SCHEDULE_DESCRIPTOR;

            fn visit_buffers<'b, K: #kernels::abi::BufferKinds>(
                buffers: &'b Buffers<K>,
                f: &mut dyn FnMut(&'static str, #kernels::abi::BufferRef<'b, K>),
            ) {
                #(f(#buffer_names, #kernels::abi::BufferRef::#buffer_roles(&buffers.#buffer_fields));)*
            }

            fn scalar_values(scalars: &Scalars) -> Vec<#kernels::abi::ArgValue> {
                vec![#(#scalar_args),*]
            }

            fn step_scalar_values(scalars: &StepScalars) -> Vec<#kernels::abi::ArgValue> {
                vec![#(#step_scalar_args),*]
            }

            fn hyper_values(hyper: &Hyper) -> Vec<#kernels::abi::ArgValue> {
                vec![#(#hyper_values),*]
            }

            fn derived_values(t: u32, hyper: &Hyper) -> Vec<#kernels::abi::ArgValue> {
                #[allow(unused_variables)]
                let derived = derived_at(t, hyper);
                vec![#(#derived_values),*]
            }
        }
    }
}

/// The fields `scalars` of the struct `value` (a `Hyper` or a `Derived`) as `ArgValue`s, in
/// declared order.
fn field_values<'a>(
    scalars: impl Iterator<Item = &'a Arg>,
    kernels: &DeviceCratePath,
    value: TokenStream,
) -> Vec<TokenStream> {
    scalars
        .map(|a| {
            let ident = &a.ident;
            match a.role {
                Role::Scalar(ScalarType::U32) => {
                    quote! { #kernels::abi::ArgValue::U32(#value.#ident) }
                }
                _ => quote! { #kernels::abi::ArgValue::F32(#value.#ident) },
            }
        })
        .collect()
}

/// The uniforms of a launch as `ArgValue`s, in entry order (read from a `scalars: &Scalars`, or
/// `&StepScalars` for the stepped flavor).
pub(crate) fn scalar_args(
    k: &OptimizerFn,
    kernels: &DeviceCratePath,
    flavor: ScalarSource,
) -> Vec<TokenStream> {
    flavor
        .uniforms(k)
        .into_iter()
        .map(|a| {
            let ident = &a.ident;
            match a.role {
                Role::UniformPtr(_) => {
                    quote! { #kernels::abi::ArgValue::Ptr(scalars.#ident.address()) }
                }
                Role::Scalar(ScalarType::U32) => {
                    quote! { #kernels::abi::ArgValue::U32(scalars.#ident) }
                }
                _ => quote! { #kernels::abi::ArgValue::F32(scalars.#ident) },
            }
        })
        .collect()
}

/// `KernelParam`s in PTX order: buffers, len, uniforms, then the bound (or the step state).
fn descriptor_params(
    k: &OptimizerFn,
    kernels: &DeviceCratePath,
    flavor: ScalarSource,
) -> Vec<TokenStream> {
    let mut out: Vec<TokenStream> = k
        .buffers()
        .map(|a| {
            let role = match a.role {
                Role::Param => quote!(ParamBuffer),
                Role::Input => quote!(Input),
                _ => quote!(State),
            };
            crate::descriptor::buffer_param(kernels, &a.ident.unraw().to_string(), role, a.storage)
        })
        .collect();
    out.push(kernel_param(kernels, LEN, quote!(Usize), quote!(Len)));
    out.extend(uniform_descriptor_params(k, kernels, flavor));
    out.push(records_param(kernels));
    out.push(flavor.last_param(kernels));
    out
}

/// `__adamant_sweep`, in the device block next to the entries (unnameable outside it): a strided
/// loop over 16-byte groups when every buffer is 16-byte aligned, then a scalar loop over the
/// rest, for threads `first, first + stride, ...`. Every element's buffers are loaded before
/// anything is stored (so LLVM need not re-read after a store), and the parameter buffer is
/// written once per element, with the output of `<kernel>::element`, which ends in the clamp.
/// Both entries (single buffer, multi-tensor) call it, with their own bound.
fn sweep(k: &OptimizerFn, kernels: &DeviceCratePath) -> TokenStream {
    let n_buffers = buffer_count(k);
    sweep_fn(k, kernels, quote!(), quote!(#n_buffers))
}

/// `__adamant_sweep` with `generics` (`<const M: usize>` for a fused entry's, empty for the
/// kernel's own) and a record of `facts` buffers.
pub(crate) fn sweep_fn(
    k: &OptimizerFn,
    kernels: &DeviceCratePath,
    generics: TokenStream,
    facts: TokenStream,
) -> TokenStream {
    let bound = format_ident!("{}", BOUND);
    let len = format_ident!("{}", LEN);
    let ptr_params = pointer_params(k);
    let uniform_values = k.uniforms().map(|a| {
        let ident = &a.ident;
        match a.role {
            Role::Scalar(ScalarType::U32) => quote! { #ident: u32 },
            _ => quote! { #ident: f32 },
        }
    });
    let body = sweep_body(k, kernels);
    let rounding = rounding_param(k);
    quote! {
        /// One thread's share of `len` elements (called by the kernel's entries only: it cannot be
        /// named outside the block it is defined in).
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn __adamant_sweep #generics(
            #(#ptr_params,)*
            #len: usize,
            __adamant_first: usize,
            __adamant_stride: usize,
            __adamant_prefetch: bool,
            #(#uniform_values,)*
            #rounding
            __adamant_base: u64,
            __adamant_shared: *mut u32,
            __adamant_facts: &mut #kernels::diagnostics::ThreadFacts<#facts>,
            __adamant_grad_coef: f32,
            #bound: f32,
        ) {
            #body
        }
    }
}

/// The statements of one thread's sweep over `len` elements: the 16-byte vector loop, then the
/// scalar tail. They read, by name, the buffers and the uniforms (as the kernel's arguments are
/// named), `len`, `__adamant_first`, `__adamant_stride`, `__adamant_base` (the first element's
/// index in its tensor), `__adamant_shared`, `__adamant_facts`, `__adamant_grad_coef` and the
/// bound: the kernel's own sweep and its fused sweep (`fused_rule`) bind them the same way.
pub(crate) fn sweep_body(k: &OptimizerFn, kernels: &DeviceCratePath) -> TokenStream {
    let len = format_ident!("{}", LEN);
    let buffers: Vec<&Arg> = k.buffers().collect();
    let align_mask = buffers.iter().map(|a| {
        let ident = &a.ident;
        quote! { (#ident as usize) }
    });
    let vector_body = vector_iteration(k, &buffers, kernels);
    // A chunk's sweep asks for its next group of every buffer in L1 before computing this one
    // (`__adamant_prefetch`): the loads of a thread's next group are then on their way while it
    // computes, with no register to hold them. The RL set's fused launch, four groups and the
    // session's step each gained 1 to 1.5 µs (docs/performance.md, fifteenth session); loading
    // the next group into registers instead made the entries spill and was slower. Exactly the
    // groups `vector_iteration` loads: a companion's through its parameter, the others as they
    // are loaded (`loaded_group`).
    let prefetches = buffers.iter().filter(|a| !k.is_companion(a)).map(|a| {
        if let Some(prefetch) = crate::companion::param_prefetch(k, kernels, a) {
            return prefetch;
        }
        let (ident, group) = (&a.ident, loaded_group(a, kernels));
        quote! { #kernels::builtins::prefetch_l1((#ident as *const #group).add(__adamant_next)); }
    });
    let scalar_body = scalar_iteration(k, &buffers, kernels);
    // The vector loop's random words are by element pair (`word`), which needs each group's
    // first index even: the runtime cuts tensors into chunks of a multiple of 4 elements, and
    // a sweep that starts elsewhere traps rather than round with other words.
    let aligned_base = match k.stochastic() {
        true => quote! {
            if __adamant_base % #kernels::vector::LANES as u64 != 0 {
                #kernels::builtins::trap();
            }
        },
        false => quote!(),
    };
    quote! {
        #aligned_base
        let __adamant_aligned =
            (#(#align_mask)|*) % ::core::mem::align_of::<#kernels::vector::F4>() == 0;
        let __adamant_groups = if __adamant_aligned {
            #len / #kernels::vector::LANES
        } else {
            0
        };
        let mut __adamant_i = __adamant_first;
        while __adamant_i < __adamant_groups {
            let __adamant_next = __adamant_i + __adamant_stride;
            if __adamant_prefetch && __adamant_next < __adamant_groups {
                #(#prefetches)*
            }
            #vector_body
            __adamant_i += __adamant_stride;
        }
        let mut __adamant_i = __adamant_groups * #kernels::vector::LANES + __adamant_first;
        while __adamant_i < #len {
            #scalar_body
            __adamant_i += __adamant_stride;
        }
    }
}

/// The sweep's `__adamant_rounding: u64` parameter, for a kernel whose parameter is stored
/// stochastically: the key of its tensor's random words this step ([`rounding_arg`]).
fn rounding_param(k: &OptimizerFn) -> TokenStream {
    match k.stochastic() {
        true => quote! { __adamant_rounding: u64, },
        false => quote!(),
    }
}

/// The sweep's rounding key argument for tensor `tensor` (a `u32` expression), from the
/// kernel's step number and seed (in scope under their names in every entry), or nothing for a
/// kernel whose stores are not stochastic.
pub(crate) fn rounding_arg(
    k: &OptimizerFn,
    kernels: &DeviceCratePath,
    tensor: TokenStream,
) -> TokenStream {
    if !k.stochastic() {
        return quote!();
    }
    let scalar = |name: &str| {
        let arg = k
            .args
            .iter()
            .find(|a| a.ident.unraw() == name && matches!(a.role, Role::Scalar(_)))
            .expect("signature::check_rounding_scalars");
        &arg.ident
    };
    let [step, seed] = crate::storage::ROUNDING_SCALARS;
    let (step, seed) = (scalar(step), scalar(seed));
    quote! { #kernels::storage::rounding_key(#seed, #step, #tensor), }
}

/// The buffers as raw pointer parameters to their storage type (`*const` for inputs, `*mut`
/// otherwise).
pub(crate) fn pointer_params(k: &OptimizerFn) -> Vec<TokenStream> {
    k.buffers()
        .map(|a| {
            let ident = &a.ident;
            let element = a.storage.element();
            match a.role {
                Role::Input => quote! { #ident: *const #element },
                _ => quote! { #ident: *mut #element },
            }
        })
        .collect()
}

/// A single-buffer nvptx entry: the whole grid sweeps the buffers, then records them as tensor 0
/// of its records.
fn device_entry(k: &OptimizerFn, kernels: &DeviceCratePath, flavor: ScalarSource) -> TokenStream {
    let name = format_ident!("{}{}", k.name().unraw(), flavor.suffix());
    let bound = format_ident!("{}", BOUND);
    let len = format_ident!("{}", LEN);
    let records = format_ident!("{}", RECORDS);
    let ptr_params = pointer_params(k);
    let uniform_params = uniform_params(k, flavor);
    let uniform_loads = uniform_loads(k);
    let records_arg = records_arg(kernels);
    let last = flavor.last_arg(kernels);
    let state_loads = flavor.state_loads(k, kernels, false);
    let guard = flavor.guard();
    let buffer_idents = k.buffers().map(|a| &a.ident);
    let uniforms = uniform_idents(k);
    let n = buffer_count(k);
    let diagnostics = quote! { #kernels::diagnostics };
    let facts = param_arg(k).storage.facts(kernels, quote!(#n));
    let rounding = rounding_arg(k, kernels, quote!(0u32));
    quote! {
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        unsafe extern "gpu-kernel" fn #name(
            #(#ptr_params,)*
            #len: usize,
            #(#uniform_params,)*
            #records_arg,
            #last,
        ) {
            #state_loads
            #guard
            let #len = if __adamant_skip { 0 } else { #len };
            #(#uniform_loads)*
            let __adamant_shared: *mut u32 = #kernels::builtins::dynamic_shared::<u32>();
            #diagnostics::begin::<#n>(__adamant_shared);
            let mut __adamant_facts = #facts;
            __adamant_sweep(
                #(#buffer_idents,)*
                #len,
                #kernels::builtins::global_thread_index(),
                #kernels::builtins::grid_threads(),
                // No prefetch: a grid-strided thread's next group is a grid away (measured
                // slower: Adam 2^28 at 2,590 µs with it against 2,525 µs without, H100).
                false,
                #(#uniforms,)*
                #rounding
                0,
                __adamant_shared,
                &mut __adamant_facts,
                __adamant_grad_coef,
                #bound,
            );
            #diagnostics::flush::<#n>(&mut __adamant_facts, __adamant_shared, #records, 0, #bound);
            #diagnostics::publish_single::<#n>(__adamant_shared, #records);
        }
    }
}

fn local(a: &Arg) -> Ident {
    format_ident!("__adamant_{}", a.ident)
}

/// One `update` call for lane `lane` (None: the scalar loop): the kernel's raw value, before the
/// clamp.
fn update_call(k: &OptimizerFn, lane: Option<usize>) -> TokenStream {
    let args = k.args.iter().map(|a| {
        let ident = &a.ident;
        let local = local(a);
        let value = match lane {
            Some(l) => quote! { #local.0[#l] },
            None => quote! { #local },
        };
        match a.role {
            Role::Param | Role::Input => value,
            Role::State => quote! { &mut #value },
            _ => quote! { #ident },
        }
    });
    let name = k.name();
    quote! { #name::update(#(#args),*) }
}

/// The element stored for lane `lane`'s raw value (lane `lane` of `__adamant_raw`, or
/// `__adamant_raw` itself in the scalar loop), with the sweep's bound: the clamp, and for a
/// 16-bit parameter the rounding and the hold within the bound.
fn clamp_call(k: &OptimizerFn, kernels: &DeviceCratePath, lane: Option<usize>) -> TokenStream {
    let bound = format_ident!("{}", BOUND);
    let raw = at_lane(quote!(__adamant_raw), lane);
    let param = param_arg(k);
    let word = word(k, kernels, param, lane);
    param
        .storage
        .store_param(kernels, raw, quote!(#bound), word)
}

/// The random word of buffer `a`'s element at lane `lane` (the scalar loop's element: None) for
/// a stochastic store: the hash of the sweep's key, the buffer's stochastic ordinal and the
/// element's index. The vector loop's lanes take `storage::stochastic_lane_word`, which is the
/// same word with one mixer per pair of lanes, for a group whose first index is a multiple of 4
/// (the sweep traps otherwise).
fn word(k: &OptimizerFn, kernels: &DeviceCratePath, a: &Arg, lane: Option<usize>) -> TokenStream {
    // A store that rounds to nearest reads no word (`Storage::rounding`).
    let Some(ordinal) = k.stochastic_ordinal(a) else {
        return quote!(0u32);
    };
    match lane {
        None => quote! {
            #kernels::storage::stochastic_word(__adamant_rounding, #ordinal, __adamant_index)
        },
        Some(l) => {
            let l = l as u32;
            quote! {
                #kernels::storage::stochastic_lane_word(
                    __adamant_rounding,
                    #ordinal,
                    __adamant_index,
                    #l,
                )
            }
        }
    }
}

/// Statements that round a 16-bit state's new values (`local`, a group of four f32 or one) to
/// its storage and widen them back into `local`, so the store below writes, and the records
/// read, what the buffer holds.
fn round_state(k: &OptimizerFn, kernels: &DeviceCratePath, a: &Arg, vector: bool) -> TokenStream {
    let Some(half) = a.storage.half(kernels) else {
        return quote!();
    };
    let local = local(a);
    let rounding = |lane: Option<usize>| a.storage.rounding(kernels, word(k, kernels, a, lane));
    if vector {
        let lanes = (0..4usize).map(|l| {
            let rounding = rounding(Some(l));
            quote! { #half.to_f32(#half.round(#local.0[#l], #rounding)) }
        });
        quote! { #local = #kernels::vector::F4([#(#lanes),*]); }
    } else {
        let rounding = rounding(None);
        quote! { #local = #half.to_f32(#half.round(#local, #rounding)); }
    }
}

/// The store of state `a`'s group of four (already rounded by [`round_state`]) at group
/// `__adamant_i`: 16 bytes of f32, or four 16-bit lanes, one register each (`st.v4.b16`).
fn store_state_group(kernels: &DeviceCratePath, a: &Arg) -> TokenStream {
    let (ident, local) = (&a.ident, local(a));
    let f4 = quote! { #kernels::vector::F4 };
    match a.storage.half(kernels) {
        None => quote! { *(#ident as *mut #f4).add(__adamant_i) = #local; },
        Some(half) => {
            let lanes = (0..4usize).map(|l| quote! { #half.bits_of(#local.0[#l]) });
            store_lanes(ident, &a.storage.group(kernels), lanes)
        }
    }
}

/// The four 16-bit `lanes` stored lane by lane into buffer `ident`'s aligned group
/// `__adamant_i` (of type `group`): one store of the whole group would be one 64-bit store of
/// the lanes packed, whose bits the audit cannot take apart; the lanes become one `st.v4.b16`,
/// each lane a register of its own.
pub(crate) fn store_lanes(
    ident: &Ident,
    group: &TokenStream,
    lanes: impl Iterator<Item = TokenStream>,
) -> TokenStream {
    let stores = lanes
        .enumerate()
        .map(|(l, lane)| quote! { (*__adamant_group).0[#l] = #lane; });
    quote! {
        {
            let __adamant_group: *mut #group = (#ident as *mut #group).add(__adamant_i);
            #(#stores)*
        }
    }
}

/// The kernel's `#[param]` argument (validated: exactly one).
pub(crate) fn param_arg(k: &OptimizerFn) -> &Arg {
    k.args
        .iter()
        .find(|a| a.role == Role::Param)
        .expect("validated")
}

/// Lane `lane` of a group (`e.0[lane]`), or `e` itself in the scalar loop.
fn at_lane(e: TokenStream, lane: Option<usize>) -> TokenStream {
    match lane {
        Some(l) => quote! { #e.0[#l] },
        None => e,
    }
}

/// The diagnostics of one element (lane `lane` of the group, or the scalar loop's element, lane
/// 0), after its stores: `__adamant_lane_<lane>`, the raw and stored values and every buffer's
/// value as the entry left it (the stored parameter, the updated states, the gradient as read),
/// observed into the group's `__adamant_watch`; one [`settle`] after the group's lanes hands
/// what is rare to shared memory with the group's first index.
fn observe(k: &OptimizerFn, kernels: &DeviceCratePath, lane: Option<usize>) -> TokenStream {
    let raw = at_lane(quote!(__adamant_raw), lane);
    let name = lane_name(lane);
    let new = at_lane(quote!(__adamant_new), lane);
    // Whether the clamp caught the raw value: the stored value differs from it, for f32; for a
    // 16-bit parameter the f32 clamp's test (its rounding changes nearly every value, and is no
    // clamp catch).
    // A kernel with a companion has the f32 clamp at hand (its record's value, below).
    let bound = format_ident!("{}", BOUND);
    let clamped = quote! { #kernels::clamp::weight_clamp(#raw, #bound) };
    let caught = match param_arg(k).storage {
        Storage::F32 => quote! { #raw.to_bits() != #new.to_bits() },
        _ if k.companion.is_some() => quote! { #raw.to_bits() != #clamped.to_bits() },
        _ => quote! { #kernels::clamp::caught(#raw, #bound) },
    };
    // A companion's record sees the f32 clamp: the master itself (`#[param(bf16, master)]`),
    // or the value a remainder completes but for the hold, which moves a finite value by less
    // than a bf16 step and so never changes whether it is finite, all a buffer's record keeps
    // of its values (computing the exact master here would keep both halves of four lanes live
    // until the records, which spilled the multi-tensor entry).
    let values = k.buffers().map(|a| match a.role {
        Role::Param if k.is_companion(a) => clamped.clone(),
        Role::Param => new.clone(),
        _ => at_lane(local(a).into_token_stream(), lane),
    });
    // A store that is not monotone (or not `Half`'s) has its largest stored `|p|` kept, not
    // derived (`Storage::keeps_stored`).
    let kept = match param_arg(k).storage.keeps_stored() {
        true => quote! { __adamant_facts.keep_stored(#new); },
        false => quote!(),
    };
    quote! {
        let #name = #kernels::diagnostics::Lane {
            raw: #raw,
            caught: #caught,
            values: [#(#values),*],
        };
        __adamant_facts.observe(&mut __adamant_watch, &#name);
        #kept
    }
}

/// The local holding lane `lane`'s [`observe`]d values.
fn lane_name(lane: Option<usize>) -> Ident {
    format_ident!("__adamant_lane_{}", lane.unwrap_or(0))
}

/// The group's watch, taken before its lanes are observed.
fn watch() -> TokenStream {
    quote! { let mut __adamant_watch = __adamant_facts.watch(); }
}

/// The group's rare facts, from its watch and the lanes `observe` bound.
fn settle(lanes: impl Iterator<Item = Option<usize>>) -> TokenStream {
    let names = lanes.map(lane_name);
    quote! {
        __adamant_facts.settle(__adamant_shared, __adamant_watch, __adamant_index, [#(#names),*]);
    }
}

/// One group of the vector loop: every buffer's group of four loaded (16 bytes of f32, 8 of a
/// 16-bit type, widened), the four updates, the four clamps (and roundings, for a 16-bit
/// parameter), the stores, then the four lanes' diagnostics (after the stores, so no atomic of
/// theirs stands between the loads and the stores).
/// The type a buffer's group of four is loaded as, by the vector loop and by its prefetch of the
/// next group: `F4` for f32, and for a 16-bit buffer two 32-bit words (`vector::W2`), widened
/// from them (loaded as 16 bits, a lane costs two instructions more).
fn loaded_group(a: &Arg, kernels: &DeviceCratePath) -> TokenStream {
    match a.storage {
        Storage::F32 => a.storage.group(kernels),
        _ => quote! { #kernels::vector::W2 },
    }
}

fn vector_iteration(k: &OptimizerFn, buffers: &[&Arg], kernels: &DeviceCratePath) -> TokenStream {
    let f4 = quote! { #kernels::vector::F4 };
    let loads = buffers.iter().map(|a| {
        if k.is_companion(a) {
            return quote!();
        }
        if let Some(load) = crate::companion::param_load(k, kernels, a, true) {
            return load;
        }
        let (ident, local) = (&a.ident, local(a));
        let mutability = if a.role == Role::State {
            quote!(mut)
        } else {
            quote!()
        };
        let group = loaded_group(a, kernels);
        let load = quote! { *(#ident as *const #group).add(__adamant_i) };
        let coef = if a.grad {
            quote!(*__adamant_grad_coef)
        } else {
            quote!()
        };
        match a.storage {
            Storage::F32 if !a.grad => quote! { let #mutability #local: #f4 = #load; },
            Storage::F32 => quote! {
                let #local: #f4 = {
                    let __adamant_raw_grad: #f4 = #load;
                    #f4([
                        __adamant_raw_grad.0[0] * __adamant_grad_coef,
                        __adamant_raw_grad.0[1] * __adamant_grad_coef,
                        __adamant_raw_grad.0[2] * __adamant_grad_coef,
                        __adamant_raw_grad.0[3] * __adamant_grad_coef,
                    ])
                };
            },
            _ => {
                // Loaded as two 32-bit words (`loaded_group`), widened from them.
                let lanes = a
                    .storage
                    .widen_group(kernels, quote!(__adamant_loaded))
                    .into_iter()
                    .map(|lane| quote! { #lane #coef });
                quote! {
                    let #mutability #local: #f4 = {
                        let __adamant_loaded: #group = #load;
                        #f4([#(#lanes),*])
                    };
                }
            }
        }
    });
    let raws = (0..4).map(|l| update_call(k, Some(l)));
    let lanes = (0..4).map(|l| clamp_call(k, kernels, Some(l)));
    let state_stores: Vec<TokenStream> = buffers
        .iter()
        .filter(|a| a.role == Role::State)
        .map(|a| {
            let round = round_state(k, kernels, a, true);
            let store = store_state_group(kernels, a);
            quote! { #round #store }
        })
        .collect();
    let param = param_arg(k);
    let param_ident = &param.ident;
    // The clamped group, stored; then `__adamant_new`, what the buffer now holds as f32 (the
    // records report it): for f32 the stored group itself.
    let (store, new) = match param.storage {
        Storage::F32 => (
            quote! {
                let __adamant_new: #f4 = #kernels::vector::F4([#(#lanes),*]);
                #(#state_stores)*
                *(#param_ident as *mut #f4).add(__adamant_i) = __adamant_new;
            },
            quote!(),
        ),
        _ => {
            let group = param.storage.group(kernels);
            let widened =
                (0..4usize).map(|l| param.storage.widen(kernels, quote!(__adamant_stored.0[#l])));
            (
                // Lane by lane (`store_lanes` says why).
                match crate::companion::param_store(k, kernels, param, true, &state_stores) {
                    Some(store) => store,
                    None => {
                        let stored = (0..4usize).map(|l| quote! { __adamant_stored.0[#l] });
                        let store = store_lanes(param_ident, &group, stored);
                        quote! {
                            let __adamant_stored: #group = #group([#(#lanes),*]);
                            #(#state_stores)*
                            #store
                        }
                    }
                },
                quote! { let __adamant_new: #f4 = #f4([#(#widened),*]); },
            )
        }
    };
    let observed = (0..4).map(|l| observe(k, kernels, Some(l)));
    let (watch, settle) = (watch(), settle((0..4).map(Some)));
    quote! {
        let __adamant_index: u64 =
            __adamant_base + (__adamant_i * #kernels::vector::LANES) as u64;
        #(#loads)*
        let __adamant_raw: #f4 = #kernels::vector::F4([#(#raws),*]);
        #store
        #new
        #watch
        #(#observed)*
        #settle
    }
}

fn scalar_iteration(k: &OptimizerFn, buffers: &[&Arg], kernels: &DeviceCratePath) -> TokenStream {
    let loads = buffers.iter().map(|a| {
        if k.is_companion(a) {
            return quote!();
        }
        if let Some(load) = crate::companion::param_load(k, kernels, a, false) {
            return load;
        }
        let (ident, local) = (&a.ident, local(a));
        let mutability = if a.role == Role::State {
            quote!(mut)
        } else {
            quote!()
        };
        let value = a
            .storage
            .widen(kernels, quote! { *#ident.add(__adamant_i) });
        if a.grad {
            quote! { let #local: f32 = #value * __adamant_grad_coef; }
        } else {
            quote! { let #mutability #local: f32 = #value; }
        }
    });
    let raw = update_call(k, None);
    let call = clamp_call(k, kernels, None);
    let state_stores: Vec<TokenStream> = buffers
        .iter()
        .filter(|a| a.role == Role::State)
        .map(|a| {
            let (ident, local) = (&a.ident, local(a));
            let round = round_state(k, kernels, a, false);
            let value = match a.storage.half(kernels) {
                None => quote!(#local),
                Some(half) => quote! { #half.bits_of(#local) },
            };
            quote! { #round *#ident.add(__adamant_i) = #value; }
        })
        .collect();
    let param = param_arg(k);
    let param_ident = &param.ident;
    let store = match param.storage {
        Storage::F32 => quote! {
            let __adamant_new: f32 = #call;
            #(#state_stores)*
            *#param_ident.add(__adamant_i) = __adamant_new;
        },
        _ => {
            let widened = param.storage.widen(kernels, quote!(__adamant_stored));
            let store = crate::companion::param_store(k, kernels, param, false, &state_stores)
                .unwrap_or_else(|| {
                    quote! {
                        let __adamant_stored: u16 = #call;
                        #(#state_stores)*
                        *#param_ident.add(__adamant_i) = __adamant_stored;
                    }
                });
            quote! {
                #store
                let __adamant_new: f32 = #widened;
            }
        }
    };
    let observed = observe(k, kernels, None);
    let (watch, settle) = (watch(), settle([None].into_iter()));
    quote! {
        let __adamant_index: u64 = __adamant_base + __adamant_i as u64;
        #(#loads)*
        let __adamant_raw: f32 = #raw;
        #store
        #watch
        #observed
        #settle
    }
}
