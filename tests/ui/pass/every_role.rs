// Every argument role, in an order that interleaves buffers and uniforms, plus the accepted
// function attributes (doc and lints), a `mut` pattern, a raw identifier and an argument named
// `update`, with a domain (`#[domain]`, a negative bound). The entry's parameters are the
// buffers in declared order, `len`, the uniforms in declared order, then
// `weight_clamp_max_abs`; `element` clamps what `update` returns.
#![deny(warnings)]
use adamant_device::abi::{
    self, same_buffers, ArgValue, Domain, Limit, OptimizerEntry, ParamRole, ParamType, Same,
    UniformPtr,
};
use adamant_device::optimizer_kernel;
use adamant_device::prelude::max;

/// Momentum SGD with an AMSGrad-style running max, a masked gradient and a device-side scale.
#[optimizer_kernel]
#[allow(clippy::too_many_arguments)]
#[deny(unused_variables)]
pub fn every_role(
    #[input] grad: f32,
    #[hyper] step: u32,
    #[param] mut weights: f32,
    #[uniform_ptr(default = 0.5)] scale: f32,
    #[state] moment: &mut f32,
    #[hyper] #[domain(gt = -1.0, le = 2.5)] update: f32,
    #[state] peak: &mut f32,
    #[input] r#in: f32,
) -> f32 {
    *moment = 0.5 * *moment + grad * scale * r#in;
    *peak = max(*peak, moment.abs());
    weights -= update * *moment / step as f32;
    weights
}

fn main() {
    let d = &every_role::DESCRIPTOR;
    let params: Vec<(&str, ParamType, ParamRole)> =
        d.params.iter().map(|p| (p.name, p.ty, p.role)).collect();
    assert_eq!(
        params,
        [
            ("grad", ParamType::Ptr, ParamRole::Input),
            ("weights", ParamType::Ptr, ParamRole::ParamBuffer),
            ("moment", ParamType::Ptr, ParamRole::State),
            ("peak", ParamType::Ptr, ParamRole::State),
            ("in", ParamType::Ptr, ParamRole::Input),
            ("len", ParamType::Usize, ParamRole::Len),
            (
                "step",
                ParamType::U32,
                ParamRole::Scalar {
                    domain: Domain::ANY
                }
            ),
            (
                "scale",
                ParamType::Ptr,
                ParamRole::UniformPtr { default: 0.5 }
            ),
            (
                "update",
                ParamType::F32,
                ParamRole::Scalar {
                    domain: Domain {
                        lower: Limit::Exclusive(-1.0),
                        upper: Limit::Inclusive(2.5),
                        finite: true,
                    }
                }
            ),
            ("records", ParamType::Ptr, ParamRole::Records),
            (
                "weight_clamp_max_abs",
                ParamType::F32,
                ParamRole::ClampBound
            ),
        ]
    );
    assert!(std::ptr::eq(
        abi::kernel_in(env!("CARGO_CRATE_NAME"), "every_role").expect("registered"),
        d
    ));
    assert!(std::ptr::eq(
        <every_role::Entry as OptimizerEntry>::DESCRIPTOR,
        d
    ));

    // The uniforms, in entry order; the runtime adds the buffers, the length and the bound.
    let buffers = every_role::Buffers::<Same<u64>> {
        grad: 1u64,
        weights: 2,
        moment: 3,
        peak: 4,
        r#in: 5,
    };
    let scalars = every_role::Scalars {
        step: 7,
        // SAFETY: never launched: only the argument list is compared.
        scale: unsafe { UniformPtr::from_raw(8) },
        update: 0.25,
    };
    assert_eq!(
        every_role::Entry::scalar_values(&scalars),
        [ArgValue::U32(7), ArgValue::Ptr(8), ArgValue::F32(0.25)]
    );
    // The domain as the runtime checks it: within (-1, 2.5] and finite.
    let ParamRole::Scalar { domain } = d.params[8].role else {
        panic!("update is a scalar")
    };
    for (value, ok) in [
        (-1.0, false),
        (-0.999, true),
        (2.5, true),
        (2.5001, false),
        (f64::NAN, false),
        (f64::INFINITY, false),
    ] {
        assert_eq!(domain.contains(value), ok, "{value}");
    }
    let names: Vec<&str> = same_buffers::<every_role::Entry, u64>(&buffers)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(names, ["grad", "weights", "moment", "peak", "in"]);

    // `element` = `update`, then the clamp; the state buffers are updated either way.
    let (mut m1, mut k1) = (0.0, 0.0);
    let raw = every_role::update(2.0, 1, 100.0, 1.0, &mut m1, 1.0, &mut k1, 1.0);
    assert_eq!((raw, m1, k1), (98.0, 2.0, 2.0));
    let (mut m2, mut k2) = (0.0, 0.0);
    let stored = every_role::element(2.0, 1, 100.0, 1.0, &mut m2, 1.0, &mut k2, 1.0, 10.0);
    assert_eq!((stored, m2, k2), (10.0, 2.0, 2.0));
    let (mut m3, mut k3) = (0.0, 0.0);
    let negative = every_role::element(2.0, 1, -100.0, 1.0, &mut m3, 1.0, &mut k3, 1.0, 10.0);
    assert_eq!(negative, -10.0);
    let (mut m4, mut k4) = (0.0, 0.0);
    let nan = every_role::element(f32::NAN, 1, 1.0, 1.0, &mut m4, 1.0, &mut k4, 1.0, 10.0);
    assert!(nan.is_nan(), "the clamp keeps a NaN visible");
}
