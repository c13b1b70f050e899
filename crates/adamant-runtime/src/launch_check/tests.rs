//! The checks every optimizer launch path runs ([`super`]), on a machine without a GPU: buffers
//! as `(address, len)` pairs, entries real and forged. Each error names the kernel and what was
//! wrong, and nothing gets as far as a launch. Unit tests:
//! the checks are the runtime's internals, not its API.
use adamant_device::abi::{
    ArgValue, BufferKinds, BufferRef, GeneratedEntry, KernelDescriptor, OptimizerEntry, ParamRole,
    Same,
};
use adamant_kernels::optimizers::{curiosity_adam_step, iql_adam_kernel, iqn_adam_kernel};

use super::{assemble, check_launch, check_tensors};
use crate::{adam_scalars, AdamHyper, ClampPolicy, Error};

const F: u64 = 4; // bytes per f32

/// Buffers as `(address, len)` pairs, every role alike.
type Pair = Same<(u64, usize)>;

fn iqn(
    p: (u64, usize),
    g: (u64, usize),
    m: (u64, usize),
    v: (u64, usize),
) -> iqn_adam_kernel::Buffers<Pair> {
    iqn_adam_kernel::Buffers { p, g, m, v }
}

fn hyper(step: u64) -> AdamHyper {
    AdamHyper {
        lr: 1e-3,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-8,
        weight_decay: 0.01,
        step,
    }
}

fn scalars() -> iqn_adam_kernel::Scalars {
    adam_scalars!(iqn_adam_kernel, hyper(3), weight_decay: 0.01).unwrap()
}

#[test]
fn overlapping_buffers_of_one_tensor_are_refused_and_named() {
    // m starts inside p: half of p would be written with moment values.
    let t = iqn(
        (0x1000, 100),
        (0x9000, 100),
        (0x1000 + 50 * F, 100),
        (0x20000, 100),
    );
    match check_tensors::<iqn_adam_kernel::Entry, _>(&[t]) {
        Err(Error::Overlap {
            kernel,
            first,
            second,
        }) => {
            assert_eq!(kernel, "iqn_adam_kernel");
            assert!(
                first.contains("`p`") && second.contains("`m`"),
                "{first} / {second}"
            );
            assert!(second.contains("100 elements"), "{second}");
        }
        other => panic!("expected Overlap, got {other:?}"),
    }
    // The same buffer twice.
    let t = iqn((0x1000, 100), (0x9000, 100), (0x20000, 100), (0x1000, 100));
    assert!(matches!(
        check_tensors::<iqn_adam_kernel::Entry, _>(&[t]),
        Err(Error::Overlap { .. })
    ));
    // A written buffer overlapping the read-only gradient is refused too.
    let t = iqn(
        (0x1000, 100),
        (0x1000 + 99 * F, 100),
        (0x20000, 100),
        (0x30000, 100),
    );
    let err = check_tensors::<iqn_adam_kernel::Entry, _>(&[t]).unwrap_err();
    assert!(err.to_string().contains("`g`"), "{err}");
}

#[test]
fn adjacent_and_empty_buffers_do_not_overlap() {
    let t = iqn(
        (0x1000, 100),
        (0x1000 + 100 * F, 100),
        (0x1000 + 200 * F, 100),
        (0x1000 + 300 * F, 100),
    );
    let sig = check_tensors::<iqn_adam_kernel::Entry, _>(&[t]).unwrap();
    assert_eq!(sig[0].len(), 4);
    let t = iqn((0x1000, 0), (0x1000, 0), (0x1000, 0), (0x1000, 0));
    check_tensors::<iqn_adam_kernel::Entry, _>(&[t]).unwrap();
}

#[test]
fn overlapping_parameter_buffers_across_tensors_are_refused() {
    let base = |t: u64| 0x100000 * (t + 1);
    let tensor = |t: u64, p: u64| {
        iqn(
            (p, 64),
            (base(t) + 0x1000, 64),
            (base(t) + 0x2000, 64),
            (base(t) + 0x3000, 64),
        )
    };
    // Tensor 2's parameters start inside tensor 0's.
    let set = [
        tensor(0, 0x10),
        tensor(1, 0x900000),
        tensor(2, 0x10 + 32 * F),
    ];
    match check_tensors::<iqn_adam_kernel::Entry, _>(&set) {
        Err(Error::Overlap { first, second, .. }) => {
            assert!(first.contains("tensor 0 `p`"), "{first}");
            assert!(second.contains("tensor 2 `p`"), "{second}");
        }
        other => panic!("expected Overlap, got {other:?}"),
    }
    // Read-only gradients shared between tensors are fine (nothing writes them).
    let shared_g = |t: u64| {
        iqn(
            (base(t), 64),
            (0x900000, 64),
            (base(t) + 0x2000, 64),
            (base(t) + 0x3000, 64),
        )
    };
    check_tensors::<iqn_adam_kernel::Entry, _>(&[shared_g(0), shared_g(1)]).unwrap();
}

