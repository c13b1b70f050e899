//! Renders the seed's slot table and the kernel list as Markdown: `docs/audit.md` (kept fresh by
//! `tests/audit/doc.rs`) and the `adamant audit` CLI print the same text, so neither can drift
//! from the code. This replaces the seed's hand-edited audit document, whose "Mech 5" slot table
//! and "Mech 9" kernel list had to be updated by hand with every new slot or kernel.
//!
//! It lives in this crate, beside the CLI and the test that use it, rather than in the runtime:
//! it is documentation built from adamant-rl's public slot table and the kernel registry, and a
//! program that only launches kernels does not need it.
use std::fmt::Write as _;

use adamant_device::abi::{self, KernelDescriptor, KernelKind};
use adamant_device::step::BOUND_OFFSET;
use adamant_rl::{FUSED_RANGE, GROUP_SHAPES, SEED_TABLE};
use adamant_runtime::nan_check::{group_slots, Check, Source, CHECK_CHUNK_ELEMENTS};

/// How to regenerate `docs/audit.md` (quoted in the file and in the staleness test's message).
pub const REGENERATE: &str = "ADAMANT_BLESS=1 cargo test --test audit_doc";

/// The slot table's columns.
pub const SLOT_TABLE_HEADERS: [&str; 6] = [
    "slot",
    "name",
    "check",
    "factor",
    "bound buffer",
    "data from (TrainingSession)",
];

/// Where a slot's result comes from in a [`adamant_rl::TrainingSession`]'s report.
fn data_from(source: Source) -> String {
    match source {
        Source::Group { buffer, .. } => format!(
            "the group's optimizer launch: its diagnostics record{}",
            match buffer {
                adamant_runtime::GroupBuffer::Params => " (stored weights)",
                adamant_runtime::GroupBuffer::Grads => " (gradient as read)",
                _ => " (after the update)",
            }
        ),
        Source::Activation { .. } => "`nan_check_kernel` (reads the buffer)".to_string(),
    }
}

fn factor_cell(check: Check) -> String {
    match check {
        Check::NonFinite => "-".to_string(),
        Check::MaxAbs { factor } => format!("{factor:e}"),
    }
}

/// The seed's slot table as plain cells, one row per slot (the CLI prints these as a text
/// table).
pub fn slot_table_rows() -> Vec<[String; 6]> {
    SEED_TABLE
        .slots()
        .iter()
        .map(|spec| {
            [
                spec.index.to_string(),
                spec.name.to_string(),
                spec.check.describe().to_string(),
                factor_cell(spec.check),
                spec.source.describe(),
                data_from(spec.source),
            ]
        })
        .collect()
}

/// The slots a session of the seed's eight groups derives beyond the table
/// (`nan_check::group_slots`): the weight maxima of the groups the table gives none.
pub fn derived_slot_rows() -> Vec<[String; 6]> {
    group_slots(SEED_TABLE, &GROUP_SHAPES)
        .expect("the table's groups")
        .into_iter()
        .filter(|s| !s.in_table)
        .map(|s| {
            let source = Source::Group {
                group: "",
                buffer: s.buffer,
            };
            [
                s.index.to_string(),
                s.name.clone(),
                s.check.describe().to_string(),
                factor_cell(s.check),
                format!("group `{}` {}", s.group, s.buffer.name()),
                data_from(source),
            ]
        })
        .collect()
}

/// Rows of [`SLOT_TABLE_HEADERS`] as a Markdown table.
fn rows_markdown(rows: Vec<[String; 6]>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "| {} |", SLOT_TABLE_HEADERS.join(" | "));
    let _ = writeln!(
        out,
        "|-----:|------|-------|-------:|--------------|------|"
    );
    for [index, name, check, factor, source, from] in rows {
        let _ = writeln!(
            out,
            "| {index} | `{name}` | {check} | {factor} | {source} | {from} |"
        );
    }
    out
}

