//! The five optimizer kernels on the GPU against the independent f64 reference
//! (`adamant::reference`), plus every bad input the runtime must refuse before launching.
//!
//! Every test needs a CUDA GPU and is `#[ignore]`d with that reason, so a machine without one
//! shows them as not run. Run them with `scripts/gpu-build.sh` then `gpu-bundle/gpu-run.sh`.
#[path = "../support/mod.rs"]
mod support;

use adamant::reference::{self as r, KernelRef, RefState};
use adamant::rl::SeedLaunchers;
use adamant::runtime::{
    adam_scalars, AdamHyper, Adamant, ClampPolicy, DeviceArray, DeviceScalar, Error, GroupBuffer,
    LaunchInfo, ParamBuffer, ParamGroup, Records,
};
use adamant_kernels::optimizers::iqn_adam_kernel;
use cust::memory::{CopyDestination, DeviceBuffer};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Under compute-sanitizer the largest size is skipped (it instruments every access).
fn sizes() -> Vec<usize> {
    let mut sizes = vec![1, 255, 257, 1003, 4096 + 2];
    if std::env::var("ADAMANT_SANITIZER_RUN").is_err() {
        sizes.push(1 << 26);
    }
    sizes
}

use support::runtime;

/// Random optimizer state: p ~ ±2, g ~ ±1 (some tiny, some large), m ~ ±0.1, v ≥ 0.
struct HostState {
    p: Vec<f32>,
    g: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
    v_max: Vec<f32>,
}

fn random_state(rng: &mut SmallRng, n: usize) -> HostState {
    let mut gen = |f: &mut dyn FnMut(&mut SmallRng) -> f32| (0..n).map(|_| f(rng)).collect();
    HostState {
        p: gen(&mut |r| r.gen_range(-2.0..2.0)),
        g: gen(&mut |r| {
            let scale = [1e-6f32, 1e-2, 1.0, 50.0][r.gen_range(0..4)];
            r.gen_range(-1.0..1.0) * scale
        }),
        m: gen(&mut |r| r.gen_range(-0.1..0.1)),
        v: gen(&mut |r| r.gen_range(0.0..0.05)),
        v_max: gen(&mut |r| r.gen_range(0.0..0.06)),
    }
}

fn upload(kernel: KernelRef, name: &str, s: &HostState) -> ParamGroup {
    let mut group = if kernel.amsgrad() {
        ParamGroup::new_amsgrad(name, &s.p).unwrap()
    } else {
        ParamGroup::new(name, &s.p).unwrap()
    };
    group.upload(GroupBuffer::Grads, &s.g).unwrap();
    group.upload(GroupBuffer::M, &s.m).unwrap();
    group.upload(GroupBuffer::V, &s.v).unwrap();
    if kernel.amsgrad() {
        group.upload(GroupBuffer::VMax, &s.v_max).unwrap();
    }
    group
}

fn download(group: &ParamGroup) -> HostState {
    let get = |b| group.download(b).unwrap();
    HostState {
        p: get(GroupBuffer::Params),
        g: get(GroupBuffer::Grads),
        m: get(GroupBuffer::M),
        v: get(GroupBuffer::V),
        v_max: if group.has_amsgrad() {
            get(GroupBuffer::VMax)
        } else {
            vec![]
        },
    }
}

/// The hyperparameters each kernel is tested with (decay where the rule has one).
fn hyper_for(kernel: KernelRef, step: u64) -> AdamHyper {
    let wd = if kernel == KernelRef::Curiosity {
        0.0
    } else {
        0.01
    };
    AdamHyper::new(3e-3, 0.9, 0.999, 1e-8, wd, step).unwrap()
}

fn reference_hyper(kernel: KernelRef, h: &AdamHyper, grad_scale: f32, grad_clip: f32) -> r::Hyper {
    let hp = r::Hyper::new(h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, h.step);
    match kernel {
        KernelRef::Dqn => hp.with_grad_scale(grad_scale),
        KernelRef::Iql => hp.with_grad_clip(grad_clip),
        _ => hp,
    }
}

