//! The multi-tensor entry `<kernel>_multi` that `#[optimizer_kernel]` generates next to the
//! single-buffer one: one launch updates every tensor of a set. Per buffer argument it takes a
//! device table of per-tensor pointers, then a chunk table (`adamant_device::multi::Chunk`:
//! tensor, start, len); each block takes chunks in turn and sweeps one with its threads, through
//! the same `__adamant_sweep` as the single-buffer entry, so the clamp epilogue is the same code.
//! After the chunk table comes `weight_clamp_scales`, one `f32` per tensor: tensor `t` is clamped
//! with `tensor_bound(bound, scales[t])` (`adamant_device::multi`), so one launch can clip each
//! layer to its own bound. The launch's bound stays the last parameter.
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::ext::IdentExt;

use crate::descriptor::kernel_param;
use crate::device_crate::DeviceCratePath;
use crate::entry_parts::{
    buffer_count, records_arg, records_param, uniform_descriptor_params, uniform_idents,
    uniform_loads, uniform_params, ScalarSource,
};
use crate::signature::{OptimizerFn, Role, BOUND, CHUNKS, N_CHUNKS, RECORDS, SCALES};

/// The multi-tensor entry's exported name: `<kernel>_multi` or `<kernel>_multi_stepped`.
pub(crate) fn multi_name(k: &OptimizerFn, flavor: ScalarSource) -> String {
    format!("{}_multi{}", k.name().unraw(), flavor.suffix())
}

