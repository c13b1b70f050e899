//! Structural checks of the `#[optimizer_kernel]` expansion, on the syn tree rather than on text.
//!
//! The expansion is `mod <kernel> { update, element, DESCRIPTOR, MULTI_DESCRIPTOR, Buffers, Scalars,
//! Entry }` plus the nvptx-only device block `const _: () = { __adamant_sweep, <kernel>,
//! <kernel>_multi };`, whose items cannot be named from outside it: two entries, `<kernel>` (one
//! buffer set) and `<kernel>_multi` (pointer tables and a chunk table), which both hand their
//! work to `__adamant_sweep`:
//!
//! - [`check_entry_signatures`]: exactly those two exported functions, both in the device block
//!   (which holds them and `__adamant_sweep`, nothing else), `#[no_mangle]`, taking
//!   `weight_clamp_max_abs: f32` last and exactly once; the single entry takes the sweep's
//!   buffers and `len`, the multi entry one `*const u64` table per buffer, then `chunks` and
//!   `n_chunks`, and both the same uniforms.
//! - [`check_descriptors`]: `DESCRIPTOR` and `MULTI_DESCRIPTOR` name their entries' parameters in
//!   order and end in their one `ClampBound`; the multi descriptor's buffers have the `*Table`
//!   roles; both are registered, `Entry` points at them, and `scalar_values` passes exactly the
//!   uniforms, in order (never the bound: the runtime appends the validated one).
//! - [`check_entries_delegate`]: each entry calls `__adamant_sweep` exactly once, passing its
//!   own bound last (never shadowed or reassigned) and the buffers in the sweep's order (the multi
//!   entry's taken from their own tables), and stores nothing itself.
//! - [`check_sweep_stores`]: `__adamant_sweep` is only in the device block (the kernel module,
//!   which other code can name, has no fn but `update` and `element`), takes the bound last, and
//!   stores the parameter buffer exactly twice, once in its vector loop and once in its scalar
//!   loop, always `__adamant_new`, bound right from `<kernel>::element` calls (4 lanes, then 1)
//!   that get the bound last and never the parameter pointer; no other kind of write. The
//!   module's one other fn, the nvptx-only `__adamant_fused_chunk` (`fused_rule`), holds a sweep
//!   of its own, held to the same checks, and besides it stores nothing and calls that sweep
//!   once, with its own bound.
//! - [`check_element_clamps`]: `element`'s body is exactly
//!   `::adamant_device::clamp::weight_clamp(self::update(..), weight_clamp_max_abs)`.
//!
//! - `groups`: a kernel with scalar groups calls each group's macro in turn, then expands as
//!   its twin with the fields written out does (but for the body of `update`).
//! - `renamed_dependency`: expanded for a crate that renamed `adamant-device`, no token of any
//!   expansion names `adamant_device`, and the expansion differs from the one under the crate's
//!   own name by that identifier only.
//!
//! Each check returns `Err` on a violation; `tampered_expansions_are_caught` feeds every check
//! expansions with part of the epilogue removed or bypassed, to show that it would catch a macro
//! that stopped stamping it.
//!
//! Each check lives in the file of its name; `expansion`, `syntax` and `visitors` hold what the
//! checks share, `tampering` the tampering table and `walk_mut` the helpers that edit it in place.
use proc_macro2::TokenStream;
use quote::quote;
use syn::File;

use crate::device_crate::DeviceCratePath;
use crate::test_kernels;

mod descriptors;
mod element_clamps;
mod entries_delegate;
mod entry_signatures;
mod expansion;
mod groups;
mod renamed_dependency;
mod sweep_stores;
mod syntax;
mod tampering;
mod visitors;
mod walk_mut;

use descriptors::check_descriptors;
use element_clamps::check_element_clamps;
use entries_delegate::check_entries_delegate;
use entry_signatures::check_entry_signatures;
use sweep_stores::check_sweep_stores;

const NEW: &str = "__adamant_new";
const SWEEP: &str = "__adamant_sweep";

/// A structural check: `(expansion, kernel name, parameter buffer name)`.
type Check = fn(&File, &str, &str) -> Result<(), String>;

const CHECKS: [(&str, Check); 5] = [
    ("entry_signatures", check_entry_signatures),
    ("descriptors", check_descriptors),
    ("entries_delegate", check_entries_delegate),
    ("sweep_stores", check_sweep_stores),
    ("element_clamps", check_element_clamps),
];

fn expand(kernel: TokenStream) -> File {
    expand_with(quote!(), kernel)
}

fn expand_with(attr: TokenStream, kernel: TokenStream) -> File {
    let tokens =
        crate::optimizer::expand(attr, kernel, &DeviceCratePath::own_name()).expect("valid kernel");
    syn::parse2(tokens).expect("the expansion parses as a file")
}

fn check_all(file: &File, name: &str, param: &str) -> Result<(), String> {
    for (check, f) in CHECKS {
        f(file, name, param).map_err(|e| format!("{check}: {e}"))?;
    }
    Ok(())
}

#[test]
fn every_test_kernel_has_the_epilogue() {
    for (name, param, kernel) in test_kernels::all() {
        let file = expand_with(test_kernels::attr(name), kernel);
        if let Err(e) = check_all(&file, name, param) {
            panic!("{name}: {e}\n{}", prettyplease::unparse(&file));
        }
    }
}

/// Each tampering removes or bypasses part of the epilogue; the named check must notice it, and
/// every check must notice at least one tampering.
#[test]
fn tampered_expansions_are_caught() {
    let (name, param) = ("curiosity_adam_step", "p");
    let pristine = expand(test_kernels::curiosity_adam_step());
    for (check, f) in CHECKS {
        if let Err(e) = f(&pristine, name, param) {
            panic!("the pristine expansion fails {check}: {e}");
        }
    }
    let tampered = tampering::tampered(&pristine, name);

    for (check, _) in CHECKS {
        assert!(
            tampered.iter().any(|(_, c, _, _)| *c == check),
            "no tampering exercises {check}"
        );
    }
    for (what, check, error, file) in &tampered {
        let (_, f) = CHECKS
            .iter()
            .find(|(c, _)| c == check)
            .expect("a known check");
        match f(file, name, param) {
            Err(e) if e.contains(error) => {}
            Err(e) => panic!("{check} caught `{what}`, but not as expected ({error}): {e}"),
            Ok(()) => panic!("{check} missed: {what}\n{}", prettyplease::unparse(file)),
        }
    }
}
