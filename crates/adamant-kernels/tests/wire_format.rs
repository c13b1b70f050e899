//! The wire formats of `adamant-abi` (the kernel list and the audit certificate) on adamant's
//! own kernel set, which every role and domain kind of the ABI appears in: tested here, where
//! that set is registered (the ABI crate itself links no kernel).
use adamant_device::abi::certificate::{ptx_sha256, Certificate, FORMAT};
use adamant_device::abi::kernel_list::{from_json, to_json};
use adamant_device::abi::{self, KernelDescriptor};
// Linked for the descriptors it registers (the tests name no item of it).
use adamant_kernels as _;

#[test]
fn adamants_set_round_trips_field_for_field() {
    let ours = abi::kernels();
    let json = to_json(&ours).unwrap();
    let back = from_json(&json).unwrap();
    assert_eq!(back.len(), ours.len());
    for (a, b) in ours.iter().zip(&back) {
        assert_eq!(*a, *b, "{}", a.name);
    }
    // Every role the abi has appears in adamant's set but the ones only a test kernel uses;
    // a changed domain must change the JSON.
    assert!(json.contains("\"exclusive\": 1.0"), "{json}");
}

#[test]
fn a_list_of_two_sets_or_bad_json_is_refused() {
    let mut mixed = abi::kernels();
    let other: &'static KernelDescriptor = Box::leak(Box::new(KernelDescriptor {
        set: "other",
        ..*mixed[0]
    }));
    mixed.push(other);
    assert!(to_json(&mixed).unwrap_err().to_string().contains("one set"));
    assert!(from_json("{\"set\": 3}").is_err());
}

fn adamants() -> Certificate {
    // SAFETY: a test certificate, never handed to the runtime: these tests read and write
    // the format only.
    unsafe { Certificate::issue("ptx text", &abi::kernels(), "0.1.0") }.unwrap()
}

#[test]
fn the_digest_is_sha256_of_the_bytes() {
    // FIPS 180-2's test vector "abc".
    assert_eq!(
        ptx_sha256("abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn a_certificate_round_trips_and_carries_the_descriptors() {
    let cert = adamants();
    let json = cert.to_json();
    assert!(json.contains(FORMAT), "{json}");
    let back = Certificate::from_json(&json).unwrap();
    assert_eq!(back, cert);
    assert_eq!(back.ptx_sha256(), ptx_sha256("ptx text"));
    let ours = abi::kernels();
    let descriptors = back.descriptors();
    assert_eq!(descriptors.len(), ours.len());
    for (a, b) in ours.iter().zip(&descriptors) {
        assert_eq!(*a, *b, "{}", a.name);
    }
}

#[test]
fn another_format_a_bad_digest_or_a_repeated_entry_is_refused_by_name() {
    let json = adamants().to_json();
    let err =
        Certificate::from_json(&json.replace(FORMAT, "adamant-audit-certificate/0")).unwrap_err();
    assert_eq!(err.set.as_deref(), Some(abi::OWN_SET));
    assert!(err.reason.contains("unknown certificate format"), "{err}");

    let digest = ptx_sha256("ptx text");
    let err = Certificate::from_json(&json.replace(&digest, &digest.to_uppercase())).unwrap_err();
    assert!(err.reason.contains("64 lowercase hex digits"), "{err}");

    // The same certificate with its first entry listed twice.
    let mut twice: serde_json::Value = serde_json::from_str(&json).unwrap();
    let kernels = twice["kernels"].as_array_mut().unwrap();
    kernels.push(kernels[0].clone());
    let err = Certificate::from_json(&twice.to_string()).unwrap_err();
    assert!(err.reason.contains("twice"), "{err}");

    let err = Certificate::from_json("{\"set\": \"x\"}").unwrap_err();
    assert!(err.reason.contains("no `format` tag"), "{err}");
    assert!(Certificate::from_json("not json").is_err());
    let extra = json.replacen('{', "{\"trusted\": true,", 1);
    let err = Certificate::from_json(&extra).unwrap_err();
    assert!(err.reason.contains("unknown field"), "{err}");
}
