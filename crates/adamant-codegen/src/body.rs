//! The body check of an `#[optimizer_kernel]`: a walk of the body's syntax tree
//! (`syn::visit`), not of its tokens.
//!
//! The body is one element's math. It becomes `<kernel>::update`, is inlined into the generated
//! entries and runs on the device next to the clamp epilogue, so anything in it that could write
//! memory, or put a second entry into the PTX module, would be outside what the macro guarantees.
//! The walk rejects, each at the offending syntax:
//!
//! - `unsafe` in any form: blocks, `unsafe fn` / `impl` / `trait` / `extern` items, `unsafe fn`
//!   pointer types and `unsafe(..)` attributes (`#[unsafe(no_mangle)]`). Without `unsafe` no code
//!   in the body can dereference a raw pointer, so it writes only its own locals and the
//!   `#[state]` references the macro hands it;
//! - every macro invocation and definition (`macro_rules!`, `foo!(..)` in expression, statement,
//!   pattern, type or item position), except the paths in [`ALLOWED_MACROS`]: a macro's expansion
//!   is not part of the tree the macro receives, so it cannot be checked (a local `macro_rules!`
//!   can join tokens into an `unsafe` block; one defined outside the function can expand to
//!   anything). `asm!`, `global_asm!` and `naked_asm!` are macros too, with a message of their own;
//! - every nested item (fn, mod, static, const, extern crate, extern block, impl, trait,
//!   struct / enum / union, type alias, use, macro_rules): an item in the body is compiled into
//!   the PTX module as it is. A nested device entry (`extern "gpu-kernel"`, the ABI read as the
//!   string it denotes, so `extern r"gpu-kernel"` too) and a nested `unsafe fn` have messages of
//!   their own;
//! - attributes other than lints (`allow`, `expect`, `warn`, `deny`, `forbid`), doc comments and
//!   `#[rustfmt::skip]`: no `cfg` (the host build of the body, which the CPU tests run, is the
//!   device build), no `cfg_attr`, nothing that exports or places a symbol;
//! - syntax that syn keeps as unparsed tokens (`Verbatim`), which this walk cannot read;
//! - calls of float methods that do not exist on the device (`x.powf(y)`, `f32::exp(x)`: std-only)
//!   or drop NaN there (`x.max(y)`, `f32::min`; and `clamp`, which traps on a NaN bound), with an
//!   error that names the `adamant_device::prelude` function to use ([`float_methods`]; by name,
//!   since no types are known here).
//!
//! Calls of ordinary functions defined outside the kernel (`adam_step`) are allowed: the macro
//! cannot see their bodies. What they compile to is held to the clamp by the PTX audit, which
//! attributes every store of every entry to a declared buffer.
use std::fmt::Display;

use proc_macro2::{TokenStream, TokenTree};
use quote::{quote, ToTokens};
use syn::visit::{self, Visit};
use syn::{Attribute, Block, Expr, Item, Macro, Meta, Pat, Type};

mod float_methods;

/// Macros an `#[optimizer_kernel]` body may invoke, as absolute paths without the leading `::`
/// (`"core::matches"` would allow exactly `::core::matches!`). None: every macro hides its
/// expansion from this check, and the math the kernels need is written without one. A bare name
/// would not do even for a harmless macro, since a crate-local `macro_rules! matches` shadows the
/// standard one; an entry here must be an absolute path, and is matched only when the invocation
/// spells it with its leading `::`.
pub const ALLOWED_MACROS: &[&str] = &[];

/// Attributes accepted anywhere in the body and on the kernel's `fn`: lint levels and doc
/// comments (and `rustfmt::skip` in the body).
pub(crate) const ALLOWED_ATTRS: [&str; 6] = ["doc", "allow", "expect", "warn", "deny", "forbid"];

/// Attribute names that export or place a symbol: refused in an optimizer body, and on a
/// `#[kernel_entry]` (which exports the entry itself).
pub(crate) const EXPORTING: [&str; 4] = ["no_mangle", "export_name", "link_section", "used"];

const UNSAFE_BLOCK: &str = "an #[optimizer_kernel] body is safe per-element math: `unsafe` blocks \
are not allowed (they could write memory that no clamp guards)";

