//! `adamant audit` on another crate's module: with the kernel list its build wrote it audits that
//! crate's entries; without it (adamant's own set) every entry is undeclared and the audit fails;
//! a malformed list is an error that names the file.
use std::path::PathBuf;
use std::process::{Command, Output};

fn audit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_adamant"))
        .arg("audit")
        .args(args)
        .output()
        .expect("running adamant audit")
}

fn files() -> (PathBuf, PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("adamant-cli-audit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ptx = dir.join("custom_optimizer_kernels.ptx");
    let list = dir.join("custom_optimizer_kernels.kernels.json");
    let bad = dir.join("bad.kernels.json");
    std::fs::write(&ptx, custom_optimizer::PTX).unwrap();
    std::fs::write(&list, custom_optimizer::KERNEL_LIST).unwrap();
    std::fs::write(&bad, "{\"set\": 1}").unwrap();
    (ptx, list, bad)
}

#[test]
fn the_cli_audits_a_downstream_module_against_its_kernel_list() {
    let (ptx, list, bad) = files();
    let (ptx, list, bad) = (
        ptx.to_str().unwrap(),
        list.to_str().unwrap(),
        bad.to_str().unwrap(),
    );

    let with_list = audit(&["--ptx", ptx, "--kernels", list]);
    let text = String::from_utf8_lossy(&with_list.stdout);
    assert!(with_list.status.success(), "{text}");
    assert!(
        text.contains("audit: OK, 8 entries, 8 optimizer entries with the clamp verified"),
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
    std::fs::remove_dir_all(std::path::Path::new(ptx).parent().unwrap()).unwrap();
}

#[test]
fn the_cli_audits_a_module_against_its_certificate_and_refuses_another_ptx() {
    let dir = std::env::temp_dir().join(format!("adamant-cli-cert-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ptx, ours, cert) = (
        dir.join("custom_optimizer_kernels.ptx"),
        dir.join("adamant_kernels.ptx"),
        dir.join("custom_optimizer_kernels.certificate.json"),
    );
    std::fs::write(&ptx, custom_optimizer::MODULE.ptx()).unwrap();
    std::fs::write(&ours, adamant_runtime::PTX).unwrap();
    std::fs::write(&cert, custom_optimizer::MODULE.certificate()).unwrap();
    let (ptx, ours, cert) = (
        ptx.to_str().unwrap(),
        ours.to_str().unwrap(),
        cert.to_str().unwrap(),
    );

    let certified = audit(&["--ptx", ptx, "--certificate", cert]);
    let text = String::from_utf8_lossy(&certified.stdout);
    assert!(certified.status.success(), "{text}");
    assert!(
        text.contains("certificate: 8 entries of set `custom_optimizer_kernels`"),
        "{text}"
    );
    assert!(
        text.contains("audit: OK, 8 entries, 8 optimizer entries with the clamp verified"),
        "{text}"
    );

    // adamant's own module with the example's certificate: refused before any audit, naming
    // both digests.
    let other = audit(&["--ptx", ours, "--certificate", cert]);
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(!other.status.success());
    let digest = adamant_kernels::certificate::ptx_sha256(adamant_runtime::PTX);
    assert!(
        err.contains("is not for this PTX") && err.contains(&digest),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
