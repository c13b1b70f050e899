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
