// The kernel macros through a renamed dependency: the crate that runs this fixture
// (`tests/renamed-dep`) depends on adamant-device as
// `kernels_renamed = { package = "adamant-device", .. }` and under no other name, so
// `::adamant_device` does not resolve here. Every path the macros generate (the descriptor and
// its ABI types, the linkme registration, the typed `Buffers`/`Scalars`/`Entry`, the clamp in
// `element`) must be `::kernels_renamed::..`, read from this crate's Cargo.toml.
#![deny(warnings)]
use kernels_renamed::abi::{
    self, ArgValue, Domain, KernelDescriptor, KernelKind, Limit, OptimizerEntry, ParamRole,
    ParamType, UniformPtr, same_buffers, BufferRef, Same,
};
use kernels_renamed::{kernel_entry, optimizer_kernel};

/// SGD with momentum, PyTorch's form, with an optional Nesterov step.
#[optimizer_kernel]
pub fn sgd_momentum(
    #[param] p: f32,
    #[input] g: f32,
    #[state] m: &mut f32,
    #[uniform_ptr(default = 1.0)] grad_scale: f32,
    #[hyper] #[domain(gt = 0.0)] lr: f32,
    #[hyper] #[domain(ge = 0.0, lt = 1.0)] momentum: f32,
    #[hyper] weight_decay: f32,
    #[hyper] nesterov: u32,
) -> f32 {
    let g = g * grad_scale + weight_decay * p;
    *m = momentum * *m + g;
    let step = if nesterov != 0 { g + momentum * *m } else { *m };
    p - lr * step
}

/// A scalar group of this crate: its `ScalarGroup` impl, and the callback by which its macro hands
/// the fields to a kernel, are `::kernels_renamed::..` paths too.
#[kernels_renamed::scalar_group]
pub struct Rate {
    #[hyper]
    #[domain(gt = 0.0)]
    rate: f32,
}

/// Plain SGD with decay, its scalars from two groups: this crate's and adamant's.
#[optimizer_kernel]
pub fn grouped_sgd(
    #[param] p: f32,
    #[input] g: f32,
    #[group] rate: Rate,
    #[group] decay: kernels_renamed::scalar_groups::WeightDecay,
) -> f32 {
    p - rate.rate * (g + decay.weight_decay * p)
}

/// Counts the non-finite values of `data` into `*count`.
#[kernel_entry]
pub unsafe extern "gpu-kernel" fn count_non_finite(
    #[input] data: *const f32,
    len: usize,
    #[output] count: *mut u32,
) {
    let _ = (data, len, count);
}

/// The uniforms of any generated entry, through the crate's own trait.
fn uniforms<E: OptimizerEntry>(scalars: &E::Scalars) -> Vec<ArgValue> {
    E::scalar_values(scalars)
}

fn registered(name: &str, d: &'static KernelDescriptor) {
    let found = abi::kernel_in(env!("CARGO_CRATE_NAME"), name).unwrap_or_else(|| panic!("{name} is not registered"));
    assert!(std::ptr::eq(found, d), "{name}: another descriptor");
    assert!(abi::all_kernels().iter().any(|k| std::ptr::eq(*k, d)));
}

