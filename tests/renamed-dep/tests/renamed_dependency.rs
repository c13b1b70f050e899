//! `tests/ui/pass/renamed_dep/*.rs` must build and run with `adamant-kernels` known only as
//! `kernels_renamed` (this package's dev-dependency): every path the macros generate is resolved
//! from the expanding crate's `Cargo.toml`.
#[test]
fn renamed_dependency() {
    trybuild::TestCases::new().pass("../ui/pass/renamed_dep/*.rs");
}
