//! Assembles the embedded PTX with NVIDIA's ptxas: every entry must compile for sm_90; the
//! single-buffer optimizer entries (the seed's five) must fit in 64 registers without spilling;
//! the multi-tensor entries must carry the build's register cap (`.maxnreg`, from
//! `KernelDescriptor::max_registers`) and stay within it, spilling at most a few bytes.
//!
//! These tests need ptxas (scripts/setup.sh installs it from the PyPI wheel nvidia-cuda-nvcc, or
//! set ADAMANT_PTXAS). Without it they fail; they are never skipped.
use adamant_build::ptx;
use adamant_build::ptxas::{self, parse_verbose, Ptxas, PtxasError, PtxasReport};
use adamant_device::abi::{self, KernelKind};

/// Registers an optimizer kernel may use (at most 64 keeps 1024-thread blocks and full
/// occupancy possible on sm_90).
const MAX_OPTIMIZER_REGISTERS: u32 = 64;

fn ptxas() -> Ptxas {
    Ptxas::locate().unwrap_or_else(|e| {
        panic!(
            "ptxas is required for this test and was not found: {e}\n(run scripts/setup.sh, or \
             set ADAMANT_PTXAS=/path/to/ptxas)"
        )
    })
}

fn embedded_report() -> PtxasReport {
    let ptxas = ptxas();
    ptxas
        .compile(adamant_runtime::PTX, ptxas::DEFAULT_ARCH)
        .unwrap_or_else(|e| panic!("ptxas ({}) rejects the PTX: {e}", ptxas.path.display()))
}

#[test]
fn every_entry_assembles() {
    let report = embedded_report();
    let entries = ptx::entries(adamant_runtime::PTX);
    assert!(!entries.is_empty());
    for entry in &entries {
        let f = report.function(&entry.name).unwrap_or_else(|| {
            panic!(
                "ptxas reported nothing for {}:\n{}",
                entry.name, report.output
            )
        });
        assert!(f.is_entry, "{} is not reported as an entry", entry.name);
        assert!(
            f.registers.is_some(),
            "{}: no register count\n{}",
            entry.name,
            report.output
        );
        assert!(f.stack_frame_bytes.is_some(), "{}: {f:?}", entry.name);
    }
    assert_eq!(report.entries().count(), entries.len(), "{}", report.output);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}

/// The largest stack frame a fused entry (its rules' sweeps behind one chunk loop) may have under
/// the multi-tensor cap. `adamant_fused_step` (six f32 rules): ptxas 13.0 spills 80 bytes (96 B
/// frame) at 80 registers, and needs 102 without a cap (two blocks of 256 threads per SM instead
/// of three); docs/performance.md (issue 25, fourth session) has the A/B of the two.
/// `adamant_fused_mixed` (seven rules, four of them hashing a stochastic word per element):
/// 112 B (152 B stored, 212 B loaded), its cost not yet measured on a GPU.
const MAX_FUSED_STACK_BYTES: u64 = 112;

/// The largest stack frame (spilled registers) a capped entry may have under its register
/// cap (a multi-tensor entry's 80, or a stochastic single-buffer entry's 64:
/// `adamw_bf16_sr_moments_stepped` spills 12 B there, three words hashed per element of a
/// group of four against six bf16 loads and stores). ptxas 13.0 spills 8 bytes of
/// `curiosity_adam_step_multi_stepped` (five buffers in flight, 16 bytes at a time) at 80
/// registers; in the RL set that launch still ran in 12.9 µs against 16.5 µs at its own 88
/// registers (ncu, docs/lab/bench-2026-12-06-c), the occupancy being worth more than the spill.
/// The largest is `adamw_bf16_remainder_multi_stepped`'s 32 B (five tables, each element split
/// into two 16-bit halves and joined back, the record's scalars live across the chunk loop).
const MAX_CAPPED_STACK_BYTES: u64 = 32;

