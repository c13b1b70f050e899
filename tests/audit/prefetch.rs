//! Which optimizer entries ask for their next group in L1 (`prefetch.L1`), read from the real
//! module. A chunked sweep (the multi-tensor and fused entries: they take a chunk table) does:
//! measured 1 to 1.6 µs faster on the RL set's fused launch and the session's step. A
//! grid-strided sweep (the single-buffer entries) must not: its next group is a whole grid away,
//! and the prefetch made Adam at 2^28 2.6 % slower (docs/performance.md, fifteenth session).
use adamant_build::ptx::entries;
use adamant_device::abi::{self, KernelKind, ParamRole};

fn prefetches(body: &[String]) -> usize {
    body.iter()
        .filter(|l| l.trim_start().starts_with("prefetch.L1"))
        .count()
}

#[test]
fn chunked_sweeps_prefetch_their_next_group_and_grid_strided_ones_do_not() {
    let (mut chunked, mut strided) = (0, 0);
    for entry in entries(adamant_runtime::PTX) {
        let descriptor = abi::kernel(&entry.name)
            .unwrap_or_else(|| panic!("{}: an entry without a descriptor", entry.name));
        if descriptor.kind != KernelKind::Optimizer {
            continue;
        }
        let is_chunked = descriptor
            .params
            .iter()
            .any(|p| p.role == ParamRole::ChunkTable);
        let n = prefetches(&entry.body);
        if is_chunked {
            chunked += 1;
            assert!(
                n > 0,
                "{}: a chunked sweep without its L1 prefetch",
                entry.name
            );
        } else {
            strided += 1;
            assert_eq!(n, 0, "{}: a grid-strided sweep that prefetches", entry.name);
        }
    }
    // Both kinds are in the module (a filter that matched nothing would prove nothing).
    assert!(
        chunked >= 10 && strided >= 10,
        "chunked {chunked}, strided {strided}"
    );
}

/// The prefetches of `name`'s body in the real module.
fn prefetches_of(name: &str) -> usize {
    let entry = entries(adamant_runtime::PTX)
        .into_iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no entry {name}"));
    prefetches(&entry.body)
}

#[test]
fn a_sweep_prefetches_what_it_reads_and_not_what_it_only_writes() {
    // (entry, the buffers its update reads, one prefetch each)
    let cases = [
        // p, g, m, v
        ("dqn_adam_update_kernel_multi", 4),
        // p, g, m, v, v_max
        ("curiosity_adam_step_multi_stepped", 5),
        // the f32 master, g, m, v: not the bf16 copy, which is only written (asking for its line
        // would read it from memory for nothing)
        ("adamw_bf16_master_multi", 4),
        // both halves of the master (p and p_remainder), g, m, v
        ("adamw_bf16_remainder_multi_stepped", 5),
        // the target and the online weights
        ("soft_update_kernel_multi", 2),
    ];
    for (name, reads) in cases {
        assert_eq!(prefetches_of(name), reads, "{name}");
    }
}
