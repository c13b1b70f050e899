//! Two kernels of one crate with one entry name (here in two modules of this test crate): both
//! would be the same PTX symbol. The build refuses the set before compiling it, naming both
//! definitions.
use adamant_device::abi;
// Linked for the descriptors it registers: the test checks adamant's own set too.
use adamant_kernels as _;

mod first {
    use adamant_device::optimizer_kernel;

    #[optimizer_kernel]
    pub fn shared_name_kernel(#[param] p: f32, #[input] g: f32) -> f32 {
        p - g
    }
}

mod second {
    use adamant_device::optimizer_kernel;

    #[optimizer_kernel]
    pub fn shared_name_kernel(#[param] p: f32, #[input] g: f32) -> f32 {
        p + g
    }
}

#[test]
fn a_name_defined_twice_in_one_crate_is_refused_naming_both_definitions() {
    let set = adamant_device::kernel_set!().unwrap();
    let (a, b) = abi::duplicate(&set).expect("the duplicate is found");
    assert_eq!(
        (a.name, b.name),
        ("shared_name_kernel", "shared_name_kernel")
    );
    let err = adamant_build::check_unique_names(&set)
        .unwrap_err()
        .to_string();
    for module in ["kernel_names::first", "kernel_names::second"] {
        assert!(err.contains(module), "{err}");
    }
    assert!(err.contains("tests/cpu/kernel_names.rs:"), "{err}");
    assert!(err.contains("`shared_name_kernel`"), "{err}");
}

#[test]
fn adamants_own_set_and_a_set_without_duplicates_pass() {
    assert!(adamant_build::check_unique_names(&abi::kernels()).is_ok());
    let only_first: Vec<_> = adamant_device::kernel_set!()
        .unwrap()
        .into_iter()
        .filter(|k| k.defined_at.starts_with("kernel_names::first"))
        .collect();
    assert_eq!(only_first.len(), 4);
    assert!(adamant_build::check_unique_names(&only_first).is_ok());
    // Where adamant's own kernels are defined.
    let iqn = abi::kernel("iqn_adam_kernel").unwrap();
    assert!(
        iqn.defined_at
            .starts_with("adamant_kernels::optimizers::iqn_adam_kernel (")
            && iqn.defined_at.contains("optimizers.rs:"),
        "{}",
        iqn.defined_at
    );
}
