//! The `entry_signatures` check.
use syn::File;

use super::expansion::{buffer_count, device_fn, entries, takes_bound_last_once};
use super::syntax::{input_names, is_gpu_kernel, tokens};
use super::SWEEP;
use crate::signature::{CHUNKS, LEN, N_CHUNKS, SCALES};

/// Exactly `<kernel>` and `<kernel>_multi` are exported; both are `#[no_mangle] unsafe extern
/// "gpu-kernel"` fns in the nvptx-only device block (with `__adamant_sweep` and nothing else),
/// and take the bound last, once. The single entry takes
/// `sweep`'s buffer pointers and `len`; the multi entry takes a `*const u64` table per buffer (in
/// the same order, under the same names), `chunks`, `n_chunks` and `weight_clamp_scales`; then
/// both take the same uniforms and the bound.
pub(super) fn check_entry_signatures(file: &File, name: &str, _param: &str) -> Result<(), String> {
    let [single, multi] = entries(file, name)?;
    for entry in [single, multi] {
        let ident = &entry.sig.ident;
        if !entry.attrs.iter().any(|a| a.path().is_ident("no_mangle")) {
            return Err(format!("`{ident}` is not `#[no_mangle]`"));
        }
        if !is_gpu_kernel(&entry.sig) || entry.sig.unsafety.is_none() {
            return Err(format!(
                "`{ident}` is not an `unsafe extern \"gpu-kernel\" fn`"
            ));
        }
        takes_bound_last_once(&entry.sig)?;
    }
    let sweep = device_fn(file, SWEEP)?;
    let n = buffer_count(sweep)?;
    let single_inputs: Vec<String> = single.sig.inputs.iter().map(tokens).collect();
    let multi_inputs: Vec<String> = multi.sig.inputs.iter().map(tokens).collect();
    let sweep_inputs: Vec<String> = sweep.sig.inputs.iter().map(tokens).collect();
    if single_inputs.len() < n + 2 || single_inputs[..=n] != sweep_inputs[..=n] {
        return Err(format!(
            "`{name}` does not start with `{SWEEP}`'s buffers and `{LEN}`: {single_inputs:?}"
        ));
    }
    let tables: Vec<String> = input_names(&sweep.sig)[..n]
        .iter()
        .map(|b| format!("{} : * const u64", b.as_deref().unwrap_or("?")))
        .collect();
    let chunk_params = [
        format!("{CHUNKS} : * const :: adamant_device :: multi :: Chunk"),
        format!("{N_CHUNKS} : u32"),
        format!("{SCALES} : * const f32"),
    ];
    let set = chunk_params.len();
    if multi_inputs.len() < n + set + 1
        || multi_inputs[..n] != tables[..]
        || multi_inputs[n..n + set] != chunk_params[..]
    {
        return Err(format!(
            "`{}` does not start with the buffer tables, `{CHUNKS}`, `{N_CHUNKS}` and \
             `{SCALES}`: {multi_inputs:?}",
            multi.sig.ident
        ));
    }
    if single_inputs[n + 1..] != multi_inputs[n + set..] {
        return Err(format!(
            "the entries take different uniforms: {:?} and {:?}",
            &single_inputs[n + 1..],
            &multi_inputs[n + set..]
        ));
    }
    Ok(())
}