/// One step through the kernel's typed launcher.
fn launch(
    rt: &Adamant,
    kernel: KernelRef,
    group: &mut ParamGroup,
    hyper: &AdamHyper,
    grad_scale: Option<&DeviceScalar>,
    grad_clip: f32,
    policy: ClampPolicy,
) -> Result<LaunchInfo, Error> {
    match kernel {
        KernelRef::Dqn => rt.dqn_adam_update(rt.stream(), group, hyper, grad_scale, policy),
        KernelRef::Iqn => rt.iqn_adam(rt.stream(), group, hyper, policy),
        KernelRef::Iql => rt.iql_adam(rt.stream(), group, hyper, grad_clip, policy),
        KernelRef::Attn => rt.attn_adam(rt.stream(), group, hyper, policy),
        KernelRef::Curiosity => rt.curiosity_adam(rt.stream(), group, hyper, policy),
    }
}

/// Runs `steps` steps on the GPU and checks each against the reference started from the
/// device's own state (lockstep). Returns the worst error in units of f32::EPSILON × scale.
#[allow(clippy::too_many_arguments)]
fn check_steps(
    rt: &Adamant,
    kernel: KernelRef,
    state: HostState,
    steps: u64,
    policy: ClampPolicy,
    grad_scale: Option<f32>,
    grad_clip: f32,
    rng: &mut SmallRng,
) -> f64 {
    let n = state.p.len();
    let mut group = upload(kernel, kernel.name(), &state);
    let scale_box = grad_scale.map(|s| DeviceScalar::new(s).unwrap());
    let bound = policy.bound().unwrap();
    let mut worst: f64 = 0.0;
    for step in 1..=steps {
        let before = download(&group);
        let v_max = kernel.amsgrad().then_some(&before.v_max[..]);
        let mut reference = RefState::from_f32(&before.p, &before.m, &before.v, v_max);
        let hyper = hyper_for(kernel, step);
        let hp = reference_hyper(kernel, &hyper, grad_scale.unwrap_or(1.0), grad_clip);
        r::step_slices(kernel, &mut reference, &before.g, &hp, bound);

        let info = launch(
            rt,
            kernel,
            &mut group,
            &hyper,
            scale_box.as_ref(),
            grad_clip,
            policy,
        )
        .unwrap();
        assert_eq!(info.bound, bound);
        rt.synchronize().unwrap();
        let after = download(&group);
        let v_max = kernel.amsgrad().then_some(&after.v_max[..]);
        let errors = reference.max_errors(&after.p, &after.m, &after.v, v_max);
        assert!(
            errors.passes(),
            "{} n={n} step {step}: {errors:?} (tolerance {})",
            kernel.name(),
            r::TOLERANCE
        );
        worst = worst.max(errors.worst());
        // A fresh gradient for the next step, same distribution.
        let next = random_state(rng, n);
        group.upload(GroupBuffer::Grads, &next.g).unwrap();
    }
    worst
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn every_kernel_matches_reference_at_every_size() {
    let rt = runtime();
    let mut rng = SmallRng::seed_from_u64(0xADA);
    for kernel in KernelRef::ALL {
        let mut worst: f64 = 0.0;
        for n in sizes() {
            let steps = if n > 1 << 20 { 1 } else { 4 };
            let state = random_state(&mut rng, n);
            let policy = ClampPolicy::from_isv(0.02); // bound 100: no clamping on this data
            let e = check_steps(&rt, kernel, state, steps, policy, Some(0.75), 0.5, &mut rng);
            worst = worst.max(e);
        }
        // Machine-readable line the GPU script collects into docs/gpu-verification.md.
        println!(
            "max_error kernel={} worst_eps_scale_units={worst:.3} pass_limit={}",
            kernel.name(),
            r::TOLERANCE
        );
    }
}

/// Clamp cases: values that the step pushes past the bound, exactly at it, ±inf and NaN.
fn clamp_state(n: usize, bound: f32, rng: &mut SmallRng) -> HostState {
    let mut s = random_state(rng, n);
    let specials = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        bound,
        -bound,
        bound * 1.5,
        -bound * 3.0,
        bound * 0.999_999,
        f32::MAX,
        -0.0,
    ];
    for (i, p) in s.p.iter_mut().enumerate() {
        if i % 3 == 0 {
            *p = specials[(i / 3) % specials.len()];
        }
    }
    s
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn clamp_cases_on_the_gpu() {
    let rt = runtime();
    let mut rng = SmallRng::seed_from_u64(7);
    let policies = [
        ClampPolicy::Fixed { bound: 0.75 },
        ClampPolicy::from_isv(3.5), // bound 350
        ClampPolicy::disabled("testing the disabled path"),
    ];
    for kernel in KernelRef::ALL {
        for policy in policies {
            let bound = policy.bound().unwrap();
            let state = clamp_state(1031, if bound > 0.0 { bound } else { 2.0 }, &mut rng);
            check_steps(&rt, kernel, state, 3, policy, None, 0.0, &mut rng);
        }
        // Direct checks of the semantics on one launch (besides the reference comparison).
        let bound = 0.75;
        let mut s = clamp_state(64, bound, &mut rng);
        s.g.iter_mut().for_each(|g| *g = 0.0);
        s.m.iter_mut().for_each(|m| *m = 0.0);
        let before = s.p.clone();
        let mut group = upload(kernel, "clamp", &s);
        let hyper = AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.0, 1).unwrap();
        launch(
            &rt,
            kernel,
            &mut group,
            &hyper,
            None,
            0.0,
            ClampPolicy::Fixed { bound },
        )
        .unwrap();
        let after = group.download(GroupBuffer::Params).unwrap();
        for (b, a) in before.iter().zip(&after) {
            if b.is_nan() {
                assert!(a.is_nan(), "{}: NaN weight became {a}", kernel.name());
            } else if b.abs() > bound {
                assert_eq!(*a, bound.copysign(*b), "{}: {b} not clamped", kernel.name());
            } else {
                assert!(a.abs() <= bound, "{}: {b} -> {a}", kernel.name());
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn dqn_grad_scale_pointer_and_null() {
    let rt = runtime();
    let mut rng = SmallRng::seed_from_u64(11);
    for scale in [None, Some(1.0), Some(0.25)] {
        let state = random_state(&mut rng, 5000);
        let policy = ClampPolicy::from_isv(0.5);
        check_steps(&rt, KernelRef::Dqn, state, 2, policy, scale, 0.0, &mut rng);
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn iql_gradient_clip_on_and_off() {
    let rt = runtime();
    let mut rng = SmallRng::seed_from_u64(12);
    for clip in [0.0, 0.01, 1.0] {
        let state = random_state(&mut rng, 5000);
        let policy = ClampPolicy::from_isv(0.5);
        check_steps(&rt, KernelRef::Iql, state, 2, policy, None, clip, &mut rng);
    }
}

/// Buffers that are not 16-byte aligned take the scalar path; the result must be the same.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn unaligned_buffers_take_the_scalar_path() {
    // The runtime's own buffers start at an allocation (256-byte aligned); memory of other code
    // need not: a region one element into a cust allocation, through the raw launch.
    let rt = runtime();
    let mut rng = SmallRng::seed_from_u64(13);
    let n = 4099;
    let s = random_state(&mut rng, n + 1);
    let up = |x: &[f32]| DeviceBuffer::from_slice(x).unwrap();
    let (p, g, m, v) = (up(&s.p), up(&s.g), up(&s.m), up(&s.v));
    let records = Records::single::<iqn_adam_kernel::Entry>().unwrap();
    // Offset by one element: 4-byte aligned only.
    let one_in = |b: &DeviceBuffer<f32>| {
        adamant::runtime::DeviceRegion::new(b.as_device_ptr().as_raw() + 4, n).unwrap()
    };
    let hyper = hyper_for(KernelRef::Iqn, 1);
    let scalars = adam_scalars!(iqn_adam_kernel, hyper, weight_decay: hyper.weight_decay).unwrap();
    let buffers = iqn_adam_kernel::Buffers {
        p: one_in(&p),
        g: one_in(&g),
        m: one_in(&m),
        v: one_in(&v),
    };
    let policy = ClampPolicy::from_isv(1.0);
    // SAFETY: the four cust buffers outlive the launch (synchronised below).
    unsafe {
        rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
            .plain(&scalars, policy)
            .raw_buffers(&buffers, &records)
    }
    .unwrap();
    rt.synchronize().unwrap();
    let mut reference = RefState::from_f32(&s.p[1..], &s.m[1..], &s.v[1..], None);
    let hp = reference_hyper(KernelRef::Iqn, &hyper, 1.0, 0.0);
    r::step_slices(KernelRef::Iqn, &mut reference, &s.g[1..], &hp, 100.0);
    let host = |b: &DeviceBuffer<f32>| {
        let mut out = vec![0.0f32; n + 1];
        b.copy_to(&mut out[..]).unwrap();
        out
    };
    let (hp_, hm, hv) = (host(&p), host(&m), host(&v));
    assert_eq!(
        hp_[0].to_bits(),
        s.p[0].to_bits(),
        "element before the slice was written"
    );
    reference.assert_close(&hp_[1..], &hm[1..], &hv[1..], None);
}

/// `err` is `attn_adam_kernel`'s launch error, naming it, around a cause that `cause` accepts.
fn in_attn(err: &Error, cause: impl Fn(&Error) -> bool) -> bool {
    matches!(err, Error::InKernel { kernel: "attn_adam_kernel", source } if cause(source))
}

/// Every refused input: a typed error, nothing launched, no buffer changed.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn bad_inputs_are_refused_before_launch() {
    let rt = runtime();
    let mut rng = SmallRng::seed_from_u64(14);
    let s = random_state(&mut rng, 1000);
    let mut group = upload(KernelRef::Attn, "attention", &s);
    let hyper = hyper_for(KernelRef::Attn, 1);
    let unchanged = |group: &ParamGroup, what: &str| {
        let now = download(group);
        for (name, a, b) in [
            ("p", &now.p, &s.p),
            ("g", &now.g, &s.g),
            ("m", &now.m, &s.m),
            ("v", &now.v, &s.v),
        ] {
            assert!(
                a.iter()
                    .zip(b.iter())
                    .all(|(x, y)| x.to_bits() == y.to_bits()),
                "{what}: buffer {name} changed"
            );
        }
    };
    // f32::MAX and 3e36 give bounds past the ceiling (1e18), which could never bite.
    for q in [-1.0f32, f32::NAN, f32::INFINITY, f32::MAX, 3e36] {
        let err = rt
            .attn_adam(rt.stream(), &mut group, &hyper, ClampPolicy::from_isv(q))
            .unwrap_err();
        // The policy's error, naming the kernel whose launch it stopped.
        assert!(
            in_attn(&err, |e| matches!(e, Error::InvalidClamp { .. })),
            "Q_ABS_REF {q}: {err}"
        );
        assert!(err.to_string().starts_with("attn_adam_kernel: "), "{err}");
    }
    for bound in [0.0f32, -1.0, f32::NAN, f32::INFINITY, f32::MAX, 1e30] {
        let err = rt
            .attn_adam(
                rt.stream(),
                &mut group,
                &hyper,
                ClampPolicy::Fixed { bound },
            )
            .unwrap_err();
        assert!(
            in_attn(&err, |e| matches!(e, Error::InvalidClamp { .. })),
            "bound {bound}: {err}"
        );
    }
    let err = rt
        .attn_adam(rt.stream(), &mut group, &hyper, ClampPolicy::disabled(" "))
        .unwrap_err();
    assert!(
        in_attn(&err, |e| matches!(e, Error::DisabledWithoutReason)),
        "{err}"
    );
    let bad_hypers = [
        AdamHyper {
            lr: f32::NAN,
            ..hyper
        },
        AdamHyper { lr: -1.0, ..hyper },
        AdamHyper {
            beta1: 1.0,
            ..hyper
        },
        AdamHyper {
            beta2: -0.1,
            ..hyper
        },
        AdamHyper { eps: 0.0, ..hyper },
        AdamHyper {
            weight_decay: f32::INFINITY,
            ..hyper
        },
        AdamHyper { step: 0, ..hyper },
    ];
    for bad in bad_hypers {
        let err = rt
            .attn_adam(rt.stream(), &mut group, &bad, ClampPolicy::from_isv(1.0))
            .unwrap_err();
        assert!(
            in_attn(&err, |e| matches!(e, Error::InvalidHyper { .. })),
            "{bad:?}: {err}"
        );
    }
    let err = rt
        .iql_adam(
            rt.stream(),
            &mut group,
            &hyper,
            f32::NAN,
            ClampPolicy::from_isv(1.0),
        )
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::InKernel { kernel: "iql_adam_kernel", source }
                if matches!(**source, Error::InvalidHyper { field: "grad_clip", .. })
        ),
        "{err}"
    );
    let curiosity_hyper = AdamHyper {
        weight_decay: 0.0,
        ..hyper
    };
    let err = rt
        .curiosity_adam(
            rt.stream(),
            &mut group,
            &curiosity_hyper,
            ClampPolicy::from_isv(1.0),
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::MissingBuffer {
                buffer: "v_max",
                ..
            }
        ),
        "{err}"
    );
    rt.synchronize().unwrap();
    unchanged(&group, "refused launches");

    // Mismatched lengths through the generic launcher: names the kernel, buffer and sizes.
    let mut p = ParamBuffer::from_host(&s.p).unwrap();
    let g = DeviceArray::from_host(&s.g[..999]).unwrap();
    let mut m = DeviceArray::from_host(&s.m).unwrap();
    let mut v = DeviceArray::from_host(&s.v).unwrap();
    let records = Records::single::<iqn_adam_kernel::Entry>().unwrap();
    let scalars = adam_scalars!(iqn_adam_kernel, hyper, weight_decay: hyper.weight_decay).unwrap();
    let buffers = iqn_adam_kernel::Buffers {
        p: &mut p,
        g: g.input(),
        m: &mut m,
        v: &mut v,
    };
    let err = rt
        .launch::<iqn_adam_kernel::Entry>(rt.stream())
        .plain(&scalars, ClampPolicy::from_isv(1.0))
        .buffers(&buffers, &records)
        .unwrap_err();
    match &err {
        Error::LengthMismatch {
            kernel,
            buffer,
            found,
            expected,
            ..
        } => {
            assert_eq!(
                (*kernel, *buffer, *found, *expected),
                ("iqn_adam_kernel", "g", 999, 1000)
            );
        }
        other => panic!("expected LengthMismatch, got {other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("iqn_adam_kernel") && text.contains("999") && text.contains("1000"),
        "{text}"
    );
    rt.synchronize().unwrap();
    let host = p.download().unwrap();
    assert!(
        host.iter()
            .zip(&s.p)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "p changed"
    );

    // Host uploads of the wrong length are refused too.
    let err = group.upload(GroupBuffer::Grads, &s.g[..10]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::HostLength {
                found: 10,
                expected: 1000,
                ..
            }
        ),
        "{err}"
    );
}

/// A PTX module without one of the declared entries: the runtime refuses to start, naming it.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn missing_kernel_is_named() {
    let ptx =
        adamant::runtime::PTX.replace(".entry iqn_adam_kernel(", ".entry iqn_adam_kernel_renamed(");
    let kernels = adamant_device::abi::kernels();
    // SAFETY: nothing is launched from either module: the test wants the driver's verdict on a
    // module without a declared entry, and on text that is not PTX.
    match unsafe { Adamant::with_unaudited_ptx(&ptx, &kernels) } {
        Err(Error::MissingKernel { name, .. }) => assert_eq!(name, "iqn_adam_kernel"),
        Err(other) => panic!("expected MissingKernel, got {other}"),
        Ok(_) => panic!("a module without iqn_adam_kernel was accepted"),
    }
    let err = unsafe { Adamant::with_unaudited_ptx("this is not PTX", &kernels) }
        .err()
        .expect("garbage PTX refused");
    assert!(matches!(err, Error::ModuleLoad { .. }), "{err}");
}

