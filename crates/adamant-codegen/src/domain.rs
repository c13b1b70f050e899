//! `#[domain(gt = .., ge = .., lt = .., le = ..)]` on an `f32` scalar argument of an
//! `#[optimizer_kernel]`: the values a launch may pass. The macro writes it into the entry's
//! descriptor as `ParamRole::Scalar { domain: Domain { lower, upper, finite: true } }`
//! (`adamant_device::abi::Domain`), and the runtime checks every launch's scalars against it
//! before anything is enqueued. An `f32` scalar without the attribute gets `Domain::FINITE`; a
//! `u32` scalar `Domain::ANY` (the attribute is rejected there: a bound on an integer would need
//! integer limits, which the ABI does not have).
use proc_macro2::{Literal, TokenStream};
use quote::{quote, ToTokens};

use crate::device_crate::DeviceCratePath;
use syn::{Attribute, Expr, Lit, Meta, UnOp};

/// One end of a domain, as written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    None,
    Inclusive(f32),
    Exclusive(f32),
}

/// The domain of an `f32` scalar: always finite, within `lower` and `upper`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Domain {
    pub lower: Limit,
    pub upper: Limit,
}

impl Domain {
    /// Any finite value (an `f32` scalar without `#[domain]`).
    pub const FINITE: Domain = Domain {
        lower: Limit::None,
        upper: Limit::None,
    };

    /// The `<kernels>::abi::Domain` expression for an `f32` scalar with this domain.
    pub fn f32_tokens(&self, kernels: &DeviceCratePath) -> TokenStream {
        if *self == Domain::FINITE {
            return quote!(#kernels::abi::Domain::FINITE);
        }
        let (lower, upper) = (
            limit_tokens(self.lower, kernels),
            limit_tokens(self.upper, kernels),
        );
        quote! {
            #kernels::abi::Domain {
                lower: #lower,
                upper: #upper,
                finite: true,
            }
        }
    }
}

