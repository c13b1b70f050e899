//! A kernel's side of the fused entries (`fused_optimizer!`, [`crate::fused`]): inside its module
//! `#[optimizer_kernel]` generates `BUFFERS`, `FUSABLE` and, on nvptx, `__adamant_fused_chunk`:
//! one chunk of one tensor, its pointers from the tensor's row of the fused entry's tables
//! (`FusedRow`: the `k`-th `#[input]` from input table `k`, and so on;
//! `adamant_abi::fused::fused_slots` is the same order on the host), its scalars from the
//! tensor's step record, and then the kernel's own sweep, with the clamp stamped before the
//! parameter store. A fused entry of any crate calls it in the branch of the tensor's rule.
//!
//! The table limits live in `adamant_abi::fused` alone: `FUSABLE` is computed from them in the
//! expansion, and a kernel's chunk asks `FusedRow` for its `k`-th table's address, which is 0
//! past the limit, so the chunk compiles for every kernel and a set refuses (`FUSABLE`) the
//! kernels that would read one.
//!
//! The function is public (hidden) because the fused entry may live in another crate. What keeps
//! it honest is the PTX audit, not its visibility: every entry that calls it is audited, and a
//! store to a parameter buffer is proven clamped with that entry's own bound source.
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::device_crate::DeviceCratePath;
use crate::entry_parts::{buffer_count, lit_f32};
use crate::signature::{OptimizerFn, Role, BOUND, LEN};

/// Inputs, states and uniform pointers of `k`, in that order.
fn slot_counts(k: &OptimizerFn) -> (usize, usize, usize) {
    let count = |f: fn(&Role) -> bool| k.args.iter().filter(|a| f(&a.role)).count();
    (
        count(|r| matches!(r, Role::Input)),
        count(|r| matches!(r, Role::State)),
        count(|r| matches!(r, Role::UniformPtr(_))),
    )
}

/// The fused parameter table of `k`'s parameter storage (`adamant_abi::fused::PARAM_TABLES`'
/// order), `None` for a storage with a companion. The host build asserts it is the ABI's
/// `param_table_index` of the same storage (see `items`).
fn param_table(k: &OptimizerFn) -> Option<usize> {
    use crate::storage::Storage;
    match crate::optimizer::param_arg(k).storage {
        Storage::F32 => Some(0),
        Storage::Bf16 => Some(1),
        Storage::Bf16Stochastic => Some(2),
        Storage::F16 => Some(3),
        Storage::Bf16Master | Storage::Bf16Split | Storage::Remainder => None,
    }
}