fn main() {
    // The descriptors, registered in the crate's `abi::KERNELS`.
    let single = &sgd_momentum::DESCRIPTOR;
    let multi = &sgd_momentum::MULTI_DESCRIPTOR;
    let entry = &count_non_finite::DESCRIPTOR;
    registered("sgd_momentum", single);
    registered("sgd_momentum_multi", multi);
    registered("count_non_finite", entry);

    assert_eq!(single.kind, KernelKind::Optimizer);
    let scalar = |lower, upper| ParamRole::Scalar {
        domain: Domain {
            lower,
            upper,
            finite: true,
        },
    };
    let params: Vec<(&str, ParamType, ParamRole)> = single
        .params
        .iter()
        .map(|p| (p.name, p.ty, p.role))
        .collect();
    assert_eq!(
        params,
        [
            ("p", ParamType::Ptr, ParamRole::ParamBuffer),
            ("g", ParamType::Ptr, ParamRole::Input),
            ("m", ParamType::Ptr, ParamRole::State),
            ("len", ParamType::Usize, ParamRole::Len),
            (
                "grad_scale",
                ParamType::Ptr,
                ParamRole::UniformPtr { default: 1.0 }
            ),
            (
                "lr",
                ParamType::F32,
                scalar(Limit::Exclusive(0.0), Limit::None)
            ),
            (
                "momentum",
                ParamType::F32,
                scalar(Limit::Inclusive(0.0), Limit::Exclusive(1.0))
            ),
            (
                "weight_decay",
                ParamType::F32,
                ParamRole::Scalar {
                    domain: Domain::FINITE
                }
            ),
            (
                "nesterov",
                ParamType::U32,
                ParamRole::Scalar {
                    domain: Domain::ANY
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
    assert!(multi.is_multi_tensor());
    assert_eq!(multi.param_buffer_index(), Some(0));
    assert_eq!(multi.clamp_bound_index(), Some(multi.params.len() - 1));

    assert_eq!(entry.kind, KernelKind::Other);
    let roles: Vec<ParamRole> = entry.params.iter().map(|p| p.role).collect();
    let any = ParamRole::Scalar {
        domain: Domain::ANY,
    };
    assert_eq!(roles, [ParamRole::Input, any, ParamRole::Output]);
    assert_eq!(entry.clamp_bound_index(), None);

    // The typed host view: `Entry` implements the crate's `OptimizerEntry` and points at the
    // registered descriptors; `Buffers` and `Scalars` are the kernel's.
    type E = sgd_momentum::Entry;
    assert!(std::ptr::eq(<E as OptimizerEntry>::DESCRIPTOR, single));
    assert!(std::ptr::eq(<E as OptimizerEntry>::MULTI_DESCRIPTOR, multi));
    let scalars = sgd_momentum::Scalars {
        // SAFETY: never launched: only the argument list is compared.
        grad_scale: unsafe { UniformPtr::from_raw(64) },
        lr: 0.1,
        momentum: 0.9,
        weight_decay: 0.0,
        nesterov: 1,
    };
    assert_eq!(
        uniforms::<E>(&scalars),
        [
            ArgValue::Ptr(64),
            ArgValue::F32(0.1),
            ArgValue::F32(0.9),
            ArgValue::F32(0.0),
            ArgValue::U32(1),
        ]
    );
    let buffers = sgd_momentum::Buffers::<Same<i32>> { p: 1, g: 2, m: 3 };
    assert_eq!(
        same_buffers::<E, i32>(&buffers),
        [("p", &1), ("g", &2), ("m", &3)]
    );
    // Each buffer is handed out with its role.
    let mut roles = Vec::new();
    E::visit_buffers(&buffers, &mut |name, b| {
        roles.push((name, matches!(b, BufferRef::Param(_)), matches!(b, BufferRef::State(_))))
    });
    assert_eq!(roles, [("p", true, false), ("g", false, false), ("m", false, true)]);

    // `update` is the math as written, `element` the math and then the crate's clamp.
    let mut m = 0.0;
    assert_eq!(
        sgd_momentum::update(1.0, 2.0, &mut m, 1.0, 0.5, 0.0, 0.0, 0),
        0.0
    );
    assert_eq!(m, 2.0);
    let mut m = 0.0;
    assert_eq!(
        sgd_momentum::element(1.0, -20.0, &mut m, 1.0, 0.5, 0.0, 0.0, 0, 4.0),
        4.0
    );
    assert_eq!(m, -20.0);
    let mut m = 0.0;
    assert!(sgd_momentum::element(1.0, f32::NAN, &mut m, 1.0, 0.5, 0.0, 0.0, 0, 4.0).is_nan());

    // The groups' fields, in order, as the kernel's scalars.
    let names: Vec<&str> = grouped_sgd::DESCRIPTOR.params.iter().map(|p| p.name).collect();
    assert_eq!(names, ["p", "g", "len", "rate", "weight_decay", "records", "weight_clamp_max_abs"]);
    assert_eq!(grouped_sgd::element(1.0, 2.0, 0.5, 0.0, 4.0), 0.0);
}
