// The multi-tensor entry `<kernel>_multi` the macro generates next to the single-buffer one: one
// pointer table per buffer (Param/Input/State -> *Table roles, declared order), the chunk table
// and its length, the per-tensor clamp scales, the same uniforms, then `weight_clamp_max_abs`, still last. Argument names
// next to the reserved ones (`chunk`, `n_chunk`, `tables`, `scalars`) and named after the
// module's own items (`sweep`, `element`) are accepted and do not collide with them.
#![deny(warnings)]
use adamant_device::abi::UniformPtr;
use adamant_device::abi::{
    self, ArgValue, Domain, KernelKind, OptimizerEntry, ParamRole, ParamType,
};
use adamant_device::optimizer_kernel;

/// A state buffer named `element`, the parameter named `sweep`.
#[optimizer_kernel]
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

fn main() {
    let d = &near_reserved::MULTI_DESCRIPTOR;
    assert_eq!(d.name, "near_reserved_multi");
    assert_eq!(d.kind, KernelKind::Optimizer);
    let params: Vec<(&str, ParamType, ParamRole)> =
        d.params.iter().map(|p| (p.name, p.ty, p.role)).collect();
    assert_eq!(
        params,
        [
            ("element", ParamType::Ptr, ParamRole::StateTable),
            ("sweep", ParamType::Ptr, ParamRole::ParamTable),
            ("chunk", ParamType::Ptr, ParamRole::InputTable),
            ("chunks", ParamType::Ptr, ParamRole::ChunkTable),
            ("n_chunks", ParamType::U32, ParamRole::ChunkCount),
            ("weight_clamp_scales", ParamType::Ptr, ParamRole::ClampScales),
            (
                "tables",
                ParamType::F32,
                ParamRole::Scalar {
                    domain: Domain::FINITE
                }
            ),
            (
                "n_chunk",
                ParamType::U32,
                ParamRole::Scalar {
                    domain: Domain::ANY
                }
            ),
            (
                "scalars",
                ParamType::Ptr,
                ParamRole::UniformPtr { default: 2.0 }
            ),
            ("records", ParamType::Ptr, ParamRole::Records),
            (
                "weight_clamp_max_abs",
                ParamType::F32,
                ParamRole::ClampBound
            ),
        ]
    );
    assert!(d.is_multi_tensor());
    assert_eq!(d.param_buffer_index(), Some(1));
    assert_eq!(d.clamp_bound_index(), Some(d.params.len() - 1));
    assert_eq!(d.clamp_scales_index(), Some(5));

    // Both entries are registered and reachable from `Entry`; only the multi one is chunked.
    let single = &near_reserved::DESCRIPTOR;
    assert!(!single.is_multi_tensor());
    assert_eq!(single.clamp_bound_index(), Some(single.params.len() - 1));
    assert!(std::ptr::eq(
        abi::kernel_in(env!("CARGO_CRATE_NAME"), "near_reserved_multi").expect("registered"),
        d
    ));
    assert!(std::ptr::eq(
        abi::kernel_in(env!("CARGO_CRATE_NAME"), "near_reserved").expect("registered"),
        single
    ));
    assert!(std::ptr::eq(
        <near_reserved::Entry as OptimizerEntry>::MULTI_DESCRIPTOR,
        d
    ));
    assert!(std::ptr::eq(
        <near_reserved::Entry as OptimizerEntry>::DESCRIPTOR,
        single
    ));

    // Both entries take the same uniforms, in the same order, between the chunk count (or the
    // length) and the bound; `scalar_values` gives them, and the runtime adds the rest.
    let scalars = near_reserved::Scalars {
        tables: 0.5,
        n_chunk: 4,
        // SAFETY: never launched: only the argument list is compared.
        scalars: unsafe { UniformPtr::from_raw(9) },
    };
    let values = near_reserved::Entry::scalar_values(&scalars);
    assert_eq!(
        values,
        [ArgValue::F32(0.5), ArgValue::U32(4), ArgValue::Ptr(9)]
    );
    // Everything but the buffers (3), the chunk table, count and clamp scales (or len), the
    // records and the bound.
    assert_eq!(values.len(), d.params.len() - 8);
    assert_eq!(values.len(), single.params.len() - 6);

    // `element` is still `update`, then the clamp.
    let mut m = 0.0;
    assert_eq!(
        near_reserved::element(&mut m, 100.0, 1.0, 1.0, 1, 2.0, 10.0),
        10.0
    );
    assert_eq!(m, 2.0);
}
