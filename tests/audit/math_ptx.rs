//! The prelude's float functions compile to plain PTX on the device: `device_math_kernel`
//! (`tests/feature-split/kernels`) calls every one of them, and its entries hold no call and
//! none of the instructions the host could not reproduce (`ex2.approx`, `lg2.approx`,
//! `rsqrt.approx`, flush-to-zero) or that drop NaN (`min.f32`, `max.f32`): only the correctly
//! rounded arithmetic the CPU tests of `crates/adamant-device/tests/math_prelude.rs` run on the host.
use adamant_build::ptx::extern_functions;
use feature_split::MODULE;

/// The text of entry `name`, up to the next entry.
fn entry<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("no entry {name}"));
    let rest = &ptx[start..];
    let end = rest[1..].find(".entry ").map_or(rest.len(), |i| i + 1);
    &rest[..end]
}

#[test]
fn every_prelude_function_compiles_to_plain_ptx() {
    let ptx = MODULE.ptx();
    // The PTX build refuses both (the module's only `.extern` is dynamic shared memory).
    assert_eq!(extern_functions(ptx), Vec::<String>::new());
    assert!(!ptx.contains(".func"));
    for name in [
        "device_math_kernel",
        "device_math_kernel_stepped",
        "device_math_kernel_multi",
        "device_math_kernel_multi_stepped",
    ] {
        let text = entry(ptx, name);
        let instructions: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("//"))
            .collect();
        for banned in [
            "call",
            "ex2.approx",
            "lg2.approx",
            "rsqrt.approx",
            "sqrt.approx",
            "div.approx",
            "div.full",
            "min.f32",
            "max.f32",
        ] {
            let found: Vec<&&str> = instructions
                .iter()
                .filter(|l| l.starts_with(banned))
                .collect();
            assert!(found.is_empty(), "{name}: {found:?}");
        }
        assert!(!text.contains(".ftz"), "{name} flushes subnormals");
        for needed in [
            "fma.rn.f32",
            "div.rn.f32",
            "sqrt.rn.f32",
            "mul.rn.f32",
            "add.rn.f32",
        ] {
            assert!(text.contains(needed), "{name} has no {needed}");
        }
    }
}
