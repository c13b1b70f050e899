//! The source check of a kernel crate, run by the PTX build ([`crate::KernelCrate`]) on every
//! file of the kernel crate's `src/`: no `asm!`, `global_asm!` or `naked_asm!`, by any path or alias (the identifier itself is
//! refused, so `use core::arch::asm as a;` is caught at the `use`). `asm!` also leaves a marker in
//! the PTX, which the module check refuses; module-level assembly leaves none, so it is stopped
//! here, at the source. Comments and strings are not identifiers, so prose may name them.
use proc_macro2::{TokenStream, TokenTree};

/// The assembly identifiers in `source`, in order, or why it cannot be tokenized (which is
/// itself a refusal: unreadable source is not checked source).
pub fn assembly_macros(source: &str) -> Result<Vec<String>, String> {
    let tokens: TokenStream = source
        .parse()
        .map_err(|e| format!("cannot tokenize: {e:?}"))?;
    let mut found = Vec::new();
    collect(tokens, &mut found);
    Ok(found)
}

fn collect(tokens: TokenStream, found: &mut Vec<String>) {
    for t in tokens {
        match t {
            TokenTree::Ident(i) => {
                let name = i.to_string();
                let name = name.trim_start_matches("r#");
                if ["asm", "global_asm", "naked_asm"].contains(&name) {
                    found.push(name.to_string());
                }
            }
            TokenTree::Group(g) => collect(g.stream(), found),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::assembly_macros;

    #[test]
    fn every_way_of_naming_assembly_is_found() {
        for (source, expected) in [
            (
                "fn f() { unsafe { core::arch::asm!(\"trap;\") } }",
                vec!["asm"],
            ),
            (
                "core::arch::global_asm!(\".global .b8 X[4];\");",
                vec!["global_asm"],
            ),
            (
                "use core::arch::asm as a; fn f() { unsafe { a!(\"\") } }",
                vec!["asm"],
            ),
            ("use core::arch::{global_asm as g};", vec!["global_asm"]),
            (
                "#[cfg(target_arch = \"nvptx64\")] mod m { core::arch::naked_asm!(\"\"); }",
                vec!["naked_asm"],
            ),
            (
                "macro_rules! m { () => { core::arch::r#asm!(\"\") } }",
                vec!["asm"],
            ),
        ] {
            assert_eq!(assembly_macros(source).unwrap(), expected, "{source}");
        }
    }

    #[test]
    fn prose_and_plain_code_pass() {
        let source = "/// Never uses asm! or global_asm!.\n// asm!(\"x\")\nfn f(x: f32) -> f32 { let s = \"asm!\"; x }";
        assert!(assembly_macros(source).unwrap().is_empty());
        let real = include_str!("../../adamant-kernels/src/nan_check.rs");
        assert!(assembly_macros(real).unwrap().is_empty());
    }

    #[test]
    fn unreadable_source_is_refused() {
        assert!(assembly_macros("fn f() { ").is_err());
    }
}
