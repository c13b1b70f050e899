//! `fused_optimizer!`: one entry that updates every tensor of a set, each with its own rule.
//!
//! ```ignore
//! fused_optimizer! {
//!     /// The RL step: every group in one launch.
//!     pub rl_step = [dqn_adam_update_kernel, iqn_adam_kernel, soft_update_kernel];
//! }
//! ```
//!
//! Each rule is an `#[optimizer_kernel]` (of this crate or another). A proc macro cannot read
//! another item, so the entry learns nothing of a rule's signature: it calls the rule's own
//! `__adamant_fused_chunk` (`fused_rule`), which the rule's macro generated from its signature,
//! with the clamp stamped in. The entry itself only walks the chunk table, once per rule, and for
//! each chunk of that rule's tensors reads the tensor's step record and scale and calls the rule's
//! chunk (a branch index the set lacks traps). Its tables and parameters are
//! fixed (`adamant_abi::fused`), so its descriptor is too; the rules' descriptors go beside it
//! (`<set>::RULES`) for the runtime.
//!
//! It generates `mod <set>` with `DESCRIPTOR` (registered, kind optimizer), `RULES`,
//! `RECORD_BUFFERS` and `Entry: FusedEntry`, and on nvptx the `#[no_mangle]` entry `<set>`.
use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{bracketed, Attribute, Ident, Path, Token, Visibility};

use crate::device_crate::DeviceCratePath;

/// The most rules one set may name (`adamant_abi::fused::MAX_FUSED_RULES`, which the generated
/// entry asserts it equals).
const MAX_RULES: usize = 32;

/// `#[attrs] vis name = [rule, ...];`
struct FusedSet {
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    rules: Vec<Path>,
}