/// Empty groups launch nothing and succeed.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn empty_group_is_a_no_op() {
    let rt = runtime();
    let mut group = ParamGroup::new("empty", &[]).unwrap();
    let info = rt
        .iqn_adam(
            rt.stream(),
            &mut group,
            &hyper_for(KernelRef::Iqn, 1),
            ClampPolicy::from_isv(1.0),
        )
        .unwrap();
    assert_eq!(info.elements, 0);
}

/// Overlapping regions of one allocation: the runtime's own buffers cannot overlap (each is its
/// own allocation, and a launch borrows the ones it writes mutably), but memory of other code
/// can. Refused with both buffers named, for one tensor and across the tensors of a set, and
/// not one byte of the allocation changes.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn overlapping_buffers_are_refused_before_launch() {
    use adamant::runtime::DeviceRegion;
    let rt = runtime();
    let n = 4096;
    let original: Vec<f32> = (0..3 * n).map(|i| i as f32 * 0.001).collect();
    let big = DeviceBuffer::from_slice(&original).unwrap();
    let others: Vec<DeviceBuffer<f32>> = (0..8)
        .map(|_| DeviceBuffer::from_slice(&vec![0.0f32; n]).unwrap())
        .collect();
    let base = big.as_device_ptr().as_raw();
    let at = |element: usize| DeviceRegion::new(base + 4 * element as u64, n).unwrap();
    let other = |i: usize| DeviceRegion::new(others[i].as_device_ptr().as_raw(), n).unwrap();
    let records = Records::single::<iqn_adam_kernel::Entry>().unwrap();
    let hyper = hyper_for(KernelRef::Iqn, 1);
    let scalars = adam_scalars!(iqn_adam_kernel, hyper, weight_decay: 0.0).unwrap();
    let buffers = iqn_adam_kernel::Buffers {
        p: at(0),
        g: other(0),
        m: at(n / 2),
        v: other(1),
    };
    let policy = ClampPolicy::Fixed { bound: 1.0 };
    // SAFETY: every allocation outlives the (refused) launches.
    match unsafe {
        rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
            .plain(&scalars, policy)
            .raw_buffers(&buffers, &records)
    } {
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
        }
        other => panic!("expected Overlap, got {other:?}"),
    }
    // A set whose second tensor's parameters start inside the first's.
    let mut set = adamant::runtime::TensorSet::new();
    let tensors = [
        iqn_adam_kernel::Buffers {
            p: at(0),
            g: other(2),
            m: other(3),
            v: other(4),
        },
        iqn_adam_kernel::Buffers {
            p: at(n - 8),
            g: other(5),
            m: other(6),
            v: other(7),
        },
    ];
    // SAFETY: as above.
    match unsafe {
        rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
            .plain(&scalars, policy)
            .raw_set(&mut set, &tensors)
    } {
        Err(Error::Overlap { first, second, .. }) => {
            assert!(
                first.contains("tensor 0 `p`") && second.contains("tensor 1 `p`"),
                "{first} / {second}"
            );
        }
        other => panic!("expected Overlap, got {other:?}"),
    }
    rt.synchronize().unwrap();
    let mut after = vec![0.0f32; 3 * n];
    big.copy_to(&mut after[..]).unwrap();
    assert!(
        after
            .iter()
            .zip(&original)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "the allocation changed although nothing was launched"
    );
}

