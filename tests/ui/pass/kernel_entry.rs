// A hand-written non-optimizer entry: exported on nvptx by the macro, described on the host as
// `KernelKind::Other` so the PTX audit knows it was declared on purpose. Every pointer declares
// its role (#[input] read only, #[output] written, #[index] a read-only table of records); the
// scalars are `Scalar { domain: Domain::ANY }`. The role attributes are the macro's: the emitted
// function keeps only the author's other attributes (here a lint on one argument).
#![deny(warnings)]
use adamant_device::abi::{self, Domain, KernelKind, ParamRole, ParamType};
use adamant_device::kernel_entry;

const ANY: ParamRole = ParamRole::Scalar {
    domain: Domain::ANY,
};

/// Counts the NaNs in the `ranges` of `data` into `*count`.
#[kernel_entry]
pub unsafe extern "gpu-kernel" fn count_nans(
    #[input] data: *const f32,
    #[index] ranges: *const u32,
    len: usize,
    n_ranges: u32,
    #[output] count: *mut u32,
    #[allow(unused_variables)] threshold: f32,
) {
    let _ = (data, ranges, len, n_ranges, count);
}

fn main() {
    let d = &count_nans::DESCRIPTOR;
    assert_eq!(d.name, "count_nans");
    assert_eq!(d.kind, KernelKind::Other);
    let params: Vec<(&str, ParamType, ParamRole)> =
        d.params.iter().map(|p| (p.name, p.ty, p.role)).collect();
    assert_eq!(
        params,
        [
            ("data", ParamType::Ptr, ParamRole::Input),
            ("ranges", ParamType::Ptr, ParamRole::IndexTable),
            ("len", ParamType::Usize, ANY),
            ("n_ranges", ParamType::U32, ANY),
            ("count", ParamType::Ptr, ParamRole::Output),
            ("threshold", ParamType::F32, ANY),
        ]
    );
    let writable: Vec<&str> = d
        .params
        .iter()
        .filter(|p| p.role.is_writable())
        .map(|p| p.name)
        .collect();
    assert_eq!(writable, ["count"], "only the #[output] is writable");
    assert!(d.params.iter().all(|p| !p.role.is_param()));
    assert_eq!(d.clamp_bound_index(), None);
    assert_eq!(d.param_buffer_index(), None);
    assert!(std::ptr::eq(
        abi::kernel_in(env!("CARGO_CRATE_NAME"), "count_nans").expect("registered"),
        d
    ));
}
