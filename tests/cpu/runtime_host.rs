//! Host-side runtime checks that need no GPU: clamp policies, hyperparameter validation, bias
//! corrections, and the no-GPU error (the launch checks, buffer lengths included, are unit tests
//! of the runtime's `launch_check`).
use adamant::runtime::{AdamHyper, Adamant, ClampPolicy, Error, BOUND_CEILING};

#[test]
fn isv_bound_is_100_times_q_abs_ref_at_least_one() {
    for (q, bound) in [
        (0.0f32, 100.0f32),
        (0.3, 100.0),
        (1.0, 100.0),
        (2.5, 250.0),
        (1e15, 1e17),
    ] {
        assert_eq!(
            ClampPolicy::from_isv(q).bound().unwrap(),
            bound,
            "Q_ABS_REF {q}"
        );
    }
}

#[test]
fn bad_clamp_inputs_are_typed_errors() {
    for q in [-1e-9f32, -1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let err = ClampPolicy::from_isv(q).bound().unwrap_err();
        assert!(
            matches!(
                err,
                Error::InvalidClamp {
                    what: "Q_ABS_REF",
                    ..
                }
            ),
            "{q}: {err}"
        );
    }
    // 100 × f32::MAX overflows, and 100 × 3e36 or 100 × 1.1e16 is above the ceiling: a bound that
    // could never bite is refused, not passed on.
    for q in [f32::MAX, 3e36, 1.1e16] {
        let err = ClampPolicy::from_isv(q).bound().unwrap_err();
        assert!(matches!(err, Error::InvalidClamp { .. }), "{q}: {err}");
        assert!(err.to_string().contains("ceiling"), "{err}");
    }
    let past = BOUND_CEILING.next_up();
    for bound in [
        0.0f32,
        -0.0,
        -1.0,
        f32::NAN,
        f32::INFINITY,
        f32::MAX,
        1e30,
        past,
    ] {
        let err = ClampPolicy::Fixed { bound }.bound().unwrap_err();
        assert!(matches!(err, Error::InvalidClamp { .. }), "{bound}: {err}");
    }
    assert_eq!(ClampPolicy::Fixed { bound: 0.5 }.bound().unwrap(), 0.5);
    assert_eq!(
        ClampPolicy::Fixed {
            bound: BOUND_CEILING
        }
        .bound()
        .unwrap(),
        BOUND_CEILING
    );
    assert!(matches!(
        ClampPolicy::disabled("").bound(),
        Err(Error::DisabledWithoutReason)
    ));
    assert!(matches!(
        ClampPolicy::disabled("   ").bound(),
        Err(Error::DisabledWithoutReason)
    ));
    assert_eq!(ClampPolicy::disabled("offline RL").bound().unwrap(), 0.0);
}

#[test]
fn hyperparameters_validate_themselves() {
    let good = AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.01, 1).unwrap();
    assert!(AdamHyper::new(0.0, 0.0, 0.0, 1e-12, 0.0, u64::MAX).is_ok());
    let cases: [(&str, AdamHyper); 12] = [
        ("lr", AdamHyper { lr: -1e-3, ..good }),
        (
            "lr",
            AdamHyper {
                lr: f32::NAN,
                ..good
            },
        ),
        (
            "lr",
            AdamHyper {
                lr: f32::INFINITY,
                ..good
            },
        ),
        ("beta1", AdamHyper { beta1: 1.0, ..good }),
        (
            "beta1",
            AdamHyper {
                beta1: -0.1,
                ..good
            },
        ),
        (
            "beta1",
            AdamHyper {
                beta1: f32::NAN,
                ..good
            },
        ),
        ("beta2", AdamHyper { beta2: 1.5, ..good }),
        ("eps", AdamHyper { eps: 0.0, ..good }),
        (
            "eps",
            AdamHyper {
                eps: f32::INFINITY,
                ..good
            },
        ),
        (
            "weight_decay",
            AdamHyper {
                weight_decay: -0.1,
                ..good
            },
        ),
        (
            "weight_decay",
            AdamHyper {
                weight_decay: f32::NAN,
                ..good
            },
        ),
        ("step", AdamHyper { step: 0, ..good }),
    ];
    for (field, hyper) in cases {
        match hyper.validate() {
            Err(Error::InvalidHyper { field: f, .. }) => assert_eq!(f, field, "{hyper:?}"),
            other => panic!("{hyper:?}: expected InvalidHyper({field}), got {other:?}"),
        }
    }
}