fn limit_tokens(limit: Limit, kernels: &DeviceCratePath) -> TokenStream {
    match limit {
        Limit::None => quote!(#kernels::abi::Limit::None),
        Limit::Inclusive(v) => {
            let v = f32_tokens(v);
            quote!(#kernels::abi::Limit::Inclusive(#v))
        }
        Limit::Exclusive(v) => {
            let v = f32_tokens(v);
            quote!(#kernels::abi::Limit::Exclusive(#v))
        }
    }
}

/// `v` as an f32 expression: a literal that prints `v` exactly (shortest round-trip form), with
/// the sign as a separate `-` (a literal token is never negative).
fn f32_tokens(v: f32) -> TokenStream {
    let magnitude = Literal::f32_unsuffixed(v.abs());
    if v.is_sign_negative() {
        quote!(-#magnitude)
    } else {
        quote!(#magnitude)
    }
}

pub const HELP: &str = "#[domain] bounds the values a launch may pass for this scalar, like \
`#[domain(ge = 0.0, lt = 1.0)]`: `gt` / `ge` (lower, exclusive / inclusive) and `lt` / `le` (upper), \
each an f32 literal; the value must be finite in any case";

/// Whether `attr` is `#[domain..]`.
pub fn is_domain(attr: &Attribute) -> bool {
    attr.path().is_ident("domain")
}

/// Parses `#[domain(..)]`: at most one lower and one upper bound, finite f32 literals, and a
/// domain that holds at least one value.
pub fn parse(attr: &Attribute) -> syn::Result<Domain> {
    let Meta::List(list) = &attr.meta else {
        return Err(syn::Error::new_spanned(attr, HELP));
    };
    let mut lower: Option<(String, Limit)> = None;
    let mut upper: Option<(String, Limit)> = None;
    attr.parse_nested_meta(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_default();
        let (side, inclusive, what) = match key.as_str() {
            "gt" => (&mut lower, false, "from below"),
            "ge" => (&mut lower, true, "from below"),
            "lt" => (&mut upper, false, "from above"),
            "le" => (&mut upper, true, "from above"),
            _ => {
                return Err(meta.error(
                    "unknown bound: #[domain] takes `gt`, `ge` (lower) and `lt`, `le` (upper)",
                ))
            }
        };
        if let Some((previous, _)) = side {
            let message = if *previous == key {
                format!("`{key}` is given more than once")
            } else {
                format!(
                    "`{previous}` and `{key}` both bound the value {what}: give one of them \
                     (`gt`/`lt` exclude the value itself, `ge`/`le` include it)"
                )
            };
            return Err(meta.error(message));
        }
        if !meta.input.peek(syn::Token![=]) {
            return Err(meta.error(format!("expected `{key} = <f32 literal>`")));
        }
        let expr: Expr = meta.value()?.parse()?;
        let value = f32_literal(&expr)?;
        *side = Some((
            key,
            if inclusive {
                Limit::Inclusive(value)
            } else {
                Limit::Exclusive(value)
            },
        ));
        Ok(())
    })?;
    let domain = Domain {
        lower: lower.map_or(Limit::None, |(_, l)| l),
        upper: upper.map_or(Limit::None, |(_, u)| u),
    };
    if domain == Domain::FINITE {
        return Err(syn::Error::new_spanned(attr, HELP));
    }
    check_not_empty(&domain, &list.tokens)?;
    Ok(domain)
}

/// A domain with no value in it would reject every launch.
fn check_not_empty(domain: &Domain, bounds: &TokenStream) -> syn::Result<()> {
    let (lower, lower_inclusive) = match domain.lower {
        Limit::None => return Ok(()),
        Limit::Inclusive(l) => (l, true),
        Limit::Exclusive(l) => (l, false),
    };
    let (upper, upper_inclusive) = match domain.upper {
        Limit::None => return Ok(()),
        Limit::Inclusive(u) => (u, true),
        Limit::Exclusive(u) => (u, false),
    };
    let empty = lower > upper || (lower == upper && !(lower_inclusive && upper_inclusive));
    if empty {
        return Err(syn::Error::new_spanned(
            bounds,
            format!(
                "this domain holds no value (lower bound {lower:?} {} upper bound {upper:?}): \
                 every launch would be rejected",
                if lower == upper { "meets" } else { "is above" }
            ),
        ));
    }
    Ok(())
}

/// `1.0`, `-0.5`, `1e-8`, `2.0f32`: a float literal, maybe negated, that is a finite f32.
fn f32_literal(expr: &Expr) -> syn::Result<f32> {
    let (negative, inner) = match expr {
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => (true, &*u.expr),
        other => (false, other),
    };
    let lit = match inner {
        Expr::Lit(lit) => match &lit.lit {
            Lit::Float(f) if matches!(f.suffix(), "" | "f32") => f,
            _ => return Err(not_a_literal(expr)),
        },
        _ => return Err(not_a_literal(expr)),
    };
    let value: f32 = lit.base10_parse()?;
    if !value.is_finite() {
        return Err(syn::Error::new_spanned(
            expr,
            format!(
                "`{}` is not a finite f32 (it rounds to {value}): a domain's bounds are finite",
                expr.to_token_stream()
            ),
        ));
    }
    Ok(if negative { -value } else { value })
}

fn not_a_literal(expr: &Expr) -> syn::Error {
    syn::Error::new_spanned(
        expr,
        "a domain bound is an f32 literal, like `0.0` or `-1.5` (the macro writes it into the \
         descriptor, so it cannot be a path or an expression)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domain(attr: TokenStream) -> Result<Domain, String> {
        let attr: Attribute = syn::parse_quote!(#attr);
        parse(&attr).map_err(|e| e.to_string())
    }

    #[test]
    fn parses_bounds() {
        assert_eq!(
            domain(quote!(#[domain(ge = 0.0, lt = 1.0)])),
            Ok(Domain {
                lower: Limit::Inclusive(0.0),
                upper: Limit::Exclusive(1.0)
            })
        );
        assert_eq!(
            domain(quote!(#[domain(le = 1.0, gt = -2.5f32)])),
            Ok(Domain {
                lower: Limit::Exclusive(-2.5),
                upper: Limit::Inclusive(1.0)
            })
        );
        assert_eq!(
            domain(quote!(#[domain(gt = 1e-8)])),
            Ok(Domain {
                lower: Limit::Exclusive(1e-8),
                upper: Limit::None
            })
        );
        assert_eq!(
            domain(quote!(#[domain(ge = 1.0, le = 1.0)])),
            Ok(Domain {
                lower: Limit::Inclusive(1.0),
                upper: Limit::Inclusive(1.0)
            })
        );
    }

    #[test]
    fn rejects() {
        for (attr, want) in [
            (quote!(#[domain]), "#[domain] bounds the values"),
            (quote!(#[domain()]), "#[domain] bounds the values"),
            (quote!(#[domain = 1.0]), "#[domain] bounds the values"),
            (
                quote!(#[domain(gt = 0.0, ge = 0.0)]),
                "`gt` and `ge` both bound",
            ),
            (
                quote!(#[domain(lt = 1.0, le = 1.0)]),
                "`lt` and `le` both bound",
            ),
            (
                quote!(#[domain(ge = 0.0, ge = 1.0)]),
                "`ge` is given more than once",
            ),
            (quote!(#[domain(min = 0.0)]), "unknown bound"),
            (quote!(#[domain(ge)]), "expected `ge = <f32 literal>`"),
            (quote!(#[domain(ge = f32::EPSILON)]), "an f32 literal"),
            (quote!(#[domain(ge = 0)]), "an f32 literal"),
            (quote!(#[domain(ge = 0.0f64)]), "an f32 literal"),
            (quote!(#[domain(ge = 1.0 + 1.0)]), "an f32 literal"),
            (quote!(#[domain(lt = 1e39)]), "not a finite f32"),
            (quote!(#[domain(gt = -1e39)]), "not a finite f32"),
            (quote!(#[domain(ge = 2.0, le = 1.0)]), "holds no value"),
            (quote!(#[domain(gt = 1.0, le = 1.0)]), "holds no value"),
            (quote!(#[domain(ge = 1.0, lt = 1.0)]), "holds no value"),
        ] {
            match domain(attr.clone()) {
                Err(e) if e.contains(want) => {}
                other => panic!("`{attr}`: expected an error with `{want}`, got {other:?}"),
            }
        }
    }

    #[test]
    fn tokens() {
        let kernels = DeviceCratePath::named("renamed_device");
        assert_eq!(
            Domain::FINITE.f32_tokens(&kernels).to_string(),
            quote!(::renamed_device::abi::Domain::FINITE).to_string()
        );
        let d = Domain {
            lower: Limit::Inclusive(0.0),
            upper: Limit::Exclusive(0.1),
        };
        let t = d.f32_tokens(&kernels).to_string();
        assert!(
            t.contains(":: renamed_device :: abi :: Limit :: Inclusive (0.0)"),
            "{t}"
        );
        assert!(t.contains("Limit :: Exclusive (0.1)"), "{t}");
        let negative = Domain {
            lower: Limit::Exclusive(-2.5),
            upper: Limit::None,
        };
        let t = negative.f32_tokens(&kernels).to_string();
        assert!(t.contains("Exclusive (- 2.5)"), "{t}");
        assert!(t.contains("finite : true"), "{t}");
    }
}