impl Parse for FusedSet {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let name: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let content;
        let bracket = bracketed!(content in input);
        let rules: Punctuated<Path, Token![,]> = Punctuated::parse_terminated(&content)?;
        let _ = input.parse::<Option<Token![;]>>()?;
        if !input.is_empty() {
            return Err(input.error("expected one `name = [rule, ...];` per fused_optimizer!"));
        }
        let rules: Vec<Path> = rules.into_iter().collect();
        if rules.is_empty() {
            return Err(syn::Error::new(
                bracket.span.join(),
                "a fused set names at least one rule (an #[optimizer_kernel])",
            ));
        }
        // A sanity limit of this macro's own (a rule is one loop of the entry); the rule
        // table's words could index more.
        if rules.len() > MAX_RULES {
            return Err(syn::Error::new(
                bracket.span.join(),
                format!(
                    "a fused set names at most {MAX_RULES} rules, not {}",
                    rules.len()
                ),
            ));
        }
        for (i, a) in rules.iter().enumerate() {
            if rules[..i]
                .iter()
                .any(|b| quote!(#a).to_string() == quote!(#b).to_string())
            {
                return Err(syn::Error::new_spanned(
                    a,
                    "this rule is already in the set (each rule is one branch)",
                ));
            }
        }
        Ok(FusedSet {
            attrs,
            vis,
            name,
            rules,
        })
    }
}

/// The expansion of `fused_optimizer!`.
pub fn expand(input: TokenStream, kernels: &DeviceCratePath) -> syn::Result<TokenStream> {
    let set: FusedSet = syn::parse2(input)?;
    let FusedSet {
        attrs,
        vis,
        name,
        rules,
    } = &set;
    let name_str = name.to_string();
    let in_module: Vec<TokenStream> = rules.iter().map(crate::record::path_from_module).collect();
    let n_rules = rules.len();
    let fused = quote! { #kernels::abi::fused };
    // What the set reads of each rule, named at the rule's own path, so that an error about one
    // (not a kernel, not fusable) points at it: its assertion, its buffer count, its descriptor.
    let (mut fusable, mut buffers, mut stepped) = (Vec::new(), Vec::new(), Vec::new());
    for (path, r) in rules.iter().zip(&in_module) {
        let message = format!(
            "`{}` cannot be a rule of a fused set: it has more #[input]s, #[state]s or \
             #[uniform_ptr]s than a fused entry has tables (adamant_abi::fused::MAX_FUSED_*), or \
             a companion buffer (#[param(bf16, master)] or #[param(bf16, remainder)]), which no \
             fused table holds",
            quote!(#path).to_string().replace(' ', "")
        );
        let span = path.span();
        fusable
            .push(quote_spanned! {span=> const _: () = ::core::assert!(#r::FUSABLE, #message); });
        buffers.push(quote_spanned! {span=> #r::BUFFERS });
        stepped.push(quote_spanned! {span=> &#r::STEPPED_DESCRIPTOR });
    }
    let descriptor = crate::descriptor::registered(
        kernels,
        crate::descriptor::Descriptor {
            docs: quote! {
                /// The fused entry's parameters, in PTX order (`adamant_abi::fused`).
            },
            ident: format_ident!("DESCRIPTOR"),
            register: format_ident!("__ADAMANT_REGISTER"),
            name: quote!(#name_str),
            kind: quote!(Optimizer),
            params: quote!(&#fused::FUSED_PARAMS),
            record: quote!(&[]),
        },
    );
    let entry = device_entry(name, rules, kernels);
    let entries_cfg = crate::device_crate::entries_cfg();
    Ok(quote! {
        #(#attrs)*
        #[allow(non_snake_case)]
        #vis mod #name {
            #[allow(unused_imports)]
            use super::*;

            #(#fusable)*
            // Every branch fits a rule-table word (`adamant_abi::fused::rule_word`).
            const _: () = ::core::assert!(#n_rules <= #fused::MAX_FUSED_RULES);

            /// The buffer count of the entry's diagnostics records: the most of any rule.
            pub const RECORD_BUFFERS: usize = {
                let all = [#(#buffers),*];
                let mut most = 0;
                let mut i = 0;
                while i < all.len() {
                    if all[i] > most {
                        most = all[i];
                    }
                    i += 1;
                }
                most
            };

            #descriptor

            /// Each rule's stepped single-tensor descriptor, in branch order.
            #[cfg(not(target_arch = "nvptx64"))]
            pub static RULES: [&#kernels::abi::KernelDescriptor; #n_rules] =
                [#(#stepped),*];

            /// The typed host view of this fused entry.
            #[cfg(not(target_arch = "nvptx64"))]
            #[derive(Clone, Copy, Debug)]
            pub struct Entry;

            // SAFETY: generated by fused_optimizer! for its own entry (the seal).
            #[cfg(not(target_arch = "nvptx64"))]
            unsafe impl #kernels::abi::GeneratedEntry for Entry {}

            #[cfg(not(target_arch = "nvptx64"))]
            impl #fused::FusedEntry for Entry {
                const DESCRIPTOR: &'static #kernels::abi::KernelDescriptor = &DESCRIPTOR;
                const RULES: &'static [&'static #kernels::abi::KernelDescriptor] = &RULES;
                const RECORD_BUFFERS: usize = RECORD_BUFFERS;
            }
        }

        #[cfg(target_arch = "nvptx64")]
        #[allow(unexpected_cfgs)]
        const _: () = {
            #entries_cfg
            const _: () = {
                #entry
            };
        };
    })
}

fn device_entry(name: &Ident, rules: &[Path], kernels: &DeviceCratePath) -> TokenStream {
    let diagnostics = quote! { #kernels::diagnostics };
    let builtins = quote! { #kernels::builtins };
    let n_rules = rules.len() as u32;
    let loops = rules.iter().enumerate().map(|(i, rule)| {
        // The first rule's walk also refuses a branch index the set does not have: the runtime
        // writes only the set's indices, so anything else is a bug that must not pass silently
        // (a chunk of no rule's loop would otherwise be skipped).
        let unknown = (i == 0).then(|| {
            quote! {
                if #kernels::fused::rule_branch(word) >= #n_rules {
                    #builtins::trap();
                }
            }
        });
        let i = i as u32;
        quote! {
            let mut c = #builtins::block_index();
            while c < n_chunks {
                let chunk = *chunks.add(c as usize);
                let tensor = chunk.tensor as usize;
                let word = *rules.add(tensor);
                #unknown
                if #kernels::fused::rule_branch(word) == #i {
                    let state = *step_states.add(tensor) as *const #kernels::step::StepRecord;
                    let verdict = #kernels::guard::verdict_in_one_trip(&*state);
                    // The tensor's own record's bound and its own scale (the audit proves both
                    // were loaded at the index its parameter pointer was).
                    let bound = #kernels::multi::tensor_bound(
                        (*state).state.bound,
                        *weight_clamp_scales.add(tensor),
                    );
                    // A skipped step (its record's guard verdict) sweeps no element.
                    let len = if verdict.skip { 0 } else { chunk.len as usize };
                    // The tensor's addresses, read before the rule's sweep (`FusedRow` says why).
                    let row = tables.row(tensor);
                    #rule::__adamant_fused_chunk::<M>(
                        row,
                        #kernels::fused::rule_rounding_index(word),
                        chunk.start as usize,
                        len,
                        state,
                        shared,
                        &mut facts,
                        verdict.grad_coef,
                        bound,
                    );
                    // The chunk's facts into its tensor's record, every chunk, with the bound the
                    // chunk used. (Flushed only when the tensor changed, the block's recording
                    // state stayed live through every sweep, at the cost of registers.)
                    #diagnostics::flush::<M>(&mut facts, shared, records, chunk.tensor, bound);
                }
                c += #builtins::grid_dim();
            }
        }
    });
    quote! {
        /// The fused entry: each block takes chunks in turn, once per rule, and sweeps the chunks
        /// of that rule's tensors; a chunk's tensor's step record and scale give its scalars,
        /// its guard verdict and its bound. One loop per rule, not one switch per chunk, so that
        /// no rule's sweep sits in a branch of another's loop. Under the cap of 80 neither fused
        /// entry spills any more, and the launches ran 2 to 3 µs faster (docs/performance.md,
        /// sixteenth session).
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        unsafe extern "gpu-kernel" fn #name(
            param: *const u64,
            param_bf16: *const u64,
            param_bf16_sr: *const u64,
            param_f16: *const u64,
            input0: *const u64,
            input1: *const u64,
            state0: *const u64,
            state1: *const u64,
            state2: *const u64,
            state3: *const u64,
            uniform0: *const u64,
            uniform1: *const u64,
            chunks: *const #kernels::multi::Chunk,
            n_chunks: u32,
            weight_clamp_scales: *const f32,
            rules: *const u32,
            records: *const #diagnostics::RecordsHeader,
            step_states: *const u64,
        ) {
            const M: usize = #name::RECORD_BUFFERS;
            let tables = #kernels::fused::FusedTables {
                params: [param, param_bf16, param_bf16_sr, param_f16],
                inputs: [input0, input1],
                states: [state0, state1, state2, state3],
                uniforms: [uniform0, uniform1],
            };
            let shared: *mut u32 = #builtins::dynamic_shared::<u32>();
            #diagnostics::begin::<M>(shared);
            let mut facts = #diagnostics::ThreadFacts::<M>::new();
            #(#loops)*
            #diagnostics::publish::<M>(shared, records);
        }
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::expand;
    use crate::device_crate::DeviceCratePath;

    fn error(input: proc_macro2::TokenStream) -> String {
        expand(input, &DeviceCratePath::own_name())
            .expect_err("refused")
            .to_string()
    }

    #[test]
    fn a_set_without_rules_or_with_a_rule_twice_is_refused() {
        assert!(error(quote!(pub s = [];)).contains("at least one rule"));
        assert!(error(quote!(pub s = [a, b, a];)).contains("already in the set"));
        let many: Vec<proc_macro2::Ident> = (0..33).map(|i| quote::format_ident!("r{i}")).collect();
        assert!(error(quote!(pub s = [#(#many),*];)).contains("at most 32 rules"));
        assert!(error(quote!(pub s = [a]; pub t = [b];)).contains("one `name = [rule, ...];`"));
    }

    /// Each rule's branch calls that rule's own fused chunk with the entry's bound, and each rule
    /// is asserted fusable: nothing of a rule is written twice.
    #[test]
    fn each_branch_calls_its_rules_chunk() {
        let out = expand(quote!(pub s = [a, m::b];), &DeviceCratePath::own_name())
            .unwrap()
            .to_string();
        // Rule `i`'s loop sweeps the chunks whose branch is `i`, with rule `i`'s chunk.
        let loop_of = |i: &str, rule: &str| {
            let test = format!("rule_branch (word) == {i}u32");
            let call = format!("{rule} :: __adamant_fused_chunk :: < M >");
            let at = out
                .find(&test)
                .unwrap_or_else(|| panic!("no loop of rule {i}: {out}"));
            out[at..].find(&call).map(|c| at + c)
        };
        let a = loop_of("0", "a").expect("rule 0's loop calls a's chunk");
        let b = loop_of("1", "m :: b").expect("rule 1's loop calls b's chunk");
        assert!(a < b, "the loops are in the set's order: {out}");
        // A branch index past the set's rules traps, once (in the first rule's walk), before
        // that walk's own test.
        let unknown = "rule_branch (word) >= 2u32";
        assert_eq!(out.matches(unknown).count(), 1, "{out}");
        let trap = out.find(unknown).unwrap();
        assert!(
            out[trap..].find("trap ()").is_some_and(|t| trap + t < a),
            "{out}"
        );
        assert!(
            out.contains("a :: FUSABLE") && out.contains("m :: b :: FUSABLE"),
            "{out}"
        );
        // Its parameters are the one list of `adamant_abi::fused`, whose last is the step-state
        // table.
        assert!(out.contains("fused :: FUSED_PARAMS"), "{out}");
    }
}
