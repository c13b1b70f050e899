//! The float methods an `#[optimizer_kernel]` body may not call, found by name on the syntax
//! tree (the body check knows no types).
//!
//! - std-only methods of `f32`/`f64` (`sqrt`, `powf`, `exp`, `mul_add`, `sin`, ...): `core` has
//!   no such method on the nvptx target, so the body compiles on the host, where the CPU tests
//!   run it, and fails only in the PTX build under dozens of lines of warnings. The error names
//!   the prelude function to use (`adamant_device::prelude`, `crate::math`), or says there is no
//!   device version;
//! - `min`, `max` and `clamp`: they exist on the device, but `f32::min`/`max` (PTX
//!   `min.f32`/`max.f32`, CUDA's `fminf`/`fmaxf`) return the other operand when one is NaN, so a
//!   NaN weight or moment silently disappears: the bug adamant exists for. `f32::clamp` asserts
//!   `lo <= hi` (a NaN bound fails it), a trap on the device that ends the whole launch. The
//!   prelude's `min`/`max` keep NaN.
//!
//! Caught as method calls with the method's own argument count (`x.powf(y)`, `x.max(y)`, so
//! `iter.max()` passes) and as paths whose last two segments are `f32`/`f64` and the name
//! (`f32::exp(x)`, `core::primitive::f32::exp`, `<f32>::exp`, `.fold(0.0, f32::max)`).
//!
//! The check goes by names only, so it can reject what is not a float method: a type of the
//! author's own with an `.exp()` method, or `a.max(b)` on integers. The error says how to call
//! those instead (`Type::exp(x)`, `core::cmp::max(a, b)`), which the check accepts; so do
//! trait-qualified paths (`<f32 as Trait>::exp`).
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Expr, ExprMethodCall, ExprPath, Type};