/// The slot table as Markdown.
pub fn slot_table_markdown() -> String {
    rows_markdown(slot_table_rows())
}

/// [`derived_slot_rows`] as Markdown.
pub fn derived_slot_markdown() -> String {
    rows_markdown(derived_slot_rows())
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
        let mut clamp = match (
            kernel.clamp_bound_index(),
            kernel.step_state_index(),
            kernel.step_state_table_index(),
        ) {
            (Some(i), ..) => format!("`{}` (parameter {i}, last)", kernel.params[i].name),
            (None, Some(i), _) => format!(
                "byte {BOUND_OFFSET} of the record `{}` points at (parameter {i}, last)",
                kernel.params[i].name
            ),
            (None, None, Some(i)) => format!(
                "byte {BOUND_OFFSET} of tensor t's record, `{}[t]` (parameter {i}, last)",
                kernel.params[i].name
            ),
            (None, None, None) => "- (writes no parameters)".to_string(),
        };
        if let Some(i) = kernel.clamp_scales_index() {
            let _ = write!(
                clamp,
                ", times tensor t's scale `{}[t]` (parameter {i})",
                kernel.params[i].name
            );
        }
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
        "Generated from `crates/adamant-rl/src/slot_table.rs` (the seed's slot table, `adamant_rl::SEED_TABLE`) and the kernel \
         descriptors that `#[optimizer_kernel]` and `#[kernel_entry]` register. It replaces the \
         seed's hand-edited \"Mech 5\" slot table and \"Mech 9\" kernel list."
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "## NaN-check slots");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{} slots. `nan_check_kernel` checks any contiguous range of them in one launch \
         (the seed's fused check is slots {}..={}), in chunks of {CHECK_CHUNK_ELEMENTS} elements (larger for large checks). Per \
         slot it reports a flag word (non-finite: NaN or ±inf seen; over-threshold: a finite \
         `|x|` above `factor × q_abs_ref_eff`, with `q_abs_ref_eff = max(Q_ABS_REF, 1.0)`), the \
         largest `|x|` and the first bad element. Parameter-group buffers are bound by group \
         name (`SlotBindings::bind_group`), activations explicitly (`SlotBindings::bind`).",
        SEED_TABLE.len(),
        FUSED_RANGE.start(),
        FUSED_RANGE.end()
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "In a `TrainingSession` the checker kernel reads the activation slots only: every slot \
         that watches a parameter group takes its result from the diagnostics record that the \
         group's optimizer launch wrote in the same step (`adamant_device::diagnostics`; the \
         PTX audit proves that every optimizer entry writes its records). A record keeps, per \
         buffer, the non-finite count and the first non-finite element, and for the weights \
         their largest stored `|p|`, the largest raw `|p|` before the clamp and how many \
         weights the clamp caught (the clamp pressure). A weight-max slot over its threshold \
         therefore has no first index (the record keeps the maximum, not where it is)."
    );
    let _ = writeln!(out);
    out.push_str(&slot_table_markdown());
    let _ = writeln!(out);
    let _ = writeln!(out, "### Slots derived from the groups");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "A session derives a slot for every (group, buffer) the table does not watch: a \
         non-finite slot `<group>_<buffer>` per buffer and a max-abs slot `<group>_weight_max` \
         (factor 1e3) per group, numbered after the table, in group order. For the seed's eight \
         groups these are:"
    );
    let _ = writeln!(out);
    out.push_str(&derived_slot_markdown());
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "A group added to the session (`TrainingGroups::extra`) gets its slots the same way, \
         after these, with no line written anywhere."
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "## Kernels");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{} entries. Every optimizer entry takes `weight_clamp_max_abs` as its last parameter and \
         clamps each parameter value to it before the store, and takes its diagnostics `records` \
         header just before it and writes them (both stamped by `#[optimizer_kernel]`; \
         `adamant audit` proves both from the PTX).",
        kernels.len()
    );
    let _ = writeln!(out);
    out.push_str(&kernel_table_markdown(&kernels));
    out
}