const UNSAFE_ATTR: &str = "an #[optimizer_kernel] body cannot use `unsafe(..)` attributes: each \
one asserts a safety obligation (`no_mangle`, `export_name`, `link_section`) that could export a \
second, unclamped entry or place code where no check sees it";

const UNSAFE_FN_TYPE: &str = "an #[optimizer_kernel] body is safe per-element math: `unsafe fn` \
pointer types are not allowed (calling one takes an `unsafe` block)";

const EXPORT: &str = "an #[optimizer_kernel] body is the per-element math: it cannot export a \
symbol (a nested exported item would be a second, unclamped entry)";

const ATTR: &str = "this attribute is not allowed in an #[optimizer_kernel] body: only lint \
attributes (allow, expect, warn, deny, forbid), doc comments and #[rustfmt::skip] are accepted \
(no `cfg` or `cfg_attr`: the body the CPU tests run on the host is the body the device runs)";

const NESTED_ENTRY: &str = "an #[optimizer_kernel] body cannot declare a device entry: every \
optimizer entry is generated by the macro, with the clamp epilogue";

const NESTED_UNSAFE_FN: &str = "an #[optimizer_kernel] body cannot define an `unsafe fn`: its \
body could write memory through raw pointers, where no clamp guards it";

const ASM: &str = "an #[optimizer_kernel] body cannot contain assembly (`asm!`, `global_asm!`, \
`naked_asm!`): inline assembly could store to any address, and module-level assembly could \
declare a second, unclamped entry; neither can be checked by the macro";

const VERBATIM: &str = "the #[optimizer_kernel] body check cannot read this syntax (syn keeps it \
as unparsed tokens), so it is not allowed in an optimizer kernel";

/// Checks an `#[optimizer_kernel]` body; the first violation, in source order, is the error.
pub fn check_body(block: &Block) -> syn::Result<()> {
    let mut walk = BodyCheck { error: None };
    walk.visit_block(block);
    if let Some(error) = walk.error {
        return Err(error);
    }
    no_unsafe_token(block.to_token_stream())
}

/// A backstop under the walk: no `unsafe` keyword anywhere in the body's tokens. Every place
/// where syn parses `unsafe` is rejected by the walk with its own message, and everything syn
/// leaves unparsed is rejected as `Verbatim`; this is what remains if a syn release adds a node
/// the walk does not know.
fn no_unsafe_token(tokens: TokenStream) -> syn::Result<()> {
    for token in tokens {
        match token {
            // `r#unsafe` is an identifier, not the keyword, and prints with its `r#`.
            TokenTree::Ident(ident) if ident == "unsafe" => {
                return Err(syn::Error::new_spanned(
                    ident,
                    "an #[optimizer_kernel] body is safe per-element math: `unsafe` is not \
                     allowed in it, in any form",
                ))
            }
            TokenTree::Group(group) => no_unsafe_token(group.stream())?,
            _ => {}
        }
    }
    Ok(())
}

struct BodyCheck {
    error: Option<syn::Error>,
}

impl BodyCheck {
    fn fail(&mut self, tokens: impl ToTokens, message: impl Display) {
        if self.error.is_none() {
            self.error = Some(syn::Error::new_spanned(tokens, message));
        }
    }

    fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// `unsafe(..)` and exporting attributes, wherever they are. Returns whether it failed.
    fn check_unsafe_or_exporting_attr(&mut self, attr: &Attribute) -> bool {
        if attr.path().is_ident("unsafe") {
            self.fail(attr, UNSAFE_ATTR);
            return true;
        }
        if mentions_any(attr.meta.to_token_stream(), &EXPORTING) {
            self.fail(attr, EXPORT);
            return true;
        }
        false
    }