#[test]
fn optimizer_entries_fit_their_registers_without_spilling() {
    let report = embedded_report();
    let optimizers: Vec<_> = abi::kernels()
        .into_iter()
        .filter(|k| k.kind == KernelKind::Optimizer)
        .collect();
    assert_eq!(
        optimizers.len(),
        54,
        "thirteen kernels (five Adam, the soft update and its bf16 twin, AdamW on bf16 to \
         nearest, stochastically, with bf16 moments, with an f32 master and with a remainder, \
         and on f16), each single-buffer and multi-tensor, plain and stepped, and two fused \
         entries (the six f32 kernels; seven f32 and 16-bit ones)"
    );
    let entries = ptx::entries(adamant_runtime::PTX);
    for k in optimizers {
        let f = report
            .function(k.name)
            .unwrap_or_else(|| panic!("{} missing from:\n{}", k.name, report.output));
        let registers = f.registers.unwrap();
        let spilled = f.spill_store_bytes.unwrap_or(0) + f.spill_load_bytes.unwrap_or(0);
        eprintln!(
            "{}: {registers} registers, {} B stack, {} B spill stores, {} B spill loads",
            k.name,
            f.stack_frame_bytes.unwrap_or(0),
            f.spill_store_bytes.unwrap_or(0),
            f.spill_load_bytes.unwrap_or(0)
        );
        let directives = &entries
            .iter()
            .find(|e| e.name == k.name)
            .unwrap_or_else(|| panic!("{} is not in the PTX", k.name))
            .directives;
        match k.max_registers() {
            Some(cap) => {
                assert!(
                    k.is_multi_tensor() || cap <= MAX_OPTIMIZER_REGISTERS,
                    "{}: a single-buffer entry capped above {MAX_OPTIMIZER_REGISTERS}",
                    k.name
                );
                assert_eq!(directives, &[format!(".maxnreg {cap}")], "{}", k.name);
                assert!(registers <= cap, "{}: {registers} > {cap}", k.name);
                let stack = f.stack_frame_bytes.unwrap_or(0);
                let limit = if k.is_fused() {
                    MAX_FUSED_STACK_BYTES
                } else {
                    MAX_CAPPED_STACK_BYTES
                };
                assert!(
                    stack <= limit,
                    "{} spills to a stack of {stack} B under its cap of {cap}: {f:?}",
                    k.name
                );
            }
            None => {
                assert!(!k.is_multi_tensor(), "{} has no cap", k.name);
                assert!(directives.is_empty(), "{}: {directives:?}", k.name);
                assert_eq!(spilled, 0, "{}: {f:?}", k.name);
                assert_eq!(f.stack_frame_bytes, Some(0), "{}: {f:?}", k.name);
                assert!(
                    registers <= MAX_OPTIMIZER_REGISTERS,
                    "{} uses {registers} registers (at most {MAX_OPTIMIZER_REGISTERS})",
                    k.name
                );
            }
        }
    }
}

#[test]
fn broken_ptx_is_a_typed_error_with_ptxas_stderr() {
    let broken = adamant_runtime::PTX.replacen("ret;", "not_an_instruction;", 1);
    match ptxas().compile(&broken, ptxas::DEFAULT_ARCH) {
        Err(PtxasError::Failed {
            stderr, command, ..
        }) => {
            assert!(stderr.contains("not_an_instruction"), "{stderr}");
            assert!(command.contains("-arch=sm_90"), "{command}");
        }
        other => panic!("expected PtxasError::Failed, got {other:?}"),
    }
}

#[test]
fn a_missing_ptxas_is_a_typed_error() {
    let missing = Ptxas::at("/nonexistent/adamant/ptxas");
    match missing.compile(adamant_runtime::PTX, ptxas::DEFAULT_ARCH) {
        Err(PtxasError::Io { .. }) => {}
        other => panic!("expected PtxasError::Io, got {other:?}"),
    }
}

#[test]
fn parses_ptxas_verbose_output() {
    let text = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'iqn_adam_kernel' for 'sm_90'
ptxas info    : Function properties for iqn_adam_kernel
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 48 registers, used 0 barriers
ptxas info    : Compile time = 48.835 ms
ptxas info    : Function properties for helper
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Compiling entry function 'old_style' for 'sm_80'
ptxas info    : Function properties for old_style
    24 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 12 bytes cumulative stack size, 384 bytes cmem[0], 4 bytes cmem[2]
ptxas warning : Registers are spilled to local memory in function 'x', 8 bytes spill stores
";
    let functions = parse_verbose(text);
    assert_eq!(functions.len(), 3, "{functions:#?}");
    let iqn = &functions[0];
    assert_eq!(iqn.name, "iqn_adam_kernel");
    assert!(iqn.is_entry);
    assert_eq!(iqn.registers, Some(48));
    assert_eq!(iqn.barriers, Some(0));
    assert_eq!(
        (
            iqn.stack_frame_bytes,
            iqn.spill_store_bytes,
            iqn.spill_load_bytes
        ),
        (Some(0), Some(0), Some(0))
    );
    let helper = &functions[1];
    assert_eq!(helper.name, "helper");
    assert!(!helper.is_entry);
    assert_eq!(helper.spill_bytes(), 12);
    assert_eq!(helper.registers, None);
    let old = &functions[2];
    assert_eq!(old.registers, Some(40));
    assert_eq!(old.barriers, Some(1));
    assert_eq!(old.cumulative_stack_bytes, Some(12));
    assert_eq!(old.stack_frame_bytes, Some(24));
    assert_eq!(old.constant_bytes, vec![(0, 384), (2, 4)]);
}
