//! The `element_clamps` check.
use syn::ext::IdentExt;
use syn::{Expr, File, Stmt};

use super::expansion::{kernel_mod, mod_fn, takes_bound_last_once};
use super::syntax::{expr_is_ident, input_names, path_is, tokens};
use crate::signature::BOUND;

/// `<kernel>::element` takes `update`'s inputs plus the bound, last, and its body is exactly
/// `::adamant_device::clamp::weight_clamp(self::update(..every input..), weight_clamp_max_abs)`.
pub(super) fn check_element_clamps(file: &File, name: &str, _param: &str) -> Result<(), String> {
    let module = kernel_mod(file, name)?;
    let element = mod_fn(module, "element")?;
    let update = mod_fn(module, "update")?;
    takes_bound_last_once(&element.sig)?;
    if element.sig.inputs.len() != update.sig.inputs.len() + 1 {
        return Err("`element` does not take `update`'s inputs plus the bound".into());
    }
    let [Stmt::Expr(Expr::Call(clamp), None)] = element.block.stmts.as_slice() else {
        return Err(format!(
            "`element`'s body is not one call: {}",
            tokens(&element.block)
        ));
    };
    let Expr::Path(func) = &*clamp.func else {
        return Err("`element` does not call a path".into());
    };
    if !path_is(
        &func.path,
        true,
        &["adamant_device", "clamp", "weight_clamp"],
    ) {
        return Err(format!(
            "`element` calls `{}`, not `::adamant_device::clamp::weight_clamp`",
            tokens(&func.path)
        ));
    }
    let args: Vec<&Expr> = clamp.args.iter().collect();
    let [Expr::Call(inner), bound] = args.as_slice() else {
        return Err("`weight_clamp` does not take (update(..), bound)".into());
    };
    let calls_update =
        matches!(&*inner.func, Expr::Path(p) if path_is(&p.path, false, &["self", "update"]));
    if !calls_update || !expr_is_ident(bound, BOUND) {
        return Err(format!(
            "`element` clamps `{}` with `{}`",
            tokens(inner),
            tokens(*bound)
        ));
    }
    let forwarded: Vec<Option<String>> = inner
        .args
        .iter()
        .map(|a| match a {
            Expr::Path(p) => p.path.get_ident().map(|i| i.unraw().to_string()),
            _ => None,
        })
        .collect();
    let element_inputs = input_names(&element.sig);
    if forwarded[..] != element_inputs[..element_inputs.len() - 1] {
        return Err(format!(
            "`element` forwards {forwarded:?} to `update`, not its inputs {:?}",
            &element_inputs[..element_inputs.len() - 1]
        ));
    }
    Ok(())
}
