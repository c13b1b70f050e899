//! A kernel crate linked twice, with two parameter orders of one kernel (`tests/feature-split`):
//! its build script audits the module against the build-dependency's order (the `swapped`
//! feature off), while the host registers the normal dependency's (feature on), from which
//! launches would build their arguments. The build passes; loading the module is refused,
//! naming the entry and the parameter.
use adamant_build::audit::audit;
use adamant_device::abi::certificate::Certificate;
use adamant_device::abi::{self, OptimizerEntry};
use adamant_runtime::Error;
use feature_split::{split_sgd_kernel, BUILD_SWAPPED, HOST_SWAPPED, MODULE};

const SET: &str = "feature_split_kernels";

#[test]
fn the_build_script_and_the_host_link_the_kernel_crate_with_different_features() {
    assert_eq!((BUILD_SWAPPED, HOST_SWAPPED), ("false", true));
    let names = |params: Vec<String>| params[..3].to_vec();
    let certified = Certificate::from_json(MODULE.certificate()).unwrap();
    let audited = certified
        .kernels()
        .iter()
        .find(|k| k.name == "split_sgd_kernel")
        .unwrap();
    let host = <split_sgd_kernel::Entry as OptimizerEntry>::DESCRIPTOR;
    assert_eq!(
        names(audited.params.iter().map(|p| p.name.clone()).collect()),
        ["p", "g", "m"]
    );
    assert_eq!(
        names(host.params.iter().map(|p| p.name.to_string()).collect()),
        ["p", "m", "g"]
    );
    // The module itself is sound for the order it was built with: the audit passes against the
    // certified descriptors.
    assert!(audit(MODULE.ptx(), &certified.descriptors()).is_ok());
}

#[test]
fn its_module_is_refused_naming_the_entry_and_the_parameter() {
    match MODULE.verify() {
        Err(Error::DescriptorMismatch { set, entry, detail }) => {
            assert_eq!((set.as_str(), entry.as_str()), (SET, "split_sgd_kernel"));
            assert_eq!(
                detail,
                "parameter 1 is `m` (state, .u64) in the host's descriptor but `g` (input, .u64) \
                 in the audited one"
            );
        }
        other => panic!("expected DescriptorMismatch, got {other:?}"),
    }
    // split_sgd_kernel's four entries and device_math_kernel's (tests/audit/math_ptx.rs).
    assert_eq!(abi::kernel_set(SET).unwrap().len(), 8);
}
