//! Kernel definitions shared by the snapshot and structural expansion tests.
use proc_macro2::TokenStream;
use quote::quote;

/// One kernel of each shape the tests expand: `(name, param ident, definition)`.
pub fn all() -> Vec<(&'static str, &'static str, TokenStream)> {
    vec![
        ("toy_adam", "p", toy_adam()),
        ("curiosity_adam_step", "p", curiosity_adam_step()),
        ("minimal", "w", minimal()),
        ("every_role", "weights", every_role()),
        ("near_reserved", "sweep", near_reserved()),
        ("scheduled", "p", scheduled()),
    ]
}

/// The `#[optimizer_kernel(..)]` arguments test kernel `name` is expanded with.
pub fn attr(name: &str) -> TokenStream {
    match name {
        "scheduled" => quote!(schedule = decay_schedule),
        _ => quote!(),
    }
}

/// `#[derived]` scalars (an f32 and a u32) computed by a schedule, between `#[hyper]` ones.
pub fn scheduled() -> TokenStream {
    quote! {
        pub fn scheduled(
            #[param] p: f32,
            #[input] g: f32,
            #[hyper] #[domain(ge = 0.0)] lr: f32,
            #[derived(init = 1.0)] decay_product: f32,
            #[hyper] decay: f32,
            #[derived(init = 0)] steps_seen: u32,
        ) -> f32 {
            p - lr * decay_product * g * (steps_seen as f32)
        }
    }
}

/// One buffer of each role (the input a gradient), a uniform pointer and a scalar with a domain.
pub fn toy_adam() -> TokenStream {
    quote! {
        /// Adam without decay.
        pub fn toy_adam(
            #[param] p: f32,
            #[grad] g: f32,
            #[state] m: &mut f32,
            #[uniform_ptr(default = 1.0)] scale: f32,
            #[hyper] #[domain(ge = 0.0)] lr: f32,
        ) -> f32 {
            *m = 0.9 * *m + 0.1 * g * scale;
            p - lr * *m
        }
    }
}

/// Shaped like `adamant-device`'s `curiosity_adam_step`: AMSGrad, three `#[state]` buffers.
pub fn curiosity_adam_step() -> TokenStream {
    quote! {
        /// Curiosity model: Adam without decay, AMSGrad.
        #[allow(clippy::too_many_arguments)]
        pub fn curiosity_adam_step(
            #[param] p: f32,
            #[input] g: f32,
            #[state] m: &mut f32,
            #[state] v: &mut f32,
            #[state] v_max: &mut f32,
            #[step] lr: f32,
            #[step] beta1: f32,
            #[step] beta2: f32,
            #[hyper] eps: f32,
            #[step] bias_correction1: f32,
            #[step] bias_correction2: f32,
        ) -> f32 {
            let s = AdamScalars {
                lr,
                beta1,
                beta2,
                eps,
                bias_correction1,
                bias_correction2,
            };
            amsgrad_step(p, g, m, v, v_max, s)
        }
    }
}

/// Only the parameter, under another name, with a `mut` pattern.
pub fn minimal() -> TokenStream {
    quote! {
        fn minimal(#[param] mut w: f32) -> f32 {
            w *= 0.5;
            w
        }
    }
}

/// Every role, in an order that puts uniforms between buffers, a `u32` scalar, and an argument
/// named `update` (which must not shadow the module's `update` inside `element`), with a domain
/// that has a negative bound.
pub fn every_role() -> TokenStream {
    quote! {
        pub(crate) fn every_role(
            #[input] grad: f32,
            #[hyper] step: u32,
            #[param] weights: f32,
            #[uniform_ptr(default = 0.5)] scale: f32,
            #[state] moment: &mut f32,
            #[hyper] #[domain(gt = -1.0, le = 2.5)] update: f32,
            #[input] mask: f32,
        ) -> f32 {
            *moment += grad * scale * mask;
            weights - update * *moment / step as f32
        }
    }
}

/// Arguments named after the module's items (`sweep`, `element`) and next to the multi entry's
/// reserved names (`chunk`, `n_chunk`, `tables`): the entries reach `sweep` and `sweep` reaches
/// `element` by path, so none of them is shadowed.
pub fn near_reserved() -> TokenStream {
    quote! {
        pub fn near_reserved(
            #[state] element: &mut f32,
            #[param] sweep: f32,
            #[input] chunk: f32,
            #[hyper] tables: f32,
            #[hyper] n_chunk: u32,
            #[uniform_ptr(default = 2.0)] scalars: f32,
        ) -> f32 {
            *element += chunk * scalars;
            sweep - tables * *element / n_chunk as f32
        }
    }
}

/// A `#[kernel_entry]` with a pointer of each role and two scalars.
pub fn probe_entry() -> TokenStream {
    quote! {
        pub unsafe extern "gpu-kernel" fn probe(
            #[output] out: *mut u32,
            #[input] data: *const f32,
            #[index] items: *const u32,
            n: usize,
            x: f32,
        ) {
            *out = n as u32;
        }
    }
}
