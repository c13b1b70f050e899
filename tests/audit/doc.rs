//! `docs/audit.md` is generated from the slot table and the kernel descriptors
//! (`adamant::audit_doc`). This test fails when the file is stale and says
//! how to regenerate it; with `ADAMANT_BLESS=1` it rewrites the file instead.
use std::path::Path;

use adamant::audit_doc::{audit_markdown, REGENERATE};
use adamant_rl::{SLOTS, SLOT_COUNT};

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/audit.md");

#[test]
fn docs_audit_md_is_generated_from_the_code() {
    let generated = audit_markdown();
    if std::env::var("ADAMANT_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(DOC, &generated).expect("writing docs/audit.md");
        return;
    }
    let on_disk = std::fs::read_to_string(DOC).unwrap_or_default();
    if on_disk != generated {
        let first_difference = on_disk
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map(|i| i + 1)
            .unwrap_or(on_disk.lines().count().min(generated.lines().count()) + 1);
        panic!(
            "docs/audit.md is stale (first difference at line {first_difference}{}). It is \
             generated from crates/adamant-rl/src/slot_table.rs and the kernel descriptors; regenerate \
             it with `{REGENERATE}` and commit the result.",
            if Path::new(DOC).exists() {
                ""
            } else {
                "; the file is missing"
            }
        );
    }
}

#[test]
fn the_generated_doc_lists_every_slot_and_every_kernel() {
    let doc = audit_markdown();
    for spec in SLOTS {
        let row = format!("| {} | `{}` |", spec.index, spec.name);
        assert!(doc.contains(&row), "no row for slot {}: {row}", spec.index);
    }
    let slot_rows = doc
        .lines()
        .filter(|l| {
            l.split('|')
                .nth(1)
                .is_some_and(|c| c.trim().parse::<usize>().is_ok())
        })
        .count();
    // The table's slots, then the slots the seed's groups derive (their weight maxima).
    let derived = adamant::audit_doc::derived_slot_rows();
    assert_eq!(slot_rows, SLOT_COUNT + derived.len());
    assert_eq!(derived.len(), 5);
    for row in &derived {
        assert!(
            doc.contains(&format!("| {} | `{}` |", row[0], row[1])),
            "{row:?}"
        );
    }
    let kernel_rows = doc.lines().filter(|l| l.starts_with("| `")).count();
    assert_eq!(kernel_rows, adamant_device::abi::kernels().len());
    for kernel in adamant_device::abi::kernels() {
        assert!(
            doc.contains(&format!("| `{}` |", kernel.name)),
            "{}",
            kernel.name
        );
    }
    assert!(doc.contains("| `nan_check_kernel` | other |"));
    assert!(doc.contains(
        "| 48 | `iqn_weight_max` | non-finite + max-abs | 1e3 | group `iqn_online` params |"
    ));
    assert!(doc.contains(REGENERATE));
}