#[test]
fn a_length_error_in_a_set_names_the_tensor() {
    let ok = iqn((0x1000, 8), (0x2000, 8), (0x3000, 8), (0x4000, 8));
    let short = iqn((0x5000, 8), (0x6000, 8), (0x7000, 7), (0x8000, 8));
    match check_tensors::<iqn_adam_kernel::Entry, _>(&[ok, short]) {
        Err(Error::InTensor { tensor: 1, source }) => {
            assert!(matches!(
                *source,
                Error::LengthMismatch {
                    buffer: "m",
                    found: 7,
                    ..
                }
            ))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn length_mismatch_names_kernel_buffer_and_sizes() {
    let at = |i: u64, len: usize| (0x10_0000 * (i + 1), len);
    let buffers = iqn(at(0, 10), at(1, 10), at(2, 10), at(3, 9));
    match check_tensors::<iqn_adam_kernel::Entry, Pair>(&[buffers]) {
        Err(Error::LengthMismatch {
            kernel,
            buffer,
            found,
            reference,
            expected,
        }) => {
            assert_eq!(
                (kernel, buffer, found, reference, expected),
                ("iqn_adam_kernel", "v", 9, "p", 10)
            );
        }
        other => panic!("expected LengthMismatch, got {other:?}"),
    }
    let ok = curiosity_adam_step::Buffers::<Pair> {
        p: at(0, 7),
        g: at(1, 7),
        m: at(2, 7),
        v: at(3, 7),
        v_max: at(4, 7),
    };
    let signature =
        check_tensors::<curiosity_adam_step::Entry, Pair>(std::slice::from_ref(&ok)).unwrap();
    assert!(signature[0].iter().all(|b| b.len == 7));
    let short_v_max = curiosity_adam_step::Buffers::<Pair> {
        v_max: at(4, 6),
        ..ok
    };
    let err = check_tensors::<curiosity_adam_step::Entry, Pair>(&[short_v_max]).unwrap_err();
    assert!(
        err.to_string().contains("curiosity_adam_step") && err.to_string().contains("v_max"),
        "{err}"
    );
}

#[test]
fn hyperparameters_are_checked_on_every_path() {
    // adam_scalars! refuses step 0 (a bias correction of 0: NaN weights).
    let err = adam_scalars!(iqn_adam_kernel, hyper(0), weight_decay: 0.0).unwrap_err();
    assert!(
        matches!(err, Error::InvalidHyper { field: "step", .. }),
        "{err}"
    );
    // Scalars built by hand go through the same domain checks at launch.
    let policy = ClampPolicy::from_isv(1.0);
    let desc = <iqn_adam_kernel::Entry as OptimizerEntry>::DESCRIPTOR;
    for (field, value) in [
        ("bias_correction1", 0.0f32),
        ("bias_correction2", -0.5),
        ("lr", f32::NAN),
        ("lr", -1e-3),
        ("beta1", 1.0),
        ("eps", 0.0),
        ("weight_decay", f32::INFINITY),
    ] {
        let mut s = scalars();
        match field {
            "bias_correction1" => s.bias_correction1 = value,
            "bias_correction2" => s.bias_correction2 = value,
            "lr" => s.lr = value,
            "beta1" => s.beta1 = value,
            "eps" => s.eps = value,
            _ => s.weight_decay = value,
        }
        match check_launch::<iqn_adam_kernel::Entry>(desc, &s, policy) {
            Err(Error::InvalidScalar { kernel, name, .. }) => {
                assert_eq!((kernel, name), ("iqn_adam_kernel", field))
            }
            other => panic!("{field} = {value}: expected InvalidScalar, got {other:?}"),
        }
    }
    check_launch::<iqn_adam_kernel::Entry>(desc, &scalars(), policy).unwrap();
    // The multi-tensor entry runs the very same checks.
    let multi = <iql_adam_kernel::Entry as OptimizerEntry>::MULTI_DESCRIPTOR;
    let mut s =
        adam_scalars!(iql_adam_kernel, hyper(1), weight_decay: 0.0, grad_clip: 1.0).unwrap();
    s.grad_clip = -1.0;
    assert!(matches!(
        check_launch::<iql_adam_kernel::Entry>(multi, &s, policy),
        Err(Error::InvalidScalar {
            name: "grad_clip",
            ..
        })
    ));
}

#[test]
fn the_device_gets_the_validated_bound_last() {
    let desc = <iqn_adam_kernel::Entry as OptimizerEntry>::DESCRIPTOR;
    let pointer = |name: &str| Some(name.len() as u64 * 0x1000);
    for (policy, bound) in [
        (ClampPolicy::from_isv(3.0), 300.0f32),
        (ClampPolicy::Fixed { bound: 1.0 }, 1.0),
        (ClampPolicy::disabled("test"), 0.0),
    ] {
        let checked = check_launch::<iqn_adam_kernel::Entry>(desc, &scalars(), policy).unwrap();
        let args = assemble(desc, pointer, 10, None, 0xEC0, &checked).unwrap();
        assert_eq!(args.len(), desc.params.len());
        assert_eq!(args.last(), Some(&ArgValue::F32(bound)));
        // The records header right before it, always.
        assert_eq!(args[args.len() - 2], ArgValue::Ptr(0xEC0));
        assert_eq!(args[4], ArgValue::Usize(10));
    }
    for bad in [
        ClampPolicy::Fixed { bound: f32::NAN },
        ClampPolicy::Fixed { bound: -1.0 },
        ClampPolicy::from_isv(f32::INFINITY),
        ClampPolicy::disabled(" "),
    ] {
        assert!(check_launch::<iqn_adam_kernel::Entry>(desc, &scalars(), bad).is_err());
    }
}

/// A hand-written impl of the sealed trait (it takes `unsafe impl`): whatever it claims, the
/// device can only get the registered descriptor's layout and checked values.
struct Forged;
// SAFETY: deliberately violated, to show the runtime does not rely on it.
unsafe impl GeneratedEntry for Forged {}

static FORGED_DESCRIPTOR: std::sync::OnceLock<KernelDescriptor> = std::sync::OnceLock::new();

fn forged_descriptor() -> &'static KernelDescriptor {
    FORGED_DESCRIPTOR.get_or_init(|| {
        let real = <iqn_adam_kernel::Entry as OptimizerEntry>::DESCRIPTOR;
        let mut params = real.params.to_vec();
        // Claims the bound is a plain scalar, so a NaN could ride in as a "uniform".
        params.last_mut().unwrap().role = ParamRole::Scalar {
            domain: adamant_device::abi::Domain::ANY,
        };
        KernelDescriptor {
            params: Box::leak(params.into_boxed_slice()),
            ..*real
        }
    })
}

thread_local! {
    static FORGED_VALUES: std::cell::RefCell<Vec<ArgValue>> = const { std::cell::RefCell::new(Vec::new()) };
    static FORGE_ROLES: std::cell::RefCell<bool> = const { std::cell::RefCell::new(false) };
}

impl OptimizerEntry for Forged {
    const DESCRIPTOR: &'static KernelDescriptor =
        <iqn_adam_kernel::Entry as OptimizerEntry>::DESCRIPTOR;
    const MULTI_DESCRIPTOR: &'static KernelDescriptor =
        <iqn_adam_kernel::Entry as OptimizerEntry>::MULTI_DESCRIPTOR;
    const STEPPED_DESCRIPTOR: &'static KernelDescriptor =
        <iqn_adam_kernel::Entry as OptimizerEntry>::STEPPED_DESCRIPTOR;
    const MULTI_STEPPED_DESCRIPTOR: &'static KernelDescriptor =
        <iqn_adam_kernel::Entry as OptimizerEntry>::MULTI_STEPPED_DESCRIPTOR;
    type Buffers<K: BufferKinds> = iqn_adam_kernel::Buffers<K>;
    type Scalars = ();
    type StepScalars = ();
    type Hyper = ();
    const SCHEDULE: Option<&'static KernelDescriptor> = None;
    fn visit_buffers<'b, K: BufferKinds>(
        b: &'b Self::Buffers<K>,
        f: &mut dyn FnMut(&'static str, BufferRef<'b, K>),
    ) {
        // Forged: the parameter buffer handed out as a state, as a hand-written (unsafe) impl
        // could, so that a state-typed buffer would reach the `#[param]` slot.
        if FORGE_ROLES.with(|r| *r.borrow()) {
            f("p", BufferRef::State(&b.m));
            f("g", BufferRef::Input(&b.g));
            f("m", BufferRef::State(&b.m));
            f("v", BufferRef::State(&b.v));
            return;
        }
        <iqn_adam_kernel::Entry as OptimizerEntry>::visit_buffers(b, f)
    }
    fn scalar_values(_: &()) -> Vec<ArgValue> {
        FORGED_VALUES.with(|v| v.borrow().clone())
    }
    fn step_scalar_values(_: &()) -> Vec<ArgValue> {
        FORGED_VALUES.with(|v| v.borrow().clone())
    }
    fn hyper_values(_: &()) -> Vec<ArgValue> {
        FORGED_VALUES.with(|v| v.borrow().clone())
    }
    fn derived_values(_: u32, _: &()) -> Vec<ArgValue> {
        Vec::new()
    }
}

#[test]
fn a_forged_entry_cannot_change_what_the_device_receives() {
    let policy = ClampPolicy::from_isv(1.0);
    let real_values = <iqn_adam_kernel::Entry as OptimizerEntry>::scalar_values(&scalars());
    // Its own descriptor under a registered name: refused.
    assert!(matches!(
        check_launch::<Forged>(forged_descriptor(), &(), policy),
        Err(Error::UnregisteredKernel {
            kernel: "iqn_adam_kernel"
        })
    ));
    // One value too many (a NaN "bound" appended): refused.
    let mut extra = real_values.clone();
    extra.push(ArgValue::F32(f32::NAN));
    FORGED_VALUES.with(|v| *v.borrow_mut() = extra);
    assert!(matches!(
        check_launch::<Forged>(Forged::DESCRIPTOR, &(), policy),
        Err(Error::ScalarCount {
            expected: 7,
            found: 8,
            ..
        })
    ));
    // A value of the wrong type: refused.
    let mut typed = real_values.clone();
    typed[0] = ArgValue::U32(1);
    FORGED_VALUES.with(|v| *v.borrow_mut() = typed);
    assert!(matches!(
        check_launch::<Forged>(Forged::DESCRIPTOR, &(), policy),
        Err(Error::ScalarType { name: "lr", .. })
    ));
    // The right values: the bound is still the policy's, placed by the runtime.
    FORGED_VALUES.with(|v| *v.borrow_mut() = real_values.clone());
    let checked = check_launch::<Forged>(Forged::DESCRIPTOR, &(), policy).unwrap();
    let args = assemble(
        Forged::DESCRIPTOR,
        |_| Some(0x1000),
        4,
        None,
        0xEC0,
        &checked,
    )
    .unwrap();
    assert_eq!(args.last(), Some(&ArgValue::F32(100.0)));
}

#[test]
fn a_buffer_typed_for_another_role_than_its_slot_is_refused() {
    // A hand-written entry that hands a state-typed buffer to the `#[param]` slot: the checks
    // compare every buffer's typed role with the registered descriptor's and refuse it.
    let at = |i: u64| (0x10_0000 * (i + 1), 8usize);
    FORGE_ROLES.with(|r| *r.borrow_mut() = true);
    let refused = check_tensors::<Forged, Pair>(&[iqn(at(0), at(1), at(2), at(3))]);
    FORGE_ROLES.with(|r| *r.borrow_mut() = false);
    assert!(
        matches!(
            refused,
            Err(Error::UnregisteredKernel {
                kernel: "iqn_adam_kernel"
            })
        ),
        "{refused:?}"
    );
    // The generated impl's roles are the descriptor's.
    assert!(check_tensors::<Forged, Pair>(&[iqn(at(0), at(1), at(2), at(3))]).is_ok());
}

/// Every entry adamant has assembles its arguments on the stack ([`super::Args`]'s inline
/// capacity), and a single-buffer launch's buffers fit its views: the eager launch path
/// allocates nothing for them. A new entry with more parameters would still launch (the list
/// moves to the heap), but this says the capacity should grow with it.
#[test]
fn every_entry_fits_the_inline_argument_list() {
    let inline = super::Args::new().inline_size();
    for k in adamant_device::abi::kernels() {
        assert!(
            k.params.len() <= inline,
            "{}: {} parameters",
            k.name,
            k.params.len()
        );
        assert!(
            k.buffer_count() <= adamant_device::diagnostics::MAX_BUFFERS,
            "{}",
            k.name
        );
    }
}

mod storage {
    //! Buffers of a kernel that declares 16-bit storage (`adamw_bf16`: `#[param(bf16)]`,
    //! `#[grad(bf16)]`, f32 moments), as raw regions: the storage type is checked against the
    //! declaration, and extents are counted in the declared element size.
    use adamant_device::abi::Storage;
    use adamant_kernels::half_weights::adamw_bf16;

    use super::super::check_tensors;
    use crate::{DeviceRegion, Error, Raw};

    fn region(ptr: u64, len: usize, storage: Storage) -> DeviceRegion {
        DeviceRegion::of(ptr, len, storage).unwrap()
    }

    fn buffers(p: DeviceRegion, g: DeviceRegion) -> adamw_bf16::Buffers<Raw> {
        adamw_bf16::Buffers {
            p,
            g,
            m: region(0x10_0000, 100, Storage::F32),
            v: region(0x20_0000, 100, Storage::F32),
        }
    }

    #[test]
    fn an_f32_buffer_for_a_bf16_parameter_is_refused_and_named() {
        let t = buffers(
            region(0x1000, 100, Storage::F32),
            region(0x9000, 100, Storage::Bf16),
        );
        match check_tensors::<adamw_bf16::Entry, _>(&[t]) {
            Err(Error::StorageMismatch {
                kernel,
                buffer,
                declared,
                given,
            }) => {
                assert_eq!((kernel, buffer), ("adamw_bf16", "p"));
                assert_eq!((declared, given), (Storage::Bf16, Storage::F32));
            }
            other => panic!("expected StorageMismatch, got {other:?}"),
        }
        // The gradient too, and the message says both types.
        let t = buffers(
            region(0x1000, 100, Storage::Bf16),
            region(0x9000, 100, Storage::F16),
        );
        let e = check_tensors::<adamw_bf16::Entry, _>(&[t]).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("`g`") && text.contains("f16") && text.contains("bf16"),
            "{text}"
        );
    }

    #[test]
    fn a_fused_tensor_checks_storage_as_a_launch_does() {
        // The fused path builds its ranges through the same check: f32 memory for a bf16
        // parameter is refused there too, before any set is built.
        let t = buffers(
            region(0x1000, 100, Storage::F32),
            region(0x9000, 100, Storage::Bf16),
        );
        let scalars = adamw_bf16::StepScalars {};
        match crate::fused::FusedTensor::from_views::<adamw_bf16::Entry, Raw>(&t, &scalars, 0) {
            Err(Error::StorageMismatch { buffer: "p", .. }) => {}
            Err(other) => panic!("expected StorageMismatch, got {other:?}"),
            Ok(_) => panic!("expected StorageMismatch, got a tensor"),
        }
    }

    #[test]
    fn extents_are_counted_in_the_declared_element_size() {
        // 100 bf16 weights end 200 bytes in: a gradient right after them does not overlap (it
        // would at 4 bytes an element).
        let t = buffers(
            region(0x1000, 100, Storage::Bf16),
            region(0x1000 + 200, 100, Storage::Bf16),
        );
        check_tensors::<adamw_bf16::Entry, _>(&[t]).unwrap();
        // One element earlier, it does.
        let t = buffers(
            region(0x1000, 100, Storage::Bf16),
            region(0x1000 + 198, 100, Storage::Bf16),
        );
        assert!(matches!(
            check_tensors::<adamw_bf16::Entry, _>(&[t]),
            Err(Error::Overlap { .. })
        ));
    }

    /// A kernel whose parameter has a companion buffer (`#[param(bf16, remainder)]`,
    /// `#[param(bf16, master)]`): the companion is checked like every buffer, by its own
    /// declared storage, length and extent.
    #[test]
    fn a_companion_is_checked_like_every_buffer() {
        use adamant_kernels::half_weights::{adamw_bf16_master, adamw_bf16_remainder};
        let remainder = |r: DeviceRegion| adamw_bf16_remainder::Buffers::<Raw> {
            p: region(0x1000, 100, Storage::Bf16),
            g: region(0x9000, 100, Storage::Bf16),
            m: region(0x10_0000, 100, Storage::F32),
            v: region(0x20_0000, 100, Storage::F32),
            p_remainder: r,
        };
        check_tensors::<adamw_bf16_remainder::Entry, _>(&[remainder(region(
            0x30_0000,
            100,
            Storage::Bf16Remainder,
        ))])
        .unwrap();
        // Bf16 memory for the remainder: refused and named (a remainder is no bf16 value).
        match check_tensors::<adamw_bf16_remainder::Entry, _>(&[remainder(region(
            0x30_0000,
            100,
            Storage::Bf16,
        ))]) {
            Err(Error::StorageMismatch {
                buffer, declared, ..
            }) => assert_eq!((buffer, declared), ("p_remainder", Storage::Bf16Remainder)),
            other => panic!("expected StorageMismatch, got {other:?}"),
        }
        // One element short.
        assert!(matches!(
            check_tensors::<adamw_bf16_remainder::Entry, _>(&[remainder(region(
                0x30_0000,
                99,
                Storage::Bf16Remainder
            ))]),
            Err(Error::LengthMismatch {
                buffer: "p_remainder",
                ..
            })
        ));
        // Over the weights' last element (100 bf16 end 200 bytes in).
        assert!(matches!(
            check_tensors::<adamw_bf16_remainder::Entry, _>(&[remainder(region(
                0x1000 + 198,
                100,
                Storage::Bf16Remainder
            ))]),
            Err(Error::Overlap { .. })
        ));
        // The f32 master, given as bf16.
        let master = adamw_bf16_master::Buffers::<Raw> {
            p: region(0x1000, 100, Storage::Bf16),
            g: region(0x9000, 100, Storage::Bf16),
            m: region(0x10_0000, 100, Storage::F32),
            v: region(0x20_0000, 100, Storage::F32),
            p_master: region(0x30_0000, 100, Storage::Bf16),
        };
        assert!(matches!(
            check_tensors::<adamw_bf16_master::Entry, _>(&[master]),
            Err(Error::StorageMismatch {
                buffer: "p_master",
                ..
            })
        ));
    }

    #[test]
    fn a_region_is_aligned_to_its_element() {
        assert!(DeviceRegion::of(0x1002, 4, Storage::Bf16).is_ok());
        match DeviceRegion::of(0x1001, 4, Storage::Bf16) {
            Err(Error::ForeignRegion { reason, .. }) => {
                assert!(reason.contains("2-byte"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        assert!(DeviceRegion::new(0x1002, 4).is_err(), "f32 needs 4 bytes");
    }
}

/// A prepared launch passes the same values at every enqueue: a plain launch of a kernel with
/// per-step scalars (Adam's bias corrections) is refused, naming the kernel and the scalar, as
/// its capture is; one of `#[hyper]` scalars alone (the soft update's `tau`) is not.
#[test]
fn a_plain_launch_with_per_step_scalars_cannot_be_prepared() {
    use super::Uniforms;
    use adamant_kernels::soft_update::soft_update_kernel;
    let s = scalars();
    let adam: Uniforms<'_, iqn_adam_kernel::Entry> = Uniforms::Plain {
        scalars: &s,
        policy: ClampPolicy::from_isv(1.0),
    };
    match adam.refuse_prepared("iqn_adam_kernel") {
        Err(e @ Error::FrozenScalar { .. }) => {
            let Error::FrozenScalar { kernel, scalar, .. } = &e else {
                unreachable!()
            };
            assert_eq!(*kernel, "iqn_adam_kernel");
            let text = e.to_string();
            assert!(text.contains(scalar) && text.contains("stepped"), "{text}");
        }
        other => panic!("expected FrozenScalar, got {other:?}"),
    }
    // The same kernel's capture is refused for the same scalar; eagerly it is not.
    assert!(adam.refuse_frozen(true, "iqn_adam_kernel").is_err());
    assert!(adam.refuse_frozen(false, "iqn_adam_kernel").is_ok());
    let tau = soft_update_kernel::Scalars { tau: 0.5 };
    let soft: Uniforms<'_, soft_update_kernel::Entry> = Uniforms::Plain {
        scalars: &tau,
        policy: ClampPolicy::from_isv(1.0),
    };
    assert!(soft.refuse_prepared("soft_update_kernel").is_ok());
    assert!(soft.refuse_frozen(true, "soft_update_kernel").is_ok());
}
