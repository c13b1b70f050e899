//! The `#[optimizer_kernel]` / `#[kernel_entry]` contract, checked through rustc itself: every
//! route around the clamp epilogue in `tests/ui/<category>/` (`body`: what an optimizer body
//! may hold; `signature`: the kernel's declaration; `scalars`: scalar lifetimes, domains,
//! uniform pointers and scalar groups; `kernel_entry`: `#[kernel_entry]`; `host`: the
//! runtime's types; `fused`: `fused_optimizer!`'s rules) must be rejected with an error spanned on the offending tokens (the
//! committed `.stderr` files pin message and caret), and the kernels in `tests/ui/pass` must
//! build and run (their `main` checks the generated items).
//! `tests/ui/pass/renamed_dep` holds the fixture that uses the macros through a renamed
//! dependency; the package `tests/renamed-dep` runs it, since this package cannot depend on
//! adamant-device under a second name.
//!
//! Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test --test macro_expansion`,
//! then read every diff.
#[test]
fn macro_expansion() {
    let t = trybuild::TestCases::new();
    let categories = [
        "body",
        "signature",
        "scalars",
        "kernel_entry",
        "host",
        "fused",
    ];
    // A folder in no list would be skipped without a word.
    for entry in std::fs::read_dir("tests/ui").expect("tests/ui") {
        let name = entry.expect("a folder entry").file_name();
        let name = name.to_string_lossy();
        assert!(
            name == "pass" || categories.contains(&name.as_ref()),
            "tests/ui/{name} is in no category: add it to tests/cpu/macro_expansion.rs"
        );
    }
    for category in categories {
        t.compile_fail(format!("tests/ui/{category}/*.rs"));
    }
    t.pass("tests/ui/pass/*.rs");
}