#[test]
fn bias_corrections_are_computed_in_f64() {
    for (beta1, beta2, step) in [
        (0.9f32, 0.999f32, 1u64),
        (0.9, 0.999, 10),
        (0.99, 0.9999, 1_000_000),
        (0.0, 0.5, 3),
    ] {
        let hyper = AdamHyper::new(1e-3, beta1, beta2, 1e-8, 0.0, step).unwrap();
        let (bc1, bc2) = hyper.bias_corrections();
        let want = |b: f32| (1.0 - (b as f64).powf(step as f64)) as f32;
        assert_eq!(
            (bc1, bc2),
            (want(beta1), want(beta2)),
            "β=({beta1},{beta2}) t={step}"
        );
    }
    // At t = 1 with β2 = 0.999 an f32 computation would already be off in the 4th digit.
    let (_, bc2) = AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.0, 1)
        .unwrap()
        .bias_corrections();
    assert!((bc2 as f64 - (1.0 - 0.999f32 as f64)).abs() < 1e-10);
}

/// Without a GPU the runtime gives the NoDevice error (never a panic); with one it starts.
#[test]
fn no_gpu_is_a_clear_error() {
    let has_gpu = std::path::Path::new("/dev/nvidia0").exists();
    match Adamant::new() {
        Ok(_) => assert!(has_gpu, "a runtime started without /dev/nvidia0"),
        Err(Error::NoDevice { .. }) => assert!(!has_gpu, "NoDevice although /dev/nvidia0 exists"),
        Err(other) => panic!("expected NoDevice or a runtime, got: {other}"),
    }
}

/// A GPU the driver does not see: named with the count on a GPU machine; on a machine without a
/// GPU the driver's absence comes first (NoDevice, never a panic).
#[test]
fn a_gpu_past_the_device_count_is_named() {
    let has_gpu = std::path::Path::new("/dev/nvidia0").exists();
    match Adamant::on_device(u32::MAX) {
        Err(Error::NoSuchDevice { ordinal, count }) => {
            assert!(has_gpu, "NoSuchDevice without /dev/nvidia0");
            assert_eq!(ordinal, u32::MAX);
            assert!(count >= 1);
        }
        Err(Error::NoDevice { .. }) => assert!(!has_gpu, "NoDevice although /dev/nvidia0 exists"),
        Err(other) => panic!("expected NoSuchDevice or NoDevice, got: {other}"),
        Ok(_) => panic!("a runtime started on GPU u32::MAX"),
    }
}

/// `GroupSizes::RL_SET` is the per-model sum of the benchmark's shapes (bench/rl_set.json, the
/// one list of tensors); this keeps the two from drifting apart.
#[test]
fn rl_set_group_sizes_are_the_sums_of_the_benchmark_shapes() {
    use adamant::rl::GroupSizes;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/rl_set.json");
    let spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let size = |model: &str| -> usize {
        let m = spec["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["model"] == model)
            .unwrap_or_else(|| panic!("{model} missing"));
        m["tensors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                t["shape"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_u64().unwrap() as usize)
                    .product::<usize>()
            })
            .sum()
    };
    let from_json = GroupSizes {
        dqn_trunk: size("dqn_trunk"),
        dqn_heads: size("dqn_heads"),
        iqn_online: size("iqn_head"),
        iql: size("iql"),
        attention: size("attention"),
        tlob: size("tlob"),
        curiosity: size("curiosity"),
        decision_transformer: size("decision_transformer"),
    };
    assert_eq!(GroupSizes::RL_SET, from_json);
}

/// A guard that would judge nothing, or one record twice, is refused before anything is
/// allocated (so without a GPU too).
#[test]
fn a_guard_without_records_or_naming_one_twice_is_refused() {
    use adamant::runtime::{Error, GradientGuard};
    let none: [(usize, &[&dyn adamant::runtime::ReadBuffer]); 0] = [];
    match GradientGuard::per_record(&none) {
        Err(Error::GuardGroups { kernel, problem }) => {
            assert_eq!(kernel, "grad_guard_kernel");
            assert!(problem.contains("no record"), "{problem}");
        }
        other => panic!("{:?}", other.err()),
    }
    match GradientGuard::one_per_record(&[]) {
        Err(Error::GuardGroups { problem, .. }) => {
            assert!(problem.contains("no record"), "{problem}")
        }
        other => panic!("{:?}", other.err()),
    }
    match GradientGuard::per_record(&[(2, &[]), (0, &[]), (2, &[])]) {
        Err(e @ Error::GuardGroups { .. }) => {
            assert!(e.to_string().contains("record 2 is named twice"), "{e}");
        }
        other => panic!("{:?}", other.err()),
    }
}
