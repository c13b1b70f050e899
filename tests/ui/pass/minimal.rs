// The smallest optimizer kernel: only the parameter. The macro still appends the bound last and
// clamps what the entry stores.
#![deny(warnings)]
use adamant_device::abi::{self, KernelKind, ParamRole, ParamType};
use adamant_device::optimizer_kernel;

/// Halves every weight.
#[optimizer_kernel]
pub fn halve(#[param] p: f32) -> f32 {
    p * 0.5
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

// At compile time: the descriptor ends in the clamp bound, and `element` takes it last.
const _: () = {
    let params = halve::DESCRIPTOR.params;
    let last = &params[params.len() - 1];
    assert!(str_eq(last.name, "weight_clamp_max_abs"));
    assert!(matches!(last.role, ParamRole::ClampBound));
    assert!(matches!(last.ty, ParamType::F32));
};
const _: fn(f32, f32) -> f32 = halve::element;

fn main() {
    let d = &halve::DESCRIPTOR;
    assert_eq!(d.kind, KernelKind::Optimizer);
    let names: Vec<&str> = d.params.iter().map(|p| p.name).collect();
    assert_eq!(names, ["p", "len", "records", "weight_clamp_max_abs"]);
    assert_eq!(d.param_buffer_index(), Some(0));
    assert_eq!(d.clamp_bound_index(), Some(d.params.len() - 1));
    let registered = abi::kernel_in(env!("CARGO_CRATE_NAME"), "halve").expect("halve is registered in abi::KERNELS");
    assert!(std::ptr::eq(registered, d));

    // `update` is the author's math; `element` is what the entry stores: update, then the clamp.
    assert_eq!(halve::update(10.0), 5.0);
    assert_eq!(halve::element(10.0, 2.0), 2.0);
    assert_eq!(halve::element(-10.0, 2.0), -2.0);
    assert_eq!(halve::element(3.0, 2.0), 1.5);
    assert_eq!(halve::element(f32::INFINITY, 2.0), 2.0);
    assert!(halve::element(f32::NAN, 2.0).is_nan());
    // A bound of 0.0 is the runtime's "disabled".
    assert_eq!(halve::element(10.0, 0.0), 5.0);
}
