//! The checkpoint format as other tools read and write it: `scripts/torch_checkpoint.py`'s file
//! layer (plain Python, written from the format's description in docs/checkpoints.md, not from
//! the Rust code) reads what adamant writes, and adamant reads what it writes, checksum
//! included, for every element type. A damaged file is refused by both.
use std::path::{Path, PathBuf};
use std::process::Command;

use adamant_runtime::checkpoint::{Checkpoint, CheckpointError, TensorKind};

#[path = "../support/mod.rs"]
mod support;

use support::mlp;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/torch_checkpoint.py")
}

fn python(args: &[&Path]) -> std::process::Output {
    Command::new("python3")
        .arg(script())
        .args(args)
        .output()
        .expect("python3 (scripts/setup.sh needs it too)")
}

/// The script writes the checkpoint `from` anew at `to` (its own header, its own checksum); it
/// must succeed.
fn python_copy(from: &Path, to: &Path) {
    let copied = python(&[Path::new("copy"), from, to]);
    assert!(
        copied.status.success(),
        "{}",
        String::from_utf8_lossy(&copied.stderr)
    );
}

/// Runs Python `code` with the script's folder as `sys.argv[1]` and `args` after it; its
/// standard output (it must succeed).
fn python_code(code: &str, args: &[PathBuf]) -> Vec<u8> {
    let out = Command::new("python3")
        .arg("-c")
        .arg(code)
        .arg(script().parent().unwrap())
        .args(args)
        .output()
        .expect("python3 (scripts/setup.sh needs it too)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn folder(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("adamant-py-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every element type a state holds, with metadata of the kinds adamant writes.
fn every_kind() -> Checkpoint {
    let mut c = Checkpoint::new();
    c.insert_f32("fc.weight", &[1.5, -2.0, f32::MIN_POSITIVE, 3.25e-8])
        .unwrap();
    c.insert_f32("fc.weight.exp_avg", &[0.125; 4]).unwrap();
    c.insert_u16("emb", TensorKind::Bf16, &[0x3f80, 0xbf80, 0x0001])
        .unwrap();
    c.insert_u16("emb.remainder", TensorKind::U16, &[0x8000, 0xffff, 0])
        .unwrap();
    c.insert_u16("head", TensorKind::F16, &[0x3c00, 0x7bff])
        .unwrap();
    let words: Vec<u8> = (0..96u32)
        .flat_map(|w| w.wrapping_mul(2654435761).to_le_bytes())
        .collect();
    c.insert("adamant.records", TensorKind::U32, &[2, 48], words)
        .unwrap();
    c.set_metadata("fc.weight.kernel", "attn_adam_kernel")
        .unwrap();
    c.set_metadata("fc.weight.step", "700").unwrap();
    c.set_metadata("adamant.records.0.lr", "0.001").unwrap();
    c.set_metadata("ünïcode key", "välue").unwrap();
    c
}

#[test]
fn python_reads_and_writes_what_adamant_does() {
    let dir = folder("roundtrip");
    let (ours, theirs) = (dir.join("ours.safetensors"), dir.join("theirs.safetensors"));
    let original = every_kind();
    original.save(&ours).unwrap();

    let listed = python(&[Path::new("list"), &ours]);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let listed = String::from_utf8(listed.stdout).unwrap();
    for line in [
        "tensor adamant.records U32 [2, 48]",
        "tensor emb BF16 [3]",
        "tensor emb.remainder U16 [3]",
        "tensor head F16 [2]",
        "meta fc.weight.step = 700",
        "meta adamant.format = adamant-checkpoint/2",
    ] {
        assert!(listed.contains(line), "`{line}` not in:\n{listed}");
    }

    // Python writes the file anew (its own header, its own checksum): adamant reads it as the
    // same state.
    python_copy(&ours, &theirs);
    let back = Checkpoint::load(&theirs).unwrap();
    let names: Vec<&str> = original.names().collect();
    assert_eq!(names, back.names().collect::<Vec<_>>());
    for name in names {
        assert_eq!(original.get(name), back.get(name), "{name}");
    }
    assert_eq!(back.metadata("ünïcode key").unwrap(), "välue");
    assert_eq!(back.steps_taken("fc.weight").unwrap(), 700);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_file_is_refused_by_both() {
    let dir = folder("damaged");
    let path = dir.join("c.safetensors");
    every_kind().save(&path).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(
        Checkpoint::load(&path),
        Err(CheckpointError::Checksum { .. })
    ));
    let listed = python(&[Path::new("list"), &path]);
    assert_eq!(listed.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&listed.stderr).contains("checksum mismatch"));
    // Truncated.
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert!(matches!(
        Checkpoint::load(&path),
        Err(CheckpointError::Unreadable { .. })
    ));
    let listed = python(&[Path::new("list"), &path]);
    assert_eq!(listed.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&listed.stderr).contains("truncated"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `adamant checkpoint FILE` checks a file as a restore reads it and lists it, with the
/// non-finite values of each float tensor; a damaged file is exit code 2 and the reason.
#[test]
fn the_cli_lists_a_checkpoint_and_its_non_finite_values() {
    let dir = folder("cli");
    let path = dir.join("c.safetensors");
    let mut c = every_kind();
    c.insert_f32("fc.weight.exp_avg_sq", &[0.5, f32::NAN, f32::INFINITY, 1.0])
        .unwrap();
    c.save(&path).unwrap();
    let run = |p: &Path| {
        Command::new(env!("CARGO_BIN_EXE_adamant"))
            .arg("checkpoint")
            .arg(p)
            .output()
            .unwrap()
    };
    let out = run(&path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for line in [
        "checksum verified",
        "tensor fc.weight.exp_avg_sq F32 [4] (4 elements)  2 non-finite (first: element 1, NaN)",
        "tensor emb.remainder U16 [3] (3 elements)\n",
        "meta fc.weight.step = 700",
    ] {
        assert!(text.contains(line), "`{line}` not in:\n{text}");
    }
    assert!(
        !text.contains("tensor fc.weight.exp_avg F32 [4] (4 elements)  "),
        "a finite tensor has no note:\n{text}"
    );
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let out = run(&path);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("checksum mismatch"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every change of one byte's highest bit, every tenth cut and appended bytes: the Python
/// reader refuses each, as the Rust one does (`checkpoint::tests`, which tries every bit).
#[test]
fn python_refuses_what_adamant_refuses() {
    let dir = folder("py-damage");
    let path = dir.join("c.safetensors");
    let mut small = Checkpoint::new();
    small.insert_f32("w", &[1.0, 2.0]).unwrap();
    small.set_metadata("w.kernel", "attn_adam_kernel").unwrap();
    small.save(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let mut damaged: Vec<(String, Vec<u8>)> = Vec::new();
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x80;
        damaged.push((format!("byte {i} ^ 0x80"), b));
    }
    for cut in (0..bytes.len()).step_by(10) {
        damaged.push((format!("cut at {cut}"), bytes[..cut].to_vec()));
    }
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0; 8]);
    damaged.push(("eight bytes appended".into(), longer));
    // One Python process reads them all: each is a file of its own.
    let files: Vec<PathBuf> = damaged
        .iter()
        .enumerate()
        .map(|(k, (_, b))| {
            let p = dir.join(format!("d{k}.safetensors"));
            std::fs::write(&p, b).unwrap();
            p
        })
        .collect();
    let code = "import sys; sys.path.insert(0, sys.argv[1]); import torch_checkpoint as t\n\
                for f in sys.argv[2:]:\n\
                \x20   try:\n\
                \x20       t.read(f); print('accepted', f)\n\
                \x20   except t.CheckpointError:\n\
                \x20       pass\n";
    let accepted = String::from_utf8(python_code(code, &files)).unwrap();
    assert!(
        accepted.is_empty(),
        "Python accepted damaged files:\n{accepted}"
    );
    for (what, b) in &damaged {
        assert!(
            Checkpoint::load(&{
                let p = dir.join("rust.safetensors");
                std::fs::write(&p, b).unwrap();
                p
            })
            .is_err(),
            "{what}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The script's PyTorch side of the GPU interchange test (`mlp-demo`) trains the same model as
/// `tests/support/mlp.rs`: the same parameter count and the same starting weights, element by
/// element. (The ninth session's script counted one hidden layer's worth too many, which only
/// the GPU test found.)
#[test]
fn the_scripts_mlp_is_the_tests_mlp() {
    let code = "import sys, json; sys.path.insert(0, sys.argv[1]); import torch_checkpoint as t\n\
                print(json.dumps([t.IN, t.HIDDEN, t.SAMPLES, t.PARAMS, t.mlp_init()]))\n";
    let out = python_code(code, &[]);
    let (shape, init): ((usize, usize, usize, usize), Vec<f64>) = {
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let n = |i: usize| v[i].as_u64().unwrap() as usize;
        let init = v[4].as_array().unwrap();
        (
            (n(0), n(1), n(2), n(3)),
            init.iter().map(|x| x.as_f64().unwrap()).collect(),
        )
    };
    assert_eq!(shape, (mlp::IN, mlp::HIDDEN, mlp::SAMPLES, mlp::PARAMS));
    for (i, &x) in init.iter().enumerate() {
        assert_eq!(x as f32, mlp::init(i), "starting weight {i}");
    }
}

/// A tensor of several checksum pieces (format 2 hashes each 16 MiB piece on its own): Python,
/// written from docs/checkpoints.md, verifies adamant's checksum, writes its own, and adamant
/// verifies that.
#[test]
fn a_tensor_of_many_pieces_round_trips_through_python() {
    use adamant_runtime::checkpoint::PIECE_BYTES;
    let dir = folder("pieces");
    let (ours, theirs) = (dir.join("ours.safetensors"), dir.join("theirs.safetensors"));
    let n = 2 * PIECE_BYTES / 4 + 5;
    let values: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 - 500.0).collect();
    let mut c = Checkpoint::new();
    c.insert_f32("big.exp_avg", &values).unwrap();
    c.save(&ours).unwrap();
    python_copy(&ours, &theirs);
    let back = Checkpoint::load(&theirs).unwrap();
    assert_eq!(back.get("big.exp_avg"), c.get("big.exp_avg"));
    let _ = std::fs::remove_dir_all(&dir);
}