    fn check_macro(&mut self, mac: &Macro, definition: Option<&syn::Ident>) {
        let path = &mac.path;
        let bang = &mac.bang_token;
        if let Some(name) = definition {
            self.fail(
                quote!(#path #bang #name),
                "an #[optimizer_kernel] body cannot define macros: a macro's expansion is not \
                 part of the syntax tree the macro checks (a local `macro_rules!` can join tokens \
                 into an `unsafe` block or an exported item)",
            );
            return;
        }
        let last = path.segments.last().map(|s| s.ident.to_string());
        if matches!(
            last.as_deref(),
            Some("asm" | "global_asm" | "naked_asm" | "llvm_asm")
        ) {
            self.fail(quote!(#path #bang), ASM);
            return;
        }
        if is_allowed_macro(path) {
            return;
        }
        let name = path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect::<Vec<_>>()
            .join("::");
        self.fail(
            quote!(#path #bang),
            format!(
                "macro invocations are not allowed in an #[optimizer_kernel] body: the macro \
                 cannot see what `{name}!` expands to (an `unsafe` block, an exported item), so \
                 it cannot check it; write the code out (see ALLOWED_MACROS in \
                 crates/adamant-codegen/src/body.rs: none are allowed)"
            ),
        );
    }

    fn check_item(&mut self, item: &Item) {
        let attrs: &[Attribute] = match item {
            Item::Const(i) => &i.attrs,
            Item::Enum(i) => &i.attrs,
            Item::ExternCrate(i) => &i.attrs,
            Item::Fn(i) => &i.attrs,
            Item::ForeignMod(i) => &i.attrs,
            Item::Impl(i) => &i.attrs,
            Item::Macro(i) => &i.attrs,
            Item::Mod(i) => &i.attrs,
            Item::Static(i) => &i.attrs,
            Item::Struct(i) => &i.attrs,
            Item::Trait(i) => &i.attrs,
            Item::TraitAlias(i) => &i.attrs,
            Item::Type(i) => &i.attrs,
            Item::Union(i) => &i.attrs,
            Item::Use(i) => &i.attrs,
            _ => &[],
        };
        for attr in attrs {
            if self.check_unsafe_or_exporting_attr(attr) {
                return;
            }
        }
        let nested = |kind: &str| {
            format!(
                "an #[optimizer_kernel] body is the per-element math: it cannot contain items \
                 (here {kind}): an item nested in the body is compiled into the PTX module \
                 unchecked; define it outside the kernel"
            )
        };
        match item {
            Item::Fn(f) => {
                let sig = &f.sig;
                let is_entry = sig.abi.as_ref().is_some_and(|abi| {
                    abi.name
                        .as_ref()
                        .is_some_and(|n| matches!(n.value().as_str(), "gpu-kernel" | "ptx-kernel"))
                });
                if is_entry {
                    self.fail(&sig.abi, NESTED_ENTRY);
                } else if let Some(token) = &sig.unsafety {
                    self.fail(token, NESTED_UNSAFE_FN);
                } else {
                    let (abi, fn_token, ident) = (&sig.abi, &sig.fn_token, &sig.ident);
                    self.fail(quote!(#abi #fn_token #ident), nested("a `fn`"));
                }
            }
            Item::Macro(m) => self.check_macro(&m.mac, m.ident.as_ref()),
            Item::Impl(i) => match &i.unsafety {
                Some(token) => self.fail(token, UNSAFE_ITEM),
                None => self.fail(i.impl_token, nested("an `impl`")),
            },
            Item::Trait(t) => match &t.unsafety {
                Some(token) => self.fail(token, UNSAFE_ITEM),
                None => {
                    let (trait_token, ident) = (&t.trait_token, &t.ident);
                    self.fail(quote!(#trait_token #ident), nested("a `trait`"));
                }
            },
            Item::ForeignMod(m) => match &m.unsafety {
                Some(token) => self.fail(token, UNSAFE_ITEM),
                None => self.fail(
                    &m.abi,
                    nested("an `extern` block, which would import symbols into the PTX module"),
                ),
            },
            Item::Mod(m) => {
                let (mod_token, ident) = (&m.mod_token, &m.ident);
                if let Some(token) = &m.unsafety {
                    self.fail(token, UNSAFE_ITEM);
                } else {
                    self.fail(quote!(#mod_token #ident), nested("a `mod`"));
                }
            }
            Item::Static(s) => {
                let (static_token, mutability, ident) = (&s.static_token, &s.mutability, &s.ident);
                self.fail(
                    quote!(#static_token #mutability #ident),
                    nested("a `static`"),
                );
            }
            Item::Const(c) => {
                let (const_token, ident) = (&c.const_token, &c.ident);
                self.fail(quote!(#const_token #ident), nested("a `const` item"));
            }
            Item::ExternCrate(e) => {
                let (extern_token, crate_token, ident) =
                    (&e.extern_token, &e.crate_token, &e.ident);
                self.fail(
                    quote!(#extern_token #crate_token #ident),
                    nested("an `extern crate`"),
                );
            }
            Item::Struct(s) => {
                let (struct_token, ident) = (&s.struct_token, &s.ident);
                self.fail(quote!(#struct_token #ident), nested("a `struct`"));
            }
            Item::Enum(e) => {
                let (enum_token, ident) = (&e.enum_token, &e.ident);
                self.fail(quote!(#enum_token #ident), nested("an `enum`"));
            }
            Item::Union(u) => {
                let (union_token, ident) = (&u.union_token, &u.ident);
                self.fail(quote!(#union_token #ident), nested("a `union`"));
            }
            Item::TraitAlias(t) => {
                let (trait_token, ident) = (&t.trait_token, &t.ident);
                self.fail(quote!(#trait_token #ident), nested("a trait alias"));
            }
            Item::Type(t) => {
                let (type_token, ident) = (&t.type_token, &t.ident);
                self.fail(quote!(#type_token #ident), nested("a `type` alias"));
            }
            Item::Use(u) => {
                let (use_token, tree) = (&u.use_token, &u.tree);
                self.fail(quote!(#use_token #tree), nested("a `use`"));
            }
            Item::Verbatim(tokens) => self.fail(tokens, VERBATIM),
            other => self.fail(other, nested("an item")),
        }
    }
}

const UNSAFE_ITEM: &str = "an #[optimizer_kernel] body is safe per-element math: `unsafe` items \
(`unsafe impl`, `unsafe trait`, `unsafe extern`, `unsafe mod`) are not allowed in it";

/// Whether `path` is one of [`ALLOWED_MACROS`], spelled as an absolute path.
fn is_allowed_macro(path: &syn::Path) -> bool {
    if path.leading_colon.is_none() {
        return false;
    }
    let spelled: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    ALLOWED_MACROS.iter().any(|allowed| {
        let allowed: Vec<&str> = allowed.split("::").collect();
        allowed == spelled
    })
}

/// Whether any identifier in `tokens`, at any depth, is one of `names`.
fn mentions_any(tokens: TokenStream, names: &[&str]) -> bool {
    tokens.into_iter().any(|t| match t {
        TokenTree::Ident(id) => names.iter().any(|n| id == n),
        TokenTree::Group(g) => mentions_any(g.stream(), names),
        _ => false,
    })
}

impl<'ast> Visit<'ast> for BodyCheck {
    fn visit_expr(&mut self, expr: &'ast Expr) {
        if self.failed() {
            return;
        }
        match expr {
            Expr::Unsafe(u) => {
                for attr in &u.attrs {
                    self.visit_attribute(attr);
                }
                self.fail(u.unsafe_token, UNSAFE_BLOCK);
            }
            Expr::Verbatim(tokens) => self.fail(tokens, VERBATIM),
            _ => {
                if let Some((call, message)) = float_methods::rejected(expr) {
                    self.fail(call, message);
                }
                visit::visit_expr(self, expr);
            }
        }
    }

    fn visit_item(&mut self, item: &'ast Item) {
        // Not walked into: the item itself is the error.
        self.check_item(item);
    }

    fn visit_macro(&mut self, mac: &'ast Macro) {
        // Not walked into: a macro's tokens are not syntax until expanded.
        self.check_macro(mac, None);
    }

    fn visit_attribute(&mut self, attr: &'ast Attribute) {
        if self.check_unsafe_or_exporting_attr(attr) {
            return;
        }
        let path = attr.path();
        let lint_or_doc = ALLOWED_ATTRS.iter().any(|name| path.is_ident(name));
        let rustfmt_skip = matches!(attr.meta, Meta::Path(_))
            && path.leading_colon.is_none()
            && path.segments.len() == 2
            && path.segments[0].ident == "rustfmt"
            && path.segments[1].ident == "skip";
        // A doc comment is `#[doc = "literal"]`; `#[doc = some_macro!()]` would be a macro.
        let doc_not_literal = path.is_ident("doc")
            && !matches!(&attr.meta, Meta::NameValue(nv) if matches!(nv.value, Expr::Lit(_)));
        if doc_not_literal {
            if let Meta::NameValue(nv) = &attr.meta {
                self.visit_expr(&nv.value);
            }
            self.fail(attr, ATTR);
        } else if !lint_or_doc && !rustfmt_skip {
            self.fail(attr, ATTR);
        }
    }

    fn visit_type(&mut self, ty: &'ast Type) {
        match ty {
            Type::BareFn(f) if f.unsafety.is_some() => self.fail(f.unsafety, UNSAFE_FN_TYPE),
            Type::Verbatim(tokens) => self.fail(tokens, VERBATIM),
            _ => visit::visit_type(self, ty),
        }
    }

    fn visit_pat(&mut self, pat: &'ast Pat) {
        match pat {
            Pat::Verbatim(tokens) => self.fail(tokens, VERBATIM),
            _ => visit::visit_pat(self, pat),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_backstop_finds_unsafe_anywhere() {
        let tokens = quote!({ let x = [(1, { unsafe })]; });
        let err = no_unsafe_token(tokens).expect_err("unsafe in the tokens");
        assert!(err.to_string().contains("in any form"), "{err}");
        assert!(no_unsafe_token(quote!({
            let r#unsafe = 1.0;
            r#unsafe
        }))
        .is_ok());
    }

    #[test]
    fn allowed_macros_are_absolute_paths() {
        // The list is empty: nothing is allowed, whatever its spelling.
        for path in ["matches", "::core::matches", "core::matches", "::std::vec"] {
            let path: syn::Path = syn::parse_str(path).expect("a path");
            assert!(!is_allowed_macro(&path), "{}", quote!(#path));
        }
        for allowed in ALLOWED_MACROS {
            assert!(
                !allowed.starts_with("::"),
                "{allowed}: without the leading ::"
            );
            let path: syn::Path = syn::parse_str(&format!("::{allowed}")).expect("a path");
            assert!(is_allowed_macro(&path));
            let bare: syn::Path = syn::parse_str(allowed).expect("a path");
            assert!(
                !is_allowed_macro(&bare),
                "{allowed} must be spelled with its leading ::"
            );
        }
    }

    fn error(body: TokenStream) -> String {
        let block: Block = syn::parse2(body).expect("a block");
        match check_body(&block) {
            Ok(()) => String::new(),
            Err(e) => e.to_string(),
        }
    }

    /// Every rejection, on the shortest body that shows it (the trybuild fixtures in
    /// tests/ui pin message and span of the same cases through rustc).
    #[test]
    fn rejections() {
        let cases: Vec<(&str, TokenStream)> =
            vec![
            ("`unsafe` blocks", quote!({ unsafe { 1.0 } })),
            (
                "`unsafe` blocks",
                quote!({
                    let f = |x: f32| unsafe { x };
                    f(1.0)
                }),
            ),
            (
                "`unsafe` blocks",
                quote!({
                    let a: [f32; { unsafe { 1 } }] = [0.0];
                    a[0]
                }),
            ),
            (
                "define macros",
                quote!({
                    macro_rules! m {
                        () => {};
                    }
                    1.0
                }),
            ),
            (
                "`poke!` expands",
                quote!({
                    poke!();
                    1.0
                }),
            ),
            (
                "`core::matches!` expands",
                quote!({
                    ::core::matches!(1, 1);
                    1.0
                }),
            ),
            (
                "`m!` expands",
                quote!({
                    let x: m!() = 1.0;
                    x
                }),
            ),
            (
                "`m!` expands",
                quote!({
                    match 1 {
                        m!() => 1.0,
                        _ => 0.0,
                    }
                }),
            ),
            (
                "`m!` expands",
                quote!({
                    m! {}
                    1.0
                }),
            ),
            (
                "assembly",
                quote!({
                    asm!("");
                    1.0
                }),
            ),
            (
                "assembly",
                quote!({
                    core::arch::asm!("");
                    1.0
                }),
            ),
            (
                "assembly",
                quote!({
                    ::core::arch::global_asm!("");
                    1.0
                }),
            ),
            (
                "assembly",
                quote!({
                    naked_asm!("");
                    1.0
                }),
            ),
            (
                "declare a device entry",
                quote!({
                    unsafe extern "gpu-kernel" fn e() {}
                    1.0
                }),
            ),
            (
                "declare a device entry",
                quote!({
                    extern "gpu-kernel" fn e() {}
                    1.0
                }),
            ),
            (
                "declare a device entry",
                quote!({
                    extern "ptx-kernel" fn e() {}
                    1.0
                }),
            ),
            (
                "an `unsafe fn`",
                quote!({
                    unsafe fn f() {}
                    1.0
                }),
            ),
            (
                "(here a `fn`)",
                quote!({
                    fn f() {}
                    1.0
                }),
            ),
            (
                "(here a `fn`)",
                quote!({
                    extern "C" fn f() {}
                    1.0
                }),
            ),
            (
                "(here a `mod`)",
                quote!({
                    mod m {}
                    1.0
                }),
            ),
            (
                "(here a `static`)",
                quote!({
                    static mut S: f32 = 0.0;
                    1.0
                }),
            ),
            (
                "(here a `const` item)",
                quote!({
                    const C: f32 = 0.0;
                    C
                }),
            ),
            (
                "(here an `extern crate`)",
                quote!({
                    extern crate core;
                    1.0
                }),
            ),
            (
                "(here an `extern` block",
                quote!({
                    extern "C" {
                        fn f();
                    }
                    1.0
                }),
            ),
            (
                "`unsafe` items",
                quote!({
                    unsafe extern "C" {
                        fn f();
                    }
                    1.0
                }),
            ),
            (
                "(here an `impl`)",
                quote!({
                    impl S {}
                    1.0
                }),
            ),
            (
                "`unsafe` items",
                quote!({
                    unsafe impl Send for S {}
                    1.0
                }),
            ),
            (
                "(here a `trait`)",
                quote!({
                    trait T {}
                    1.0
                }),
            ),
            (
                "`unsafe` items",
                quote!({
                    unsafe trait T {}
                    1.0
                }),
            ),
            (
                "(here a `struct`)",
                quote!({
                    struct S;
                    1.0
                }),
            ),
            (
                "(here an `enum`)",
                quote!({
                    enum E {}
                    1.0
                }),
            ),
            (
                "(here a `union`)",
                quote!({
                    union U {
                        a: f32,
                    }
                    1.0
                }),
            ),
            (
                "(here a `type` alias)",
                quote!({
                    type T = f32;
                    1.0
                }),
            ),
            (
                "(here a `use`)",
                quote!({
                    use core::f32;
                    1.0
                }),
            ),
            (
                "`unsafe(..)` attributes",
                quote!({
                    #[unsafe(no_mangle)]
                    fn f() {}
                    1.0
                }),
            ),
            (
                "`unsafe(..)` attributes",
                quote!({
                    #[unsafe(export_name = "x")]
                    fn f() {}
                    1.0
                }),
            ),
            (
                "`unsafe(..)` attributes",
                quote!({
                    #[unsafe(no_mangle)]
                    let x = 1.0;
                    x
                }),
            ),
            (
                "cannot export a symbol",
                quote!({
                    #[no_mangle]
                    fn f() {}
                    1.0
                }),
            ),
            (
                "cannot export a symbol",
                quote!({
                    #[cfg_attr(all(), no_mangle)]
                    fn f() {}
                    1.0
                }),
            ),
            (
                "cannot export a symbol",
                quote!({
                    #[link_section = ".x"]
                    static S: f32 = 0.0;
                    S
                }),
            ),
            (
                "cannot export a symbol",
                quote!({
                    #[used]
                    static S: f32 = 0.0;
                    S
                }),
            ),
            (
                "only lint attributes",
                quote!({
                    #[cfg(target_arch = "nvptx64")]
                    let x = 2.0;
                    x
                }),
            ),
            (
                "only lint attributes",
                quote!({
                    #[cfg_attr(all(), allow(unused))]
                    let x = 2.0;
                    x
                }),
            ),
            (
                "only lint attributes",
                quote!({
                    let f = #[inline]
                    || 1.0;
                    f()
                }),
            ),
            (
                "`m!` expands",
                quote!({
                    #[doc = m!()]
                    let x = 1.0;
                    x
                }),
            ),
            (
                "only lint attributes",
                quote!({
                    #[doc(hidden)]
                    let x = 1.0;
                    x
                }),
            ),
            (
                "`unsafe fn` pointer types",
                quote!({
                    let f: unsafe fn() = g;
                    1.0
                }),
            ),
            (
                "`unsafe fn` pointer types",
                quote!({
                    let f: Option<unsafe extern "C" fn()> = None;
                    1.0
                }),
            ),
            (
                "cannot read this syntax",
                "{ let x = builtin # offset_of(S, a); 1.0 }"
                    .parse()
                    .expect("tokens"),
            ),
            (
                "`f32::powf` does not exist on the GPU (it is std-only: the body compiles on the \
                 host and fails in the PTX build); use `pow(x, y)` from \
                 `adamant_device::prelude` (the body check goes by the method's name",
                quote!({ p.powf(g) }),
            ),
            ("use `sqrt(x)` from", quote!({ p / v.sqrt() })),
            ("use `fma(x, a, b)` from", quote!({ p.mul_add(lr, g) })),
            ("use `exp(x)` from", quote!({ (-g).exp() })),
            ("use `ln(x)` from", quote!({ g.ln() })),
            ("use `pow(x, n as f32)` from", quote!({ p.powi(2) })),
            (
                "use `exp(x)` from",
                quote!({
                    let f = |x: f32| x.exp();
                    f(p)
                }),
            ),
            ("`f32::exp` does not exist on the GPU", quote!({ f32::exp(g) })),
            ("`f32::ln` does not exist", quote!({ <f32>::ln(g) })),
            ("`f32::sqrt` does not exist", quote!({ ::core::primitive::f32::sqrt(g) })),
            ("`f64::exp` does not exist", quote!({ f64::exp(1.0) as f32 })),
            ("`f32::sin` does not exist on the GPU", quote!({ g.sin() })),
            ("has no device version of it", quote!({ g.tanh() })),
            ("has no device version of it", quote!({ f32::floor(g) })),
            ("has no device version of it", quote!({ g.atan2(p) })),
            (
                "`f32::max` drops a NaN operand (PTX `max.f32`, like CUDA's `fmaxf`), so a NaN \
                 weight or moment would vanish; use `max(x, y)` from `adamant_device::prelude`, \
                 which keeps NaN (the body check goes by the method's name: call a method of \
                 your own type as `Type::max(..)`, and on integers `core::cmp::max(a, b)`)",
                quote!({ p.max(g) }),
            ),
            ("use `min(x, y)` from", quote!({ p.min(0.0) })),
            ("`f32::max` drops a NaN operand", quote!({ [p, g].into_iter().fold(0.0, f32::max) })),
            ("`f32::min` drops a NaN operand", quote!({ f32::min(p, g) })),
            (
                "a failed assert traps and ends the whole launch; use `min(max(x, lo), hi)`",
                quote!({ p.clamp(-1.0, 1.0) }),
            ),
        ];
        for (want, body) in cases {
            let got = error(body.clone());
            assert!(
                got.contains(want),
                "`{body}`: expected an error with `{want}`, got `{got}`"
            );
        }
    }

    #[test]
    fn math_passes() {
        for body in [
            quote!({ p - lr * g }),
            quote!({
                let s = {
                    #![allow(clippy::neg_multiply)]
                    AdamScalars { lr, beta1 }
                };
                #[allow(unused_mut)]
                let mut x = adam_step(p, l2_decay(g, p, weight_decay), m, v, s);
                #[rustfmt::skip]
                /// A doc comment on a statement.
                let y = if x.is_nan() { x } else { max(x, 0.0) };
                for i in 0..4 {
                    x += i as f32;
                }
                let f = |a: f32| a * 2.0;
                let r#unsafe = 1.0;
                match step {
                    0 => f(y) * r#unsafe,
                    _ => {
                        *m = 0.5;
                        x
                    }
                }
            }),
            // The prelude's math, and what core has on the device.
            quote!({
                let a = max(min(p, g), 0.0) + pow(p, 2.0) * exp(g) - ln(g) * rsqrt(v);
                a + sqrt(p) + fma(p, g, 1.0) + abs(g) + p.abs() + p.copysign(g) + p.recip()
            }),
            // What only shares a rejected name: an iterator's `max()` (no argument), integer
            // `min`/`max`/`clamp` as paths, float constants, a method of another type as a
            // path, a trait-qualified path.
            quote!({
                let n = (0..4u32).max().unwrap_or(0);
                let i = core::cmp::max(n, 2) + Ord::min(n, 1) + Ord::clamp(n, 0, 3);
                let c = f32::MAX + core::f32::consts::PI + f32::EPSILON + f64::MIN_POSITIVE as f32;
                i as f32 + c + Model::exp(p) + <f32 as Softplus>::exp(g)
            }),
        ] {
            assert_eq!(error(body.clone()), "", "`{body}`");
        }
    }
}
