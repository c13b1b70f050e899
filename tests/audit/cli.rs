//! `adamant audit` on another crate's module: with the kernel list its build wrote it audits that
//! crate's entries; without it (adamant's own set) every entry is undeclared and the audit fails;
//! a malformed list is an error that names the file. With the module's certificate it audits
//! against the certified list, and refuses a PTX the certificate is not for. `--explain ENTRY`
//! explains one entry, and names the entries when there is no such entry.
use std::path::PathBuf;
use std::process::{Command, Output};

fn audit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_adamant"))
        .arg("audit")
        .args(args)
        .output()
        .expect("running adamant audit")
}

/// `files` (name, text) written to a folder of the test's own (`tag`), and their paths.
fn write(tag: &str, files: [(&str, &str); 3]) -> (PathBuf, [String; 3]) {
    let dir = std::env::temp_dir().join(format!("adamant-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let paths = files.map(|(name, text)| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    });
    (dir, paths)
}

#[test]
fn the_cli_audits_a_downstream_module_against_its_kernel_list() {
    let (dir, [ptx, list, bad]) = write(
        "audit",
        [
            ("custom_optimizer_kernels.ptx", custom_optimizer::PTX),
            (
                "custom_optimizer_kernels.kernels.json",
                custom_optimizer::KERNEL_LIST,
            ),
            ("bad.kernels.json", "{\"set\": 1}"),
        ],
    );
    let (ptx, list, bad) = (ptx.as_str(), list.as_str(), bad.as_str());

    let with_list = audit(&["--ptx", ptx, "--kernels", list]);
    let text = String::from_utf8_lossy(&with_list.stdout);
    assert!(with_list.status.success(), "{text}");
    assert!(
        text.contains("audit: OK, 17 entries, 16 optimizer entries with the clamp verified"),
        "{text}"
    );

    let without = audit(&["--ptx", ptx]);
    let text = String::from_utf8_lossy(&without.stdout);
    assert!(!without.status.success());
    assert!(
        text.contains("lion_kernel") && text.contains("UNDECLARED"),
        "{text}"
    );

    let malformed = audit(&["--ptx", ptx, "--kernels", bad]);
    let err = String::from_utf8_lossy(&malformed.stderr);
    assert!(!malformed.status.success());
    assert!(err.contains("bad.kernels.json"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_cli_audits_a_module_against_its_certificate_and_refuses_another_ptx() {
    let (dir, [ptx, ours, cert]) = write(
        "cert",
        [
            (
                "custom_optimizer_kernels.ptx",
                custom_optimizer::MODULE.ptx(),
            ),
            ("adamant_kernels.ptx", adamant_runtime::PTX),
            (
                "custom_optimizer_kernels.certificate.json",
                custom_optimizer::MODULE.certificate(),
            ),
        ],
    );
    let (ptx, ours, cert) = (ptx.as_str(), ours.as_str(), cert.as_str());

    let certified = audit(&["--ptx", ptx, "--certificate", cert]);
    let text = String::from_utf8_lossy(&certified.stdout);
    assert!(certified.status.success(), "{text}");
    assert!(
        text.contains("certificate: 17 entries of set `custom_optimizer_kernels`"),
        "{text}"
    );
    assert!(
        text.contains("audit: OK, 17 entries, 16 optimizer entries with the clamp verified"),
        "{text}"
    );

    // adamant's own module with the example's certificate: refused before any audit, naming
    // both digests.
    let other = audit(&["--ptx", ours, "--certificate", cert]);
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(!other.status.success());
    let digest = adamant_device::abi::certificate::ptx_sha256(adamant_runtime::PTX);
    assert!(
        err.contains("is not for this PTX") && err.contains(&digest),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_cli_explains_one_entry_and_lists_the_entries_for_an_unknown_one() {
    let explained = audit(&["--explain", "iqn_adam_kernel_stepped"]);
    let text = String::from_utf8_lossy(&explained.stdout);
    assert!(explained.status.success(), "{text}");
    for wanted in [
        "iqn_adam_kernel_stepped (line ",
        "store 1: line ",
        "<- the bound",
        "<- the step record's pointer, the last parameter",
        "<- x, the value clamped",
        "verdict: proven clamped (",
        "entry: no violation",
    ] {
        assert!(text.contains(wanted), "no `{wanted}` in:\n{text}");
    }
    assert!(!text.contains("NOT proven"), "{text}");

    let unknown = audit(&["--explain", "no_such_entry"]);
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(!unknown.status.success());
    assert!(
        err.contains("no entry `no_such_entry`") && err.contains("iqn_adam_kernel_multi_stepped"),
        "{err}"
    );
}
