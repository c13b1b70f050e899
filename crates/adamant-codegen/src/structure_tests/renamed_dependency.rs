//! Every path into the device crate goes through the one resolved [`DeviceCratePath`]: expanded for
//! a crate that depends on `adamant-device` as `renamed_device`, no token of any expansion
//! (attributes, the `linkme` registration and literals included) names `adamant_device`, and the
//! expansion is the one under the crate's own name with that one identifier replaced.
use proc_macro2::{TokenStream, TokenTree};

use crate::device_crate::DeviceCratePath;
use crate::test_kernels;

const OWN: &str = "adamant_device";
const RENAMED: &str = "renamed_device";

/// Every expansion the tests have, under `kernels`: each optimizer test kernel and the
/// `#[kernel_entry]` one, by name.
fn expansions(kernels: &DeviceCratePath) -> Vec<(&'static str, TokenStream)> {
    let mut out: Vec<(&'static str, TokenStream)> = test_kernels::all()
        .into_iter()
        .map(|(name, _, kernel)| {
            let tokens = crate::optimizer::expand(test_kernels::attr(name), kernel, kernels)
                .expect("valid kernel");
            (name, tokens)
        })
        .collect();
    let entry = crate::entry::expand(TokenStream::new(), test_kernels::probe_entry(), kernels)
        .expect("valid entry");
    out.push(("probe", entry));
    out
}

/// Every identifier and literal of `tokens`, in order, groups opened.
fn leaves(tokens: TokenStream, out: &mut Vec<TokenTree>) {
    for tree in tokens {
        match tree {
            TokenTree::Group(g) => leaves(g.stream(), out),
            TokenTree::Ident(_) | TokenTree::Literal(_) => out.push(tree),
            TokenTree::Punct(_) => {}
        }
    }
}

/// `tokens` with every identifier `from` replaced by `to`.
fn replace_ident(tokens: TokenStream, from: &str, to: &str) -> TokenStream {
    tokens
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Group(g) => {
                let mut group =
                    proc_macro2::Group::new(g.delimiter(), replace_ident(g.stream(), from, to));
                group.set_span(g.span());
                TokenTree::Group(group)
            }
            TokenTree::Ident(i) if i == from => {
                TokenTree::Ident(proc_macro2::Ident::new(to, i.span()))
            }
            other => other,
        })
        .collect()
}

fn count_ident(tokens: &TokenStream, name: &str) -> usize {
    let mut all = Vec::new();
    leaves(tokens.clone(), &mut all);
    all.iter()
        .filter(|t| matches!(t, TokenTree::Ident(i) if i == name))
        .count()
}

#[test]
fn no_expansion_names_the_crate_literally() {
    for (name, tokens) in expansions(&DeviceCratePath::named(RENAMED)) {
        let mut all = Vec::new();
        leaves(tokens.clone(), &mut all);
        let literal: Vec<String> = all
            .iter()
            .map(ToString::to_string)
            .filter(|t| t.contains(OWN))
            .collect();
        assert!(
            literal.is_empty(),
            "{name}: the expansion for a renamed dependency still has {literal:?}:\n{tokens}"
        );
        assert!(
            count_ident(&tokens, RENAMED) > 0,
            "{name}: no path into the crate"
        );
    }
}

/// Renaming changes the crate's name and nothing else: the same tokens, one identifier swapped.
#[test]
fn renaming_changes_only_the_crate_name() {
    let own = expansions(&DeviceCratePath::own_name());
    let renamed = expansions(&DeviceCratePath::named(RENAMED));
    for ((name, own), (_, renamed)) in own.into_iter().zip(renamed) {
        assert_eq!(
            count_ident(&own, OWN),
            count_ident(&renamed, RENAMED),
            "{name}"
        );
        assert_eq!(
            replace_ident(own, OWN, RENAMED).to_string(),
            renamed.to_string(),
            "{name}"
        );
    }
}
