//! Kernel sets: a kernel crate linked beside adamant registers its entries under its own set, the
//! defining crate's name. Here two are linked: the downstream example's
//! (`examples/custom-optimizer/kernels`, Lion and SGD with momentum) and this test crate, which
//! defines a kernel named like one of adamant's. adamant's own set, module and audit are
//! unaffected by them, and a launch looks for its entry in the module of its kernel's set, never
//! in adamant's.
//!
//! The CPU tests run everywhere; the GPU ones are `#[ignore]`d with their reason.
use adamant_device::abi::{self, OWN_SET};
use adamant_rl::SeedLaunchers;
use adamant_runtime::{Adamant, ClampPolicy, Error, Records};
use adamant_runtime::{DeviceArray, ParamBuffer};
use custom_optimizer_kernels::sgd_momentum_kernel;

/// The example crate's kernel set.
const FOREIGN_SET: &str = "custom_optimizer_kernels";
/// This test crate's kernel set: its name as Rust spells it.
const THIS_SET: &str = env!("CARGO_CRATE_NAME");

/// A downstream kernel named like one of adamant's: its own set's entry, not a second
/// registration of adamant's.
mod same_name {
    use adamant_device::optimizer_kernel;

    #[optimizer_kernel]
    pub fn attn_adam_kernel(
        #[param] p: f32,
        #[input] g: f32,
        #[hyper]
        #[domain(ge = 0.0)]
        lr: f32,
    ) -> f32 {
        p - lr * g
    }
}

#[test]
fn a_linked_kernel_crate_registers_its_own_set() {
    let d = &sgd_momentum_kernel::DESCRIPTOR;
    assert_eq!(d.set, FOREIGN_SET);
    assert!(abi::all_kernels().iter().any(|k| std::ptr::eq(*k, d)));
    // adamant's own set does not see it, and keeps every one of its entries.
    assert!(abi::kernels().iter().all(|k| k.set == OWN_SET));
    assert!(abi::kernels()
        .iter()
        .all(|k| k.name != "sgd_momentum_kernel"));
    assert!(abi::kernel("sgd_momentum_kernel").is_none());
    assert!(abi::kernel_in(FOREIGN_SET, "sgd_momentum_kernel").is_some());
    // The same name in two sets: two descriptors, each found in its own set.
    let ours = abi::kernel("attn_adam_kernel").unwrap();
    assert_eq!(ours.set, OWN_SET);
    assert_eq!(same_name::attn_adam_kernel::DESCRIPTOR.set, THIS_SET);
    assert!(!std::ptr::eq(
        ours,
        &same_name::attn_adam_kernel::DESCRIPTOR
    ));
    // This crate's set is exactly its four entries, the example crate's its seventeen.
    let mine: Vec<&str> = adamant_device::kernel_set!()
        .unwrap()
        .iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(
        mine,
        [
            "attn_adam_kernel",
            "attn_adam_kernel_multi",
            "attn_adam_kernel_multi_stepped",
            "attn_adam_kernel_stepped",
        ]
    );
    let foreign = abi::kernel_set(FOREIGN_SET).unwrap();
    assert_eq!(foreign.len(), 17); // four kernels of four entries, and NAdam's schedule
    assert!(foreign.iter().any(|k| std::ptr::eq(*k, d)));
    assert_eq!(
        abi::all_kernels().len(),
        abi::kernels().len() + mine.len() + foreign.len()
    );
}

#[test]
fn adamants_audit_is_unaffected_by_linked_kernel_crates() {
    let report = adamant::audit_embedded();
    assert!(report.is_ok(), "{report:?}");
    assert!(report.entry("sgd_momentum_kernel").is_none());
}

fn sgd_launch(
    rt: &Adamant,
    p: &mut ParamBuffer,
    g: &mut DeviceArray,
    b: &mut DeviceArray,
    records: &Records,
) -> adamant_runtime::Result<adamant_runtime::LaunchInfo> {
    let buffers = sgd_momentum_kernel::Buffers {
        p,
        g: g.input(),
        momentum_buffer: b,
    };
    let scalars = sgd_momentum_kernel::Scalars {
        lr: 0.1,
        momentum: 0.9,
        weight_decay: 0.0,
    };
    rt.launch::<sgd_momentum_kernel::Entry>(rt.stream())
        .plain(&scalars, ClampPolicy::Fixed { bound: 1.0 })
        .buffers(&buffers, records)
}

