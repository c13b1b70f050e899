//! The `#[optimizer_kernel]` / `#[kernel_entry]` contract, checked through rustc itself: every
//! route around the clamp epilogue in `tests/compile_fail` must be rejected with an error spanned
//! on the offending tokens (the committed `.stderr` files pin message and caret), and the
//! kernels in `tests/compile_pass` must build and run (their `main` checks the generated items).
//! `tests/compile_pass/renamed_dep` holds the fixture that uses the macros through a renamed
//! dependency; the package `tests/renamed-dep` runs it, since this package cannot depend on
//! adamant-kernels under a second name.
//!
//! Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test --test macro_expansion`,
//! then read every diff.
#[test]
fn macro_expansion() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail/*.rs");
    t.pass("tests/compile_pass/*.rs");
}
