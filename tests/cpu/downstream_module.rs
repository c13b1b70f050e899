//! A downstream crate with no audit or tests of its own (`examples/minimal-downstream`): the
//! module its one `KernelCrate` call built verifies against the kernels it registers, and
//! neither its PTX with one line changed nor its certificate with another crate's PTX does.
#[path = "../support/mod.rs"]
mod support;

use support::certificates;

use adamant_build::audit::audit;
use adamant_device::abi;
use adamant_device::abi::certificate::ptx_sha256;
use adamant_runtime::{AuditedModule, Error};
use certificates::{bound_zeroed, module};
use minimal_downstream::{minimal_sgd_kernel, MODULE};

const SET: &str = "minimal_downstream_kernels";

fn refusal(module: &AuditedModule) -> (String, String) {
    match module.verify() {
        Err(Error::UnauditedModule { set, reason }) => (set, reason),
        other => panic!("expected UnauditedModule, got {other:?}"),
    }
}

#[test]
fn the_minimal_crates_module_verifies_against_its_registered_kernels() {
    let verified = MODULE.verify().unwrap();
    assert_eq!(verified, abi::kernel_set(SET).unwrap());
    let names: Vec<&str> = verified.iter().map(|k| k.name).collect();
    assert_eq!(
        names,
        [
            "minimal_sgd_kernel",
            "minimal_sgd_kernel_multi",
            "minimal_sgd_kernel_multi_stepped",
            "minimal_sgd_kernel_stepped"
        ]
    );
    // The descriptor a launch of the kernel is built from is the verified one.
    use adamant_device::abi::OptimizerEntry;
    assert!(verified.contains(&<minimal_sgd_kernel::Entry as OptimizerEntry>::DESCRIPTOR));
}

#[test]
fn its_ptx_with_one_line_changed_is_refused() {
    let sgd = abi::kernel_in(SET, "minimal_sgd_kernel").unwrap();
    let edited = bound_zeroed(MODULE.ptx(), sgd.name, sgd.params.len());
    assert!(!audit(&edited, &abi::kernel_set(SET).unwrap()).is_ok());
    let (set, reason) = refusal(&module(edited.clone(), MODULE.certificate().to_string()));
    assert_eq!(set, SET);
    assert!(reason.contains(&ptx_sha256(&edited)), "{reason}");
}

#[test]
fn its_certificate_with_another_crates_ptx_is_refused_either_way() {
    // Its certificate, the custom-optimizer example's module (audited too, for its own set).
    let theirs = module(
        custom_optimizer::MODULE.ptx().to_string(),
        MODULE.certificate().to_string(),
    );
    let (set, reason) = refusal(&theirs);
    assert_eq!(set, SET);
    assert!(
        reason.contains(&ptx_sha256(custom_optimizer::MODULE.ptx())),
        "{reason}"
    );
    // adamant's certificate with this crate's module.
    let ours = module(
        MODULE.ptx().to_string(),
        adamant_runtime::MODULE.certificate().to_string(),
    );
    let (set, reason) = refusal(&ours);
    assert_eq!(set, abi::OWN_SET);
    assert!(reason.contains(&ptx_sha256(MODULE.ptx())), "{reason}");
}
