//! The certificate check that stands before every module safe code loads
//! (`AuditedModule::verify`, which `Adamant::new` and `Adamant::add_module` run first), on
//! adamant's own build output: the real module verifies; the real PTX with one line changed, and
//! the real certificate edited in each field the check reads, are refused with a typed error
//! naming the set and the entry. No GPU is needed.
#[path = "../support/mod.rs"]
mod support;

use support::certificates;

use adamant_build::audit::audit;
use adamant_device::abi::certificate::Certificate;
use adamant_device::abi::{self, KernelDescriptor, OWN_SET};
use adamant_runtime::{Adamant, AuditedModule, Error, MODULE};
use certificates::{bound_zeroed, entry, module, with_certificate};
use serde_json::json;

/// Two kernels of one name in this test crate's set, as a program that links two versions of
/// one kernel crate would register them.
mod first {
    use adamant_device::optimizer_kernel;

    #[optimizer_kernel]
    pub fn twice_kernel(#[param] p: f32, #[input] g: f32) -> f32 {
        p - g
    }
}

mod second {
    use adamant_device::optimizer_kernel;

    #[optimizer_kernel]
    pub fn twice_kernel(#[param] p: f32, #[input] g: f32) -> f32 {
        p + g
    }
}

fn mismatch(module: &AuditedModule) -> (String, String, String) {
    match module.verify() {
        Err(Error::DescriptorMismatch { set, entry, detail }) => (set, entry, detail),
        other => panic!("expected DescriptorMismatch, got {other:?}"),
    }
}

fn unaudited(module: &AuditedModule) -> (String, String) {
    match module.verify() {
        Err(Error::UnauditedModule { set, reason }) => (set, reason),
        other => panic!("expected UnauditedModule, got {other:?}"),
    }
}

fn soft_update() -> &'static KernelDescriptor {
    abi::kernel("soft_update_kernel").unwrap()
}

#[test]
fn adamants_embedded_module_verifies_and_new_gets_past_it() {
    assert_eq!(MODULE.verify().unwrap(), abi::kernels());
    // The verification runs before the driver is asked: on this machine the driver's answer
    // (or a runtime, on a GPU machine) proves it passed.
    match Adamant::new() {
        Ok(_) | Err(Error::NoDevice { .. }) => {}
        Err(other) => panic!("expected NoDevice or a runtime, got: {other}"),
    }
}

#[test]
fn one_changed_line_of_the_ptx_is_unaudited_naming_both_digests() {
    let soft = soft_update();
    let edited = bound_zeroed(MODULE.ptx(), soft.name, soft.params.len());
    assert_eq!(edited.lines().count(), MODULE.ptx().lines().count());
    // The edit is one the audit refuses: the module safe code would otherwise load.
    assert!(!audit(&edited, &abi::kernels()).is_ok());
    let refused = module(edited.clone(), MODULE.certificate().to_string());
    let (set, reason) = unaudited(&refused);
    assert_eq!(set, OWN_SET);
    let ours = adamant_device::abi::certificate::ptx_sha256(&edited);
    let certified = Certificate::from_json(MODULE.certificate()).unwrap();
    assert!(
        reason.contains(&ours) && reason.contains(certified.ptx_sha256()),
        "{reason}"
    );
    let text = Error::UnauditedModule { set, reason }.to_string();
    assert!(
        text.contains("`adamant_kernels`") && text.ends_with("(nothing was loaded)"),
        "{text}"
    );
}

#[test]
fn two_parameters_swapped_in_the_certificate_are_named_by_position() {
    let soft = soft_update();
    let edited = with_certificate(&MODULE, |c| {
        entry(c, soft.name)["params"]
            .as_array_mut()
            .unwrap()
            .swap(0, 1)
    });
    let (set, name, detail) = mismatch(&edited);
    assert_eq!((set.as_str(), name.as_str()), (OWN_SET, soft.name));
    let (p0, p1) = (soft.params[0].name, soft.params[1].name);
    assert_eq!(
        detail,
        format!(
            "parameter 0 is `{p0}` (param, .u64) in the host's descriptor but `{p1}` (input, \
             .u64) in the audited one"
        )
    );
}

#[test]
fn a_changed_domain_is_a_mismatch_of_that_parameter() {
    let soft = soft_update();
    let tau = soft.params.iter().position(|p| p.name == "tau").unwrap();
    let edited = with_certificate(&MODULE, |c| {
        let role = &mut entry(c, soft.name)["params"][tau]["role"];
        assert_eq!(role["scalar"]["domain"]["upper"], json!({"inclusive": 1.0}));
        role["scalar"]["domain"]["upper"] = json!({"inclusive": 2.0});
    });
    let (_, name, detail) = mismatch(&edited);
    assert_eq!(name, soft.name);
    assert!(
        detail.starts_with(&format!(
            "parameter {tau} is `tau` (scalar, finite, >= 0, <= 1, .f32)"
        )) && detail.contains("`tau` (scalar, finite, >= 0, <= 2, .f32) in the audited one"),
        "{detail}"
    );
}