/// The target network's soft update on the GPU: bit for bit the host's `element` (same f32
/// operations, no contraction), within 2 × f32::EPSILON × scale of the f64 reference written
/// from the formula, clamped, with NaN kept; τ outside [0, 1] and an overlapping `online` are
/// refused with nothing written.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn soft_update_matches_the_f64_reference() {
    use adamant_kernels::soft_update::soft_update_kernel;
    let rt = runtime();
    let mut rng = SmallRng::seed_from_u64(21);
    let bound = 1.5f32;
    let mut worst = 0.0f64;
    // Every soft update below runs on the one stream, one after the other.
    let records = Records::single::<soft_update_kernel::Entry>().unwrap();
    for n in sizes() {
        for tau in [0.005f32, 0.0, 1.0, 0.5] {
            let mut target: Vec<f32> = (0..n).map(|_| rng.gen_range(-2.0..2.0)).collect();
            let mut online: Vec<f32> = (0..n).map(|_| rng.gen_range(-3.0..3.0)).collect();
            if n > 8 {
                target[1] = f32::NAN;
                online[2] = f32::INFINITY;
                target[3] = f32::NEG_INFINITY;
                online[5] = 1e30;
            }
            let mut d_target = ParamBuffer::from_host(&target).unwrap();
            let d_online = ParamBuffer::from_host(&online).unwrap();
            rt.soft_update(
                rt.stream(),
                &mut d_target,
                &d_online,
                tau,
                ClampPolicy::Fixed { bound },
                &records,
            )
            .unwrap();
            rt.synchronize().unwrap();
            let got = d_target.download().unwrap();
            for i in 0..n {
                let host = soft_update_kernel::element(target[i], online[i], tau, bound);
                // The GPU's arithmetic returns its canonical NaN (0x7fffffff), the host's a
                // quiet NaN of its own: NaN is compared as NaN, everything else bit for bit.
                let same = got[i].to_bits() == host.to_bits() || (got[i].is_nan() && host.is_nan());
                assert!(
                    same,
                    "n={n} tau={tau} i={i}: device {} host {}",
                    got[i], host
                );
                let (want, scale) = r::soft_update_with_scale(
                    target[i] as f64,
                    online[i] as f64,
                    tau as f64,
                    bound as f64,
                );
                if want.is_nan() {
                    assert!(
                        got[i].is_nan(),
                        "n={n} tau={tau} i={i}: {} is not NaN",
                        got[i]
                    );
                    continue;
                }
                assert!(got[i].abs() <= bound, "i={i}: {} past the bound", got[i]);
                let err = (got[i] as f64 - want).abs() / (f32::EPSILON as f64 * scale);
                worst = worst.max(err);
                assert!(err <= 2.0, "n={n} tau={tau} i={i}: error {err}");
            }
        }
    }
    println!("max_error kernel=soft_update_kernel worst_eps_scale_units={worst:.3} pass_limit=2");

    // Refused before launch, nothing written.
    let n = 1024;
    let before: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut target = ParamBuffer::from_host(&before).unwrap();
    let online = ParamBuffer::from_host(&before).unwrap();
    let short = ParamBuffer::from_host(&before[1..]).unwrap();
    for tau in [-0.1f32, 1.5, f32::NAN] {
        match rt.soft_update(
            rt.stream(),
            &mut target,
            &online,
            tau,
            ClampPolicy::Fixed { bound },
            &records,
        ) {
            Err(Error::InvalidScalar { kernel, name, .. }) => {
                assert_eq!((kernel, name), ("soft_update_kernel", "tau"))
            }
            other => panic!("tau = {tau}: expected InvalidScalar, got {other:?}"),
        }
    }
    assert!(matches!(
        rt.soft_update(
            rt.stream(),
            &mut target,
            &short,
            0.5,
            ClampPolicy::Fixed { bound },
            &records,
        ),
        Err(Error::LengthMismatch {
            buffer: "online",
            ..
        })
    ));
    rt.synchronize().unwrap();
    assert_eq!(target.download().unwrap(), before);
}