/// An nvptx multi-tensor entry.
pub(crate) fn device_entry(
    k: &OptimizerFn,
    kernels: &DeviceCratePath,
    flavor: ScalarSource,
) -> TokenStream {
    let multi = format_ident!("{}", multi_name(k, flavor));
    let bound = format_ident!("{}", BOUND);
    let chunks = format_ident!("{}", CHUNKS);
    let n_chunks = format_ident!("{}", N_CHUNKS);
    let scales = format_ident!("{}", SCALES);
    let tensor_bound = quote! { #kernels::multi::tensor_bound };
    let tables = k.buffers().map(|a| {
        let ident = &a.ident;
        quote! { #ident: *const u64 }
    });
    // Each table entry is the tensor's base address; the chunk's buffers start `start` in.
    let chunk_pointers = k.buffers().map(|a| {
        let ident = &a.ident;
        let element = a.storage.element();
        let ty = match a.role {
            Role::Input => quote!(*const #element),
            _ => quote!(*mut #element),
        };
        quote! {
            let #ident: #ty = (*#ident.add(__adamant_tensor) as #ty).add(__adamant_start);
        }
    });
    let buffer_idents = k.buffers().map(|a| &a.ident);
    let uniform_params = uniform_params(k, flavor);
    let uniform_loads = uniform_loads(k);
    let uniforms = uniform_idents(k);
    let rounding =
        crate::optimizer::rounding_arg(k, kernels, quote!(__adamant_chunk.tensor as u32));
    let last = flavor.last_arg(kernels);
    let state_loads = flavor.state_loads(k, kernels, true);
    let guard = flavor.guard();
    let records = format_ident!("{}", RECORDS);
    let records_arg = records_arg(kernels);
    let n = buffer_count(k);
    let diagnostics = quote! { #kernels::diagnostics };
    let facts = crate::optimizer::param_arg(k)
        .storage
        .facts(kernels, quote!(#n));
    quote! {
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        unsafe extern "gpu-kernel" fn #multi(
            #(#tables,)*
            #chunks: *const #kernels::multi::Chunk,
            #n_chunks: u32,
            #scales: *const f32,
            #(#uniform_params,)*
            #records_arg,
            #last,
        ) {
            #state_loads
            #guard
            #(#uniform_loads)*
            let __adamant_shared: *mut u32 = #kernels::builtins::dynamic_shared::<u32>();
            #diagnostics::begin::<#n>(__adamant_shared);
            let mut __adamant_facts = #facts;
            let mut __adamant_c = #kernels::builtins::block_index();
            while __adamant_c < #n_chunks {
                let __adamant_chunk = *#chunks.add(__adamant_c as usize);
                let __adamant_tensor = __adamant_chunk.tensor as usize;
                let __adamant_start = __adamant_chunk.start as usize;
                #(#chunk_pointers)*
                // The chunk's own tensor's bound: its scale is loaded at the index its pointers
                // were loaded at, every chunk (the audit proves the index is the same).
                let __adamant_bound: f32 = #tensor_bound(#bound, *#scales.add(__adamant_tensor));
                __adamant_sweep(
                    #(#buffer_idents,)*
                    // A skipped step sweeps no element of any chunk. The chunk's other words
                    // are still used, so its load is issued before the verdict is known and the
                    // two trips to memory overlap (a test that left the loop would let the
                    // compiler move the load after it).
                    if __adamant_skip { 0 } else { __adamant_chunk.len as usize },
                    #kernels::builtins::thread_index() as usize,
                    #kernels::builtins::block_dim() as usize,
                    true,
                    #(#uniforms,)*
                    #rounding
                    __adamant_start as u64,
                    __adamant_shared,
                    &mut __adamant_facts,
                    __adamant_grad_coef,
                    __adamant_bound,
                );
                // The chunk's facts into its tensor's record, every chunk: a block that kept them
                // in registers until its tensor changed kept that state (and what the flush
                // reads) live through every sweep, 15 registers more (ptxas 13.0, Adam's entry
                // at 76 instead of 61 uncapped); with one block per chunk, the runtime's default
                // grid, the flushes are the same.
                #diagnostics::flush::<#n>(
                    &mut __adamant_facts,
                    __adamant_shared,
                    #records,
                    __adamant_chunk.tensor,
                    __adamant_bound,
                );
                __adamant_c += #kernels::builtins::grid_dim();
            }
            #diagnostics::publish::<#n>(__adamant_shared, #records);
        }
    }
}

/// Host items for the multi-tensor entries, inside the kernel's module: their descriptors
/// (registered like every entry).
pub(crate) fn host_items(k: &OptimizerFn, kernels: &DeviceCratePath) -> TokenStream {
    let plain = descriptor(k, kernels, ScalarSource::Arguments);
    let stepped = descriptor(k, kernels, ScalarSource::Record);
    quote! { #plain #stepped }
}

fn descriptor(k: &OptimizerFn, kernels: &DeviceCratePath, flavor: ScalarSource) -> TokenStream {
    let name = multi_name(k, flavor);
    let mut params: Vec<TokenStream> = k
        .buffers()
        .map(|a| {
            let role = match a.role {
                Role::Param => quote!(ParamTable),
                Role::Input => quote!(InputTable),
                _ => quote!(StateTable),
            };
            crate::descriptor::buffer_param(kernels, &a.ident.unraw().to_string(), role, a.storage)
        })
        .collect();
    params.push(kernel_param(
        kernels,
        CHUNKS,
        quote!(Ptr),
        quote!(ChunkTable),
    ));
    params.push(kernel_param(
        kernels,
        N_CHUNKS,
        quote!(U32),
        quote!(ChunkCount),
    ));
    params.push(kernel_param(
        kernels,
        SCALES,
        quote!(Ptr),
        quote!(ClampScales),
    ));
    params.extend(uniform_descriptor_params(k, kernels, flavor));
    params.push(records_param(kernels));
    params.push(flavor.last_param(kernels));
    let record = flavor.record(k, kernels);
    let (descriptor, register) = match flavor {
        ScalarSource::Arguments => (
            format_ident!("MULTI_DESCRIPTOR"),
            format_ident!("__ADAMANT_REGISTER_MULTI"),
        ),
        ScalarSource::Record => (
            format_ident!("MULTI_STEPPED_DESCRIPTOR"),
            format_ident!("__ADAMANT_REGISTER_MULTI_STEPPED"),
        ),
    };
    crate::descriptor::registered(
        kernels,
        crate::descriptor::Descriptor {
            docs: quote! {
                /// A multi-tensor entry's parameters, in PTX order.
            },
            ident: descriptor,
            register,
            name: quote!(#name),
            kind: quote!(Optimizer),
            params: crate::descriptor::param_list(&params),
            record,
        },
    )
}
