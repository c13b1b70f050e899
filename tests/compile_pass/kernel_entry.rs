// A hand-written non-optimizer entry: exported on nvptx by the macro, described on the host as
// `KernelKind::Other` so the PTX audit knows it was declared on purpose.
#![deny(warnings)]
use adamant_kernels::abi::{self, KernelKind, ParamRole, ParamType};
use adamant_kernels::kernel_entry;

/// Counts the NaNs in `data` into `*count`.
#[kernel_entry]
pub unsafe extern "gpu-kernel" fn count_nans(data: *const f32, len: usize, count: *mut u32) {
    let _ = (data, len, count);
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
            ("data", ParamType::Ptr, ParamRole::Other),
            ("len", ParamType::Usize, ParamRole::Other),
            ("count", ParamType::Ptr, ParamRole::Other),
        ]
    );
    assert_eq!(d.clamp_bound_index(), None);
    assert!(std::ptr::eq(
        abi::kernel("count_nans").expect("registered"),
        d
    ));
}