fn filled(x: f32, n: usize) -> DeviceArray {
    DeviceArray::from_host(&vec![x; n]).unwrap()
}

fn params(x: f32, n: usize) -> ParamBuffer {
    ParamBuffer::from_host(&vec![x; n]).unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn the_runtime_loads_adamants_module_and_looks_up_a_foreign_kernel_in_its_own_set() {
    // Before kernel sets, Adamant::new looked for the linked crates' entries in adamant's PTX
    // and failed; now it resolves adamant's set only.
    let mut rt = Adamant::new().expect("adamant's module loads with foreign kernels linked");
    let n = 1024;
    let (mut p, mut g, mut b) = (params(0.5, n), filled(0.1, n), filled(0.0, n));
    let records = Records::single::<sgd_momentum_kernel::Entry>().unwrap();
    // The example's module was never loaded: the error names the set, and nothing is launched.
    match sgd_launch(&rt, &mut p, &mut g, &mut b, &records) {
        Err(Error::MissingKernel { set, name, .. }) => {
            assert_eq!((set, name), (FOREIGN_SET, "sgd_momentum_kernel"));
        }
        other => panic!("expected MissingKernel, got {other:?}"),
    }
    // Loading adamant's own set a second time is refused by name, before the driver is asked.
    let err = rt.add_module(&adamant_runtime::MODULE).unwrap_err();
    assert!(
        matches!(err, Error::KernelSetLoaded { set: OWN_SET, .. }),
        "{err:?}"
    );
    // adamant's `attn_adam_kernel` still launches, though this crate has an entry of that name:
    // the registry and the modules are looked up by set and name.
    let mut group = adamant_runtime::ParamGroup::new("attention", &vec![0.5; n]).unwrap();
    group
        .upload(adamant_runtime::GroupBuffer::Grads, &vec![0.1; n])
        .unwrap();
    let hyper = adamant_runtime::AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.0, 1).unwrap();
    rt.attn_adam(
        rt.stream(),
        &mut group,
        &hyper,
        ClampPolicy::Fixed { bound: 1.0 },
    )
    .expect("adamant's entry of the shared name");
    rt.synchronize().unwrap();
    let p = group
        .download(adamant_runtime::GroupBuffer::Params)
        .unwrap();
    // One Adam step from zero moments moves every weight by lr (bias-corrected m / sqrt(v)).
    assert!(
        p.iter().all(|&x| (x - (0.5 - 1e-3)).abs() < 1e-6),
        "{:?}",
        &p[..4]
    );
}

/// Provokes a CUDA API error on purpose (the driver's lookup of a missing entry), so
/// `gpu-run.sh` skips it under compute-sanitizer (the name ends like the other such test's).
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn add_module_missing_kernel_is_named() {
    let mut rt = Adamant::new().expect("a GPU");
    // adamant's PTX given as the example crate's module: it has none of its entries, so it is
    // refused, naming the first one missing.
    // SAFETY: nothing is launched from it: the module is refused (it lacks the set's entries),
    // which is what the test checks.
    let err = unsafe {
        rt.add_unaudited_module(adamant_runtime::PTX, &abi::kernel_set(FOREIGN_SET).unwrap())
    }
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::MissingKernel {
                set: FOREIGN_SET,
                ..
            }
        ),
        "{err:?}"
    );
    // Nothing was added: the set's kernels are still missing, not half-loaded.
    let n = 16;
    let (mut p, mut g, mut b) = (params(0.5, n), filled(0.1, n), filled(0.0, n));
    let records = Records::single::<sgd_momentum_kernel::Entry>().unwrap();
    let launched = sgd_launch(&rt, &mut p, &mut g, &mut b, &records);
    assert!(
        matches!(
            launched,
            Err(Error::MissingKernel {
                set: FOREIGN_SET,
                ..
            })
        ),
        "{launched:?}"
    );
}
