//! Expansion snapshots: what `#[optimizer_kernel]` stamps into a kernel, pretty-printed.
use quote::quote;

fn pretty(tokens: proc_macro2::TokenStream) -> String {
    let file: syn::File = syn::parse2(tokens).expect("expansion parses as a file");
    prettyplease::unparse(&file)
}

#[test]
fn optimizer_kernel_stamps_clamp_epilogue() {
    let expanded = crate::optimizer::expand(
        quote!(),
        quote! {
            /// Adam without decay.
            pub fn toy_adam(
                #[param] p: f32,
                #[input] g: f32,
                #[state] m: &mut f32,
                #[uniform_ptr(default = 1.0)] scale: f32,
                lr: f32,
            ) -> f32 {
                *m = 0.9 * *m + 0.1 * g * scale;
                p - lr * *m
            }
        },
    )
    .expect("valid kernel");
    insta::assert_snapshot!(pretty(expanded));
}

#[test]
fn kernel_entry_registers_other_kernel() {
    let expanded = crate::entry::expand(
        quote!(),
        quote! {
            pub unsafe extern "gpu-kernel" fn probe(out: *mut u32, n: usize, x: f32) {
                *out = n as u32;
            }
        },
    )
    .expect("valid entry");
    insta::assert_snapshot!(pretty(expanded));
}
