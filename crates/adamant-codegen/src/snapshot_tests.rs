//! Expansion snapshots: what `#[optimizer_kernel]` stamps into a kernel, pretty-printed. Review
//! any change to these files: the `element` fn must end in `::adamant_device::clamp::weight_clamp`;
//! the device code must sit in one `#[cfg(target_arch = "nvptx64")] const _: () = { .. };` block
//! (so none of it can be named); each of `__adamant_sweep`'s two loops (vector, then scalar) must
//! store `__adamant_new`, made of `<kernel>::element` calls, to the parameter buffer exactly once;
//! both nvptx entries (`<kernel>` and `<kernel>_multi`) must take `weight_clamp_max_abs: f32`
//! last, store nothing themselves and pass it last to `__adamant_sweep`; `DESCRIPTOR` and
//! `MULTI_DESCRIPTOR` must end in the `ClampBound`. `structure_tests` checks the same on the
//! syntax tree.
use quote::quote;

use crate::device_crate::DeviceCratePath;
use crate::test_kernels;

fn pretty(tokens: proc_macro2::TokenStream) -> String {
    let file: syn::File = syn::parse2(tokens).expect("expansion parses as a file");
    prettyplease::unparse(&file)
}

fn optimizer(kernel: proc_macro2::TokenStream) -> String {
    pretty(
        crate::optimizer::expand(quote!(), kernel, &DeviceCratePath::own_name())
            .expect("valid kernel"),
    )
}

#[test]
fn optimizer_kernel_stamps_clamp_epilogue() {
    insta::assert_snapshot!(optimizer(test_kernels::toy_adam()));
}

#[test]
fn curiosity_adam_step_three_state_buffers() {
    insta::assert_snapshot!(optimizer(test_kernels::curiosity_adam_step()));
}

#[test]
fn every_role_in_mixed_order() {
    insta::assert_snapshot!(optimizer(test_kernels::every_role()));
}

/// `#[derived]` scalars and their schedule: the stepped entries read every scalar from the
/// record (the `#[hyper]` and `#[derived]` ones from its words), and the schedule entry writes
/// the derived words only.
#[test]
fn scheduled_kernel_reads_every_scalar_from_its_record() {
    insta::assert_snapshot!(pretty(
        crate::optimizer::expand(
            test_kernels::attr("scheduled"),
            test_kernels::scheduled(),
            &DeviceCratePath::own_name()
        )
        .expect("valid kernel")
    ));
}

#[test]
fn kernel_entry_registers_other_kernel() {
    let expanded = crate::entry::expand(
        quote!(),
        test_kernels::probe_entry(),
        &DeviceCratePath::own_name(),
    )
    .expect("valid entry");
    insta::assert_snapshot!(pretty(expanded));
}