/// What replaces a rejected method.
enum Advice {
    /// A prelude function with the same meaning, as it is called.
    Prelude(&'static str),
    /// std-only, and the prelude has no device version.
    None,
    /// Exists on the device but drops NaN (or traps): the NaN-keeping prelude calls.
    NanKeeping(&'static str),
}

/// `(name, argument count of the method-call form, advice)`.
const METHODS: &[(&str, usize, Advice)] = &[
    ("sqrt", 0, Advice::Prelude("sqrt(x)")),
    ("mul_add", 2, Advice::Prelude("fma(x, a, b)")),
    ("exp", 0, Advice::Prelude("exp(x)")),
    ("ln", 0, Advice::Prelude("ln(x)")),
    ("powf", 1, Advice::Prelude("pow(x, y)")),
    ("powi", 1, Advice::Prelude("pow(x, n as f32)")),
    ("min", 1, Advice::NanKeeping("min(x, y)")),
    ("max", 1, Advice::NanKeeping("max(x, y)")),
    ("clamp", 2, Advice::NanKeeping("min(max(x, lo), hi)")),
    ("exp2", 0, Advice::None),
    ("exp_m1", 0, Advice::None),
    ("ln_1p", 0, Advice::None),
    ("log", 1, Advice::None),
    ("log2", 0, Advice::None),
    ("log10", 0, Advice::None),
    ("cbrt", 0, Advice::None),
    ("hypot", 1, Advice::None),
    ("sin", 0, Advice::None),
    ("cos", 0, Advice::None),
    ("tan", 0, Advice::None),
    ("sin_cos", 0, Advice::None),
    ("asin", 0, Advice::None),
    ("acos", 0, Advice::None),
    ("atan", 0, Advice::None),
    ("atan2", 1, Advice::None),
    ("sinh", 0, Advice::None),
    ("cosh", 0, Advice::None),
    ("tanh", 0, Advice::None),
    ("asinh", 0, Advice::None),
    ("acosh", 0, Advice::None),
    ("atanh", 0, Advice::None),
    ("floor", 0, Advice::None),
    ("ceil", 0, Advice::None),
    ("round", 0, Advice::None),
    ("round_ties_even", 0, Advice::None),
    ("trunc", 0, Advice::None),
    ("fract", 0, Advice::None),
    ("div_euclid", 1, Advice::None),
    ("rem_euclid", 1, Advice::None),
    ("abs_sub", 1, Advice::None),
    ("gamma", 0, Advice::None),
    ("ln_gamma", 0, Advice::None),
    ("erf", 0, Advice::None),
    ("erfc", 0, Advice::None),
];

const PRELUDE: &str = "adamant_device::prelude";

fn message(float: &str, name: &str, advice: &Advice, as_method: bool) -> String {
    let what = format!("`{float}::{name}`");
    let std_only = "does not exist on the GPU (it is std-only: the body compiles on the host and \
                    fails in the PTX build)";
    let mut text = match advice {
        Advice::Prelude(call) => format!("{what} {std_only}; use `{call}` from `{PRELUDE}`"),
        Advice::None => format!("{what} {std_only}, and `{PRELUDE}` has no device version of it"),
        Advice::NanKeeping(call) if name == "clamp" => format!(
            "{what} is not allowed in an #[optimizer_kernel] body: it asserts `lo <= hi`, which \
             a NaN bound fails, and on the GPU a failed assert traps and ends the whole launch; \
             use `{call}` from `{PRELUDE}`, which keep NaN"
        ),
        Advice::NanKeeping(call) => format!(
            "{what} drops a NaN operand (PTX `{name}.f32`, like CUDA's `f{name}f`), so a NaN \
             weight or moment would vanish; use `{call}` from `{PRELUDE}`, which keeps NaN"
        ),
    };
    if as_method {
        // The check knows names, not types: say how to call what is not a float method.
        let integers = match name {
            "min" | "max" => format!(", and on integers `core::cmp::{name}(a, b)`"),
            "clamp" => ", and on integers `Ord::clamp(x, lo, hi)`".to_string(),
            _ => String::new(),
        };
        text.push_str(&format!(
            " (the body check goes by the method's name: call a method of your own type as \
             `Type::{name}(..)`{integers})"
        ));
    }
    text
}

/// The tokens to span and the message, if `expr` calls or names a rejected float method:
/// `.powf(y)` of a method call (not its receiver, which may be long), `f32::powf(x, y)` of a
/// call through a path, the path anywhere else (`.fold(0.0, f32::max)`).
pub(super) fn rejected(expr: &Expr) -> Option<(TokenStream, String)> {
    match expr {
        Expr::MethodCall(call) => method_call(call).map(|m| (method_and_args(call), m)),
        Expr::Call(call) => match &*call.func {
            Expr::Path(p) => path(p).map(|m| (call.to_token_stream(), m)),
            _ => None,
        },
        Expr::Path(p) => path(p).map(|m| (p.to_token_stream(), m)),
        _ => None,
    }
}

/// `.name(args)` of a method call, without its receiver.
fn method_and_args(call: &ExprMethodCall) -> TokenStream {
    let mut tokens = TokenStream::new();
    call.dot_token.to_tokens(&mut tokens);
    call.method.to_tokens(&mut tokens);
    call.turbofish.to_tokens(&mut tokens);
    call.paren_token
        .surround(&mut tokens, |inner| call.args.to_tokens(inner));
    tokens
}

/// The error for `x.name(args)`, if `name` with that many arguments is rejected.
fn method_call(call: &ExprMethodCall) -> Option<String> {
    let name = call.method.to_string();
    METHODS
        .iter()
        .find(|(n, args, _)| *n == name && *args == call.args.len())
        .map(|(n, _, advice)| message("f32", n, advice, true))
}

/// The error for a path to a rejected method of `f32` or `f64`.
fn path(path: &ExprPath) -> Option<String> {
    let segments = &path.path.segments;
    let (float, name) = match &path.qself {
        // `<f32>::exp`; `<f32 as Trait>::exp` (position 1) is a trait's method.
        Some(qself) if qself.position == 0 && segments.len() == 1 => {
            (float_type(&qself.ty)?, segments[0].ident.to_string())
        }
        Some(_) => return None,
        None if segments.len() >= 2 => {
            let ty = &segments[segments.len() - 2].ident;
            let float = ["f32", "f64"].into_iter().find(|f| ty == f)?;
            (float, segments[segments.len() - 1].ident.to_string())
        }
        None => return None,
    };
    METHODS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(n, _, advice)| message(float, n, advice, false))
}

fn float_type(ty: &Type) -> Option<&'static str> {
    match ty {
        Type::Path(p) if p.qself.is_none() => {
            let last = &p.path.segments.last()?.ident;
            ["f32", "f64"].into_iter().find(|f| last == f)
        }
        Type::Paren(p) => float_type(&p.elem),
        Type::Group(g) => float_type(&g.elem),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    /// A method call's error covers `.powf(g)`, not the receiver (the fixture
    /// `tests/ui/body/body_float_powf.stderr` shows it through rustc).
    #[test]
    fn a_method_calls_span_is_the_method_and_its_arguments() {
        let call: Expr = syn::parse2(quote!((p * 2.0 + g).powf(g))).expect("a call");
        let (tokens, _) = rejected(&call).expect("rejected");
        assert_eq!(tokens.to_string(), ". powf (g)");
    }
}
