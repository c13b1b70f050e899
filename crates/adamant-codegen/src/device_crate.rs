//! The path of the device crate, `adamant-device`, as the crate a macro expands in names it.
//!
//! Every path the macros generate into that crate (the ABI types, the clamp, the builtins, the
//! vector type, the `linkme` registration) starts with one [`DeviceCratePath`], resolved once per
//! expansion by [`DeviceCratePath::resolve`] from the expanding crate's `Cargo.toml`, so a
//! dependency renamed there (`kernels = { package = "adamant-device", .. }`) still resolves.
//! No generated token names `adamant_device` otherwise (`structure_tests::renamed_dependency`
//! checks every expansion for it).
use proc_macro2::{Ident, Span, TokenStream};
use proc_macro_crate::{crate_name, Error, FoundCrate};
use quote::{quote, ToTokens};

/// The package the generated code refers to.
pub const PACKAGE: &str = "adamant-device";

/// The absolute path of `adamant-device` in the expanding crate: `::adamant_device` or
/// `::<renamed>`.
#[derive(Clone, Debug)]
pub struct DeviceCratePath(Ident);

impl DeviceCratePath {
    /// The crate under its own name, `::adamant_device`. It is right inside `adamant-device`
    /// too, which declares `extern crate self as adamant_device;`.
    pub fn own_name() -> DeviceCratePath {
        DeviceCratePath::named("adamant_device")
    }

    /// The crate under `name`, the name the expanding crate's `Cargo.toml` gives it.
    pub fn named(name: &str) -> DeviceCratePath {
        DeviceCratePath(Ident::new(name, Span::call_site()))
    }

    /// The name of the crate where the macro expands, read by `proc-macro-crate` from the
    /// `Cargo.toml` in `CARGO_MANIFEST_DIR`:
    /// - `adamant-device` itself: `::adamant_device` (its `extern crate self`);
    /// - a dependency named `n` (renamed or not): `::n`;
    /// - a manifest that is read but lists no `adamant-device`: a compile error that says to
    ///   add the dependency. No path would resolve there (an absolute path names a crate the
    ///   manifest passes in), and one error naming the missing dependency beats one unresolved
    ///   path per generated item;
    /// - no manifest to read (`CARGO_MANIFEST_DIR` unset, no or unreadable `Cargo.toml`, no
    ///   workspace found): `::adamant_device`. That is not a Cargo build (Bazel, Buck, plain
    ///   `rustc`); those pass crates under their own names, and where it is missing the
    ///   unresolved path names the crate.
    pub fn resolve() -> syn::Result<DeviceCratePath> {
        match crate_name(PACKAGE) {
            Ok(FoundCrate::Itself) => Ok(DeviceCratePath::own_name()),
            Ok(FoundCrate::Name(name)) => Ok(DeviceCratePath::named(&name)),
            Err(Error::CrateNotFound { path, .. }) => Err(syn::Error::new(
                Span::call_site(),
                format!(
                    "the adamant kernel macros generate code that uses the `{PACKAGE}` crate, \
                     which is not a dependency in `{}`: add it under `[dependencies]` (renamed, \
                     as `name = {{ package = \"{PACKAGE}\", .. }}`, if you like)",
                    path.display()
                ),
            )),
            Err(_) => Ok(DeviceCratePath::own_name()),
        }
    }
}

impl ToTokens for DeviceCratePath {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let name = &self.0;
        tokens.extend(quote!(::#name));
    }
}

/// The cfg under which every generated entry compiles. adamant-build passes `--cfg` with this
/// name to the crate it compiles to PTX, and to no dependency, so a module holds its own crate's
/// entries only. (A proc-macro crate cannot export the constant; adamant-build keeps the same
/// name, and a drift would leave a module without its declared entries, which its module check
/// refuses.)
pub const ENTRIES_CFG: &str = "adamant_entries";

/// `#[cfg(adamant_entries)]`, for the block of entries.
pub fn entries_cfg() -> TokenStream {
    let name = Ident::new(ENTRIES_CFG, Span::call_site());
    quote! { #[cfg(#name)] }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test's `CARGO_MANIFEST_DIR` is this crate's, whose `Cargo.toml` does not depend on
    /// `adamant-device`: the one error names the package and the manifest.
    #[test]
    fn a_manifest_without_the_dependency_is_one_error_naming_it() {
        let e = DeviceCratePath::resolve().expect_err("adamant-codegen does not depend on it");
        let message = e.to_string();
        assert!(message.contains("`adamant-device`"), "{message}");
        assert!(message.contains("codegen/Cargo.toml"), "{message}");
        assert!(message.contains("[dependencies]"), "{message}");
    }

    #[test]
    fn the_path_is_absolute() {
        assert_eq!(
            DeviceCratePath::named("kernels")
                .to_token_stream()
                .to_string(),
            ":: kernels"
        );
        assert_eq!(
            DeviceCratePath::own_name().to_token_stream().to_string(),
            ":: adamant_device"
        );
    }
}