#[test]
fn an_entry_dropped_from_or_added_to_the_certificate_is_named() {
    let soft = soft_update();
    let dropped = with_certificate(&MODULE, |c| {
        c["kernels"]
            .as_array_mut()
            .unwrap()
            .retain(|k| k["name"] != soft.name)
    });
    let (_, name, detail) = mismatch(&dropped);
    assert_eq!(
        (name.as_str(), detail.as_str()),
        (soft.name, "entry not in the audited module")
    );

    let added = with_certificate(&MODULE, |c| {
        let mut ghost = entry(c, soft.name).clone();
        ghost["name"] = json!("ghost_kernel");
        c["kernels"].as_array_mut().unwrap().push(ghost);
    });
    let (_, name, detail) = mismatch(&added);
    assert_eq!(
        (name.as_str(), detail.as_str()),
        ("ghost_kernel", "entry missing from the host's registry")
    );
}

#[test]
fn a_set_with_no_registered_kernel_is_named_with_the_registered_ones() {
    // A certificate whose set (a misspelt library name, or a kernel crate not linked into the
    // binary) has no kernel here: refused before anything is compared, naming it and listing
    // the sets that are registered.
    let renamed = with_certificate(&MODULE, |c| c["set"] = json!("renamed_kernels"));
    let err = renamed.verify().unwrap_err();
    let Error::UnknownKernelSet { set, registered } = &err else {
        panic!("expected UnknownKernelSet, got {err:?}")
    };
    assert_eq!(set, "renamed_kernels");
    assert_eq!(registered, &abi::sets());
    assert!(registered.contains(&OWN_SET) && registered.contains(&"module_certificate"));
    let message = err.to_string();
    assert!(
        message.starts_with(
            "no kernel of set `renamed_kernels` is registered in this program (registered sets: \
             `adamant_kernels`, "
        ) && message.contains("`module_certificate`")
            && message.contains("`my_kernels` for the package `my-kernels`")
            && message.ends_with("(nothing was loaded)"),
        "{message}"
    );

    // The same error where a user names a set: a typo is refused where it is typed, never an
    // empty set a module would then be loaded with.
    let typo = abi::kernel_set("adamant_kernel").unwrap_err();
    assert_eq!(
        (typo.set.as_str(), &typo.registered),
        ("adamant_kernel", &abi::sets())
    );
    let converted: Error = typo.into();
    assert!(
        matches!(&converted, Error::UnknownKernelSet { set, .. } if set == "adamant_kernel"),
        "{converted:?}"
    );
}

#[test]
fn an_empty_kernel_list_is_refused_before_the_driver() {
    // SAFETY: nothing is loaded: the empty list is refused before any driver call (so also on
    // this machine, which has no GPU).
    let err = unsafe { Adamant::with_unaudited_ptx(MODULE.ptx(), &[]) }
        .err()
        .expect("an empty kernel list was accepted");
    let Error::NoKernels { registered } = &err else {
        panic!("expected NoKernels, got {err:?}")
    };
    assert_eq!(registered, &abi::sets());
    assert!(err.to_string().contains("`adamant_kernels`"), "{err}");
}

#[test]
fn another_format_or_garbage_is_unaudited() {
    let other_format = with_certificate(&MODULE, |c| {
        c["format"] = json!("adamant-audit-certificate/2")
    });
    let (set, reason) = unaudited(&other_format);
    assert_eq!(set, OWN_SET);
    assert!(
        reason.contains("unknown certificate format `adamant-audit-certificate/2`"),
        "{reason}"
    );

    let garbage = module(MODULE.ptx().to_string(), "{\"kernels\": [".to_string());
    let (set, reason) = unaudited(&garbage);
    assert_eq!(set, "(unreadable)");
    assert!(reason.starts_with("not JSON"), "{reason}");
}

#[test]
fn a_kernel_registered_twice_is_refused() {
    let set = adamant_device::kernel_set!().unwrap();
    // The certificate names each entry once (the build refuses duplicates before compiling).
    let once: Vec<_> = set
        .iter()
        .copied()
        .filter(|k| k.defined_at.starts_with("module_certificate::first"))
        .collect();
    assert_eq!((set.len(), once.len()), (8, 4));
    let ptx = "// the entries of this test's set";
    // SAFETY: a certificate for a text that was never audited, made to show that `verify`
    // refuses the registry before anything could be loaded; nothing is.
    let cert = unsafe { Certificate::issue(ptx, &once, "0.1.0") }.unwrap();
    let (set, name, detail) = mismatch(&module(ptx.to_string(), cert.to_json()));
    assert_eq!(
        (set.as_str(), name.as_str()),
        ("module_certificate", "twice_kernel")
    );
    assert!(
        detail.starts_with("registered twice in the host, at module_certificate::first")
            && detail.contains("module_certificate::second"),
        "{detail}"
    );
}