/// The host and device items, inside the kernel's module.
pub(crate) fn items(k: &OptimizerFn, kernels: &DeviceCratePath) -> TokenStream {
    let n = buffer_count(k);
    let (inputs, states, uniforms) = slot_counts(k);
    let fused = quote! { #kernels::abi::fused };
    // A fused entry's tables have one parameter table: a kernel whose parameter has a companion
    // buffer is no rule of one (`FUSABLE` says so where a set names it), and has no chunk.
    let chunk = match k.companion {
        None => chunk_fn(k, kernels),
        Some(_) => quote!(),
    };
    // The parameter table the chunk reads is the one the runtime fills for this storage: the
    // ABI's mapping, checked when the kernel's crate compiles for the host.
    let table_agrees = match (&k.companion, param_table(k)) {
        (None, Some(index)) => {
            let storage = crate::optimizer::param_arg(k).storage;
            let (s, r) = (storage.abi(kernels), storage.rounding_abi(kernels));
            let message = format!(
                "the fused chunk of `{}` reads parameter table {index}, which is not the one \
                 adamant_abi::fused::param_table_index gives its parameter's storage",
                k.name()
            );
            quote! {
                #[cfg(not(target_arch = "nvptx64"))]
                const _: () = ::core::assert!(
                    ::core::matches!(#fused::param_table_index(#s, #r), Some(#index)),
                    #message
                );
            }
        }
        _ => quote!(),
    };
    // A fused entry's tables hold addresses of any storage, and its records widen every value
    // to f32; a companion buffer has no table (the chunk above is none).
    let no_companion = k.companion.is_none();
    quote! {
        /// The kernel's buffer count (its diagnostics records' buffers).
        pub const BUFFERS: usize = #n;

        /// Whether the kernel fits a fused entry's tables (at most `MAX_FUSED_INPUTS` inputs,
        /// `MAX_FUSED_STATES` states and `MAX_FUSED_UNIFORMS` uniform pointers, and no companion
        /// buffer), and so may be a rule of a `fused_optimizer!` set.
        pub const FUSABLE: bool = #inputs <= #fused::MAX_FUSED_INPUTS
            && #states <= #fused::MAX_FUSED_STATES
            && #uniforms <= #fused::MAX_FUSED_UNIFORMS
            && #no_companion;

        #table_agrees

        #chunk
    }
}

fn chunk_fn(k: &OptimizerFn, kernels: &DeviceCratePath) -> TokenStream {
    let bound = format_ident!("{}", BOUND);
    let len = format_ident!("{}", LEN);
    let state = format_ident!("__adamant_state");
    let (mut inputs, mut states, mut uniforms) = (0usize, 0usize, 0usize);
    let mut pointers = Vec::new();
    for a in &k.args {
        let ident = &a.ident;
        let element = a.storage.element();
        let (table, ty) = match &a.role {
            Role::Param => {
                let table =
                    param_table(k).expect("a kernel without a companion has a parameter table");
                (quote!(__adamant_row.param(#table)), quote!(*mut #element))
            }
            Role::Input => {
                inputs += 1;
                let i = inputs - 1;
                (quote!(__adamant_row.input(#i)), quote!(*const #element))
            }
            Role::State => {
                states += 1;
                let i = states - 1;
                (quote!(__adamant_row.state(#i)), quote!(*mut #element))
            }
            Role::UniformPtr(default) => {
                uniforms += 1;
                let i = uniforms - 1;
                let default = lit_f32(default);
                pointers.push(quote! {
                    let #ident: f32 = {
                        let __adamant_q = __adamant_row.uniform(#i) as *const f32;
                        if __adamant_q.is_null() { #default } else { *__adamant_q }
                    };
                });
                continue;
            }
            Role::Scalar(_) => continue,
        };
        pointers.push(quote! {
            let #ident: #ty = (#table as #ty).add(__adamant_start);
        });
    }
    let scalars = crate::record::loads(k, &state);
    let sweep = crate::optimizer::sweep_fn(k, kernels, quote!(<const M: usize>), quote!(M));
    let buffers = k.buffers().map(|a| &a.ident);
    let uniforms = crate::entry_parts::uniform_idents(k);
    let rounding = crate::optimizer::rounding_arg(k, kernels, quote!(__adamant_rounding_index));
    // The record's stored maximum as this rule's parameter storage gives it (f32, rounded to a
    // 16-bit type, or kept element by element for a stochastic store).
    let facts = crate::optimizer::param_arg(k)
        .storage
        .facts(kernels, quote!(M));
    quote! {
        /// One chunk of a tensor in a fused entry (see `adamant_abi::fused`): its pointers
        /// from the tensor's row of the tables (`FusedRow`), its scalars from the tensor's step
        /// record, then this kernel's sweep of `len` elements from `start` (the same sweep as
        /// its own entries': the clamp with `bound` before the parameter store), the facts into
        /// `facts` (a record of `M >= BUFFERS` buffers). A stochastic store keys its random
        /// words with `rounding_index`, the tensor's index in its group
        /// (`adamant_abi::fused::rule_word`), not its index in the set.
        #[cfg(target_arch = "nvptx64")]
        #[doc(hidden)]
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn __adamant_fused_chunk<const M: usize>(
            __adamant_row: #kernels::fused::FusedRow,
            __adamant_rounding_index: u32,
            __adamant_start: usize,
            #len: usize,
            #state: *const #kernels::step::StepRecord,
            __adamant_shared: *mut u32,
            __adamant_facts: &mut #kernels::diagnostics::ThreadFacts<M>,
            __adamant_grad_coef: f32,
            #bound: f32,
        ) {
            // `M >= BUFFERS` is checked where the sweep hands its values to the facts
            // (`ThreadFacts::observe`'s const assertion).
            #sweep
            #(#pointers)*
            #scalars
            __adamant_facts.adopt(#facts);
            __adamant_sweep::<M>(
                #(#buffers,)*
                #len,
                #kernels::builtins::thread_index() as usize,
                #kernels::builtins::block_dim() as usize,
                true,
                #(#uniforms,)*
                #rounding
                __adamant_start as u64,
                __adamant_shared,
                __adamant_facts,
                __adamant_grad_coef,
                #bound,
            );
        }
    }
}
