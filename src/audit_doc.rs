//! Renders the slot table and the kernel list as Markdown: `docs/audit.md` (kept fresh by
//! `tests/audit_doc.rs`) and the `adamant audit` CLI print the same text, so neither can drift
//! from the code. This replaces the seed's hand-edited audit document, whose "Mech 5" slot table
//! and "Mech 9" kernel list had to be updated by hand with every new slot or kernel.
//!
//! It lives in this crate, beside the CLI and the test that use it, rather than in the runtime:
//! it is documentation built from the runtime's public slot table and the kernel registry, and a
//! program that only launches kernels does not need it.
use std::fmt::Write as _;

use adamant_kernels::abi::{self, KernelDescriptor, KernelKind};
use adamant_runtime::nan_check::{Check, CHUNK_ELEMENTS, FUSED_RANGE, SLOTS, SLOT_COUNT};

/// How to regenerate `docs/audit.md` (quoted in the file and in the staleness test's message).
pub const REGENERATE: &str = "ADAMANT_BLESS=1 cargo test --test audit_doc";

/// The slot table's columns.
pub const SLOT_TABLE_HEADERS: [&str; 5] = ["slot", "name", "check", "factor", "bound buffer"];

/// The slot table as plain cells, one row per slot (the CLI prints these as a text table).
pub fn slot_table_rows() -> Vec<[String; 5]> {
    SLOTS
        .iter()
        .map(|spec| {
            let factor = match spec.check {
                Check::NonFinite => "-".to_string(),
                Check::MaxAbs { factor } => format!("{factor:e}"),
            };
            [
                spec.index.to_string(),
                spec.name.to_string(),
                spec.check.describe().to_string(),
                factor,
                spec.source.describe(),
            ]
        })
        .collect()
}

/// The slot table as Markdown.
pub fn slot_table_markdown() -> String {
    let mut out = String::new();
    let _ = writeln!(out, "| {} |", SLOT_TABLE_HEADERS.join(" | "));
    let _ = writeln!(out, "|-----:|------|-------|-------:|--------------|");
    for [index, name, check, factor, source] in slot_table_rows() {
        let _ = writeln!(
            out,
            "| {index} | `{name}` | {check} | {factor} | {source} |"
        );
    }
    out
}

/// The kernel list: every entry registered by `#[optimizer_kernel]` or `#[kernel_entry]`.
pub fn kernel_table_markdown(kernels: &[&KernelDescriptor]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "| kernel | kind | parameters | weight clamp |");
    let _ = writeln!(out, "|--------|------|-----------:|--------------|");
    for kernel in kernels {
        let kind = match kernel.kind {
            KernelKind::Optimizer => "optimizer",
            KernelKind::Other => "other",
        };
        let clamp = match kernel.clamp_bound_index() {
            Some(i) => format!("`{}` (parameter {i}, last)", kernel.params[i].name),
            None => "- (writes no parameters)".to_string(),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} |",
            kernel.name,
            kind,
            kernel.params.len(),
            clamp
        );
    }
    out
}

/// The whole of `docs/audit.md`.
pub fn audit_markdown() -> String {
    let kernels = abi::kernels();
    let mut out = String::new();
    let _ = writeln!(out, "# adamant audit: NaN-check slots and kernels");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "<!-- Generated from the code; do not edit. Regenerate with `{REGENERATE}`. -->"
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Generated from `runtime/src/nan_check/slots.rs` (the one slot table) and the kernel \
         descriptors that `#[optimizer_kernel]` and `#[kernel_entry]` register. It replaces the \
         seed's hand-edited \"Mech 5\" slot table and \"Mech 9\" kernel list."
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "## NaN-check slots");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{SLOT_COUNT} slots. `nan_check_kernel` checks any contiguous range of them in one launch \
         (the seed's fused check is slots {}..={}), in chunks of {CHUNK_ELEMENTS} elements (larger for large checks). Per \
         slot it reports a flag word (non-finite: NaN or ±inf seen; over-threshold: a finite \
         `|x|` above `factor × q_abs_ref_eff`, with `q_abs_ref_eff = max(Q_ABS_REF, 1.0)`), the \
         largest `|x|` and the first bad element. Parameter-group buffers are bound by group \
         name (`SlotBindings::bind_group`), activations explicitly (`SlotBindings::bind`).",
        FUSED_RANGE.start(),
        FUSED_RANGE.end()
    );
    let _ = writeln!(out);
    out.push_str(&slot_table_markdown());
    let _ = writeln!(out);
    let _ = writeln!(out, "## Kernels");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{} entries. Every optimizer entry takes `weight_clamp_max_abs` as its last parameter and \
         clamps each parameter value to it before the store (stamped by `#[optimizer_kernel]`; \
         `adamant audit` proves it from the PTX).",
        kernels.len()
    );
    let _ = writeln!(out);
    out.push_str(&kernel_table_markdown(&kernels));
    out
}
