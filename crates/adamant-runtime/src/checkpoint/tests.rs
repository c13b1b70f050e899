//! The checkpoint file layer on the CPU: a round trip of every element type with its metadata
//! and names, and every bad file the issue lists, each with its error and nothing returned.
use std::path::{Path, PathBuf};

use adamant_kernels::half_weights::{adamw_bf16_master, adamw_bf16_remainder};
use adamant_kernels::optimizers::curiosity_adam_step;

use super::*;

/// A fresh folder for one test's files.
fn folder(test: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("adamant-checkpoint-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A state of two tensors: `fc.weight` (bf16 weights with a remainder, f32 moments) and
/// `fc.bias` (f32, AMSGrad's three moments), their step records and metadata.
fn state() -> Checkpoint {
    let remainder = &adamw_bf16_remainder::DESCRIPTOR;
    let amsgrad = &curiosity_adam_step::DESCRIPTOR;
    let name = |tensor: &str, d, buffer: &str| state_name(tensor, d, buffer).unwrap();
    let mut c = Checkpoint::new();
    let w: Vec<u16> = (0..6).map(|i| 0x3f80 + i).collect();
    c.insert_u16(&name("fc.weight", remainder, "p"), TensorKind::Bf16, &w)
        .unwrap();
    c.insert_u16(
        &name("fc.weight", remainder, "p_remainder"),
        TensorKind::U16,
        &[1, 2, 3, 0x8000, 0xffff, 0],
    )
    .unwrap();
    for buffer in ["m", "v"] {
        let values: Vec<f32> = (0..6).map(|i| i as f32 * 0.25 + 0.5).collect();
        c.insert_f32(&name("fc.weight", remainder, buffer), &values)
            .unwrap();
    }
    for buffer in ["p", "m", "v", "v_max"] {
        c.insert_f32(&name("fc.bias", amsgrad, buffer), &[0.1, -0.2, 0.3])
            .unwrap();
    }
    let record: Vec<u8> = (0..48u32).flat_map(|w| w.to_le_bytes()).collect();
    c.insert("step_records", TensorKind::U32, &[1, 48], record)
        .unwrap();
    c.insert("h16", TensorKind::F16, &[2], vec![0x00, 0x3c, 0x00, 0xc0])
        .unwrap();
    c.set_metadata("adamant.kernel.fc.weight", "adamw_bf16_remainder")
        .unwrap();
    c.set_metadata("adamant.kernel.fc.bias", "curiosity_adam_step")
        .unwrap();
    c.set_metadata("adamant.rounding_seed", "2026").unwrap();
    c
}

fn save(c: &Checkpoint, dir: &Path) -> PathBuf {
    let path = dir.join("state.safetensors");
    c.save(&path).unwrap();
    path
}

#[test]
fn a_state_round_trips_with_its_names_types_and_metadata() {
    let dir = folder("round-trip");
    let c = state();
    let path = save(&c, &dir);
    let back = Checkpoint::load(&path).unwrap();
    assert_eq!(back.tensors, c.tensors);
    assert_eq!(
        back.names().collect::<Vec<_>>(),
        [
            "fc.bias",
            "fc.bias.exp_avg",
            "fc.bias.exp_avg_sq",
            "fc.bias.max_exp_avg_sq",
            "fc.weight",
            "fc.weight.exp_avg",
            "fc.weight.exp_avg_sq",
            "fc.weight.remainder",
            "h16",
            "step_records",
        ]
    );
    assert_eq!(back.metadata("adamant.rounding_seed").unwrap(), "2026");
    assert_eq!(back.metadata(FORMAT_KEY).unwrap(), FORMAT);
    back.expect_metadata("adamant.kernel.fc.weight", "adamw_bf16_remainder")
        .unwrap();
    assert_eq!(
        back.f32s("fc.bias.max_exp_avg_sq", 3, true).unwrap(),
        [0.1, -0.2, 0.3]
    );
    assert_eq!(
        back.u16s("fc.weight.remainder", TensorKind::U16, 6, true)
            .unwrap(),
        [1, 2, 3, 0x8000, 0xffff, 0]
    );
    // Other tools read it: the safetensors crate alone sees the tensors and their types.
    let bytes = std::fs::read(&path).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let view = file.tensor("fc.weight").unwrap();
    assert_eq!((view.dtype(), view.shape()), (Dtype::BF16, &[6usize][..]));
}

#[test]
fn a_truncated_file_is_unreadable() {
    let dir = folder("truncated");
    let path = save(&state(), &dir);
    let bytes = std::fs::read(&path).unwrap();
    for cut in [0, 7, 8, 100, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        match Checkpoint::load(&path) {
            Err(CheckpointError::Unreadable { .. }) => {}
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
}

/// Every change of one bit (the lowest or the highest of each byte) and every cut of a whole
/// file is refused with a typed error, and none panics: the header (the reader's validation, or
/// the checksum for a change that leaves it valid), the metadata and every tensor byte.
#[test]
fn every_changed_bit_and_every_cut_is_refused() {
    let dir = folder("every-bit");
    let path = save(&state(), &dir);
    let bytes = std::fs::read(&path).unwrap();
    let refused =
        |b: Vec<u8>, what: &str| match Checkpoint::from_bytes(Arc::new(b), &path, HashMap::new()) {
            Err(
                CheckpointError::Unreadable { .. }
                | CheckpointError::Checksum { .. }
                | CheckpointError::Version { .. },
            ) => {}
            other => panic!("{what}: {other:?}"),
        };
    for i in 0..bytes.len() {
        for bit in [0x01u8, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= bit;
            refused(b, &format!("byte {i} ^ {bit:#x}"));
        }
    }
    for cut in 0..bytes.len() {
        refused(bytes[..cut].to_vec(), &format!("cut at {cut}"));
    }
    // Bytes after the end are no part of any tensor: refused too, not ignored.
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0; 8]);
    refused(longer, "eight bytes appended");
}

#[test]
fn a_changed_byte_fails_the_checksum() {
    let dir = folder("checksum");
    let path = save(&state(), &dir);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let err = Checkpoint::load(&path).unwrap_err();
    assert!(matches!(err, CheckpointError::Checksum { .. }), "{err}");
    assert!(err.to_string().contains("state.safetensors"), "{err}");
}

/// A safetensors file written by another tool (no format key), and one of another version
/// (whose checksum is right: the version is checked first).
#[test]
fn another_format_or_version_is_refused() {
    let dir = folder("version");
    let path = dir.join("other.safetensors");
    let data = [0u8; 8];
    let view = TensorView::new(Dtype::F32, vec![2], &data).unwrap();
    std::fs::write(&path, safetensors::serialize([("x", view)], None).unwrap()).unwrap();
    match Checkpoint::load(&path) {
        Err(CheckpointError::Version { found, .. }) => assert!(found.contains("none"), "{found}"),
        other => panic!("{other:?}"),
    }
    let mut metadata = HashMap::new();
    metadata.insert(FORMAT_KEY.to_string(), "adamant-checkpoint/0".to_string());
    let view = TensorView::new(Dtype::F32, vec![2], &data).unwrap();
    std::fs::write(
        &path,
        safetensors::serialize([("x", view)], Some(metadata)).unwrap(),
    )
    .unwrap();
    match Checkpoint::load(&path) {
        Err(CheckpointError::Version {
            found, expected, ..
        }) => assert_eq!(
            (found.as_str(), expected.as_str()),
            ("adamant-checkpoint/0", FORMAT)
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_missing_tensor_a_wrong_shape_or_type_is_named() {
    let dir = folder("typed");
    let back = Checkpoint::load(&save(&state(), &dir)).unwrap();
    match back.f32s("fc.weight.max_exp_avg_sq", 6, true) {
        Err(CheckpointError::MissingTensor { name, .. }) => {
            assert_eq!(name, "fc.weight.max_exp_avg_sq")
        }
        other => panic!("{other:?}"),
    }
    match back.f32s("fc.bias.exp_avg", 4, true) {
        Err(CheckpointError::Shape {
            name,
            expected,
            found,
            ..
        }) => assert_eq!(
            (name.as_str(), expected, found),
            ("fc.bias.exp_avg", vec![4], vec![3])
        ),
        other => panic!("{other:?}"),
    }
    match back.f32s("fc.weight", 6, true) {
        Err(CheckpointError::Dtype {
            name,
            expected,
            found,
            ..
        }) => assert_eq!(
            (name.as_str(), expected, found.as_str()),
            ("fc.weight", "F32", "BF16")
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn another_kernel_in_the_metadata_is_refused() {
    let dir = folder("kernel");
    let back = Checkpoint::load(&save(&state(), &dir)).unwrap();
    match back.expect_metadata("adamant.kernel.fc.weight", "adamw_bf16_master") {
        Err(CheckpointError::Metadata {
            key,
            expected,
            found,
            ..
        }) => {
            assert_eq!(key, "adamant.kernel.fc.weight");
            assert_eq!(expected, "adamw_bf16_master");
            assert_eq!(found.as_deref(), Some("adamw_bf16_remainder"));
        }
        other => panic!("{other:?}"),
    }
    assert!(back.expect_metadata("adamant.kernel.nothing", "x").is_err());
}

/// A NaN in a moment is reported with its tensor and index, and loaded only when asked for.
#[test]
fn a_non_finite_moment_is_reported_and_loaded_only_on_request() {
    let dir = folder("nan");
    let mut c = state();
    c.insert_f32("fc.head.exp_avg_sq", &[1.0, f32::NAN, 2.0])
        .unwrap();
    c.insert_u16("fc.head.exp_avg", TensorKind::Bf16, &[0x3f80, 0x7f80])
        .unwrap();
    let back = Checkpoint::load(&save(&c, &dir)).unwrap();
    match back.f32s("fc.head.exp_avg_sq", 3, true) {
        Err(CheckpointError::NonFinite { name, index, .. }) => {
            assert_eq!((name.as_str(), index), ("fc.head.exp_avg_sq", 1))
        }
        other => panic!("{other:?}"),
    }
    assert!(back.f32s("fc.head.exp_avg_sq", 3, false).unwrap()[1].is_nan());
    assert!(matches!(
        back.u16s("fc.head.exp_avg", TensorKind::Bf16, 2, true),
        Err(CheckpointError::NonFinite { index: 1, .. })
    ));
    // A remainder is no number: never "non-finite".
    assert!(back
        .u16s("fc.weight.remainder", TensorKind::U16, 6, true)
        .is_ok());
}

/// A save whose rename fails leaves the previous checkpoint readable and whole, and no
/// temporary file behind.
#[test]
fn a_failed_save_leaves_the_previous_checkpoint() {
    let dir = folder("interrupted");
    let path = save(&state(), &dir);
    let before = std::fs::read(&path).unwrap();
    let mut changed = state();
    changed.set_metadata("adamant.rounding_seed", "7").unwrap();
    let err = changed
        .save_with(&path, |_, _| Err(std::io::Error::other("power cut")))
        .unwrap_err();
    assert!(
        matches!(
            err,
            CheckpointError::Io {
                action: "rename",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(
        Checkpoint::load(&path)
            .unwrap()
            .metadata("adamant.rounding_seed")
            .unwrap(),
        "2026"
    );
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    // And a save that goes through replaces it.
    changed.save(&path).unwrap();
    assert_eq!(
        Checkpoint::load(&path)
            .unwrap()
            .metadata("adamant.rounding_seed")
            .unwrap(),
        "7"
    );
}

#[test]
fn bad_tensors_and_reserved_keys_are_refused_when_built() {
    let mut c = Checkpoint::new();
    assert!(matches!(
        c.insert("x", TensorKind::F32, &[3], vec![0; 8]),
        Err(CheckpointError::BadTensor { .. })
    ));
    c.insert_f32("x", &[1.0]).unwrap();
    assert!(matches!(
        c.insert_f32("x", &[2.0]),
        Err(CheckpointError::BadTensor { .. })
    ));
    assert!(matches!(
        c.insert_u16("y", TensorKind::F32, &[1, 2, 3]),
        Err(CheckpointError::BadTensor { .. })
    ));
    assert!(c.set_metadata(FORMAT_KEY, "mine").is_err());
    assert!(c.set_metadata(CHECKSUM_KEY, "0").is_err());
}

/// Names come from the descriptor: the parameter and its companion by their declared names
/// (a kernel that calls its parameter `w` has `w_master`), the states by PyTorch's names.
#[test]
fn state_names_are_derived_from_the_descriptor() {
    use adamant_device::abi::{KernelDescriptor, KernelParam};
    let amsgrad = &curiosity_adam_step::DESCRIPTOR;
    let name = |d, buffer| state_name("fc.weight", d, buffer);
    assert_eq!(name(amsgrad, "p").as_deref(), Some("fc.weight"));
    assert_eq!(name(amsgrad, "m").as_deref(), Some("fc.weight.exp_avg"));
    assert_eq!(name(amsgrad, "v").as_deref(), Some("fc.weight.exp_avg_sq"));
    assert_eq!(
        name(amsgrad, "v_max").as_deref(),
        Some("fc.weight.max_exp_avg_sq")
    );
    assert_eq!(name(amsgrad, "g"), None, "a gradient is no state");
    assert_eq!(name(amsgrad, "nothing"), None);
    let master = &adamw_bf16_master::MULTI_STEPPED_DESCRIPTOR;
    assert_eq!(
        name(master, "p_master").as_deref(),
        Some("fc.weight.master")
    );
    // The same kernel with its buffers named `w`, `w_master` and `momentum`.
    let renamed: Vec<KernelParam> = adamw_bf16_master::DESCRIPTOR
        .params
        .iter()
        .map(|p| KernelParam {
            name: match p.name {
                "p" => "w",
                "p_master" => "w_master",
                "m" => "momentum",
                other => other,
            },
            ..*p
        })
        .collect();
    let renamed = KernelDescriptor {
        params: Box::leak(renamed.into_boxed_slice()),
        ..adamw_bf16_master::DESCRIPTOR
    };
    assert_eq!(name(&renamed, "w").as_deref(), Some("fc.weight"));
    assert_eq!(
        name(&renamed, "w_master").as_deref(),
        Some("fc.weight.master")
    );
    assert_eq!(
        name(&renamed, "momentum").as_deref(),
        Some("fc.weight.momentum")
    );
    assert_eq!(name(&renamed, "p"), None);
    use adamant_device::abi::Storage;
    assert_eq!(
        TensorKind::of_storage(Storage::Bf16Remainder),
        TensorKind::U16
    );
}

/// A tensor of two and a half checksum pieces, its values `i * 1e-3`.
fn pieces_state() -> (Checkpoint, usize) {
    let n = (5 * PIECE_BYTES / 2) / 4 + 3;
    let values: Vec<f32> = (0..n).map(|i| i as f32 * 1e-3).collect();
    let mut c = Checkpoint::new();
    c.insert_f32("big", &values).unwrap();
    c.insert_f32("small", &[1.0, 2.0]).unwrap();
    (c, n)
}

/// Format 2 hashes each piece of a tensor on its own: a byte changed in any piece (the first,
/// a middle one, the short last one) still fails the checksum, and the pieces' digests are
/// combined in order (two pieces swapped fail it too).
#[test]
fn a_changed_byte_in_any_piece_fails_the_checksum() {
    let dir = folder("pieces");
    let (c, n) = pieces_state();
    let path = dir.join("big.safetensors");
    c.save(&path).unwrap();
    let good = std::fs::read(&path).unwrap();
    let back = Checkpoint::load(&path).unwrap();
    assert_eq!(back.get("big"), c.get("big"));
    let start = good.len() - 8 - n * 4; // `big` is first in name order, `small` after it
    for at in [0, PIECE_BYTES + 5, 2 * PIECE_BYTES + 1, n * 4 - 1] {
        let mut bytes = good.clone();
        bytes[start + at] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        let err = Checkpoint::load(&path).unwrap_err();
        assert!(
            matches!(err, CheckpointError::Checksum { .. }),
            "byte {at}: {err}"
        );
    }
    let mut swapped = good.clone();
    let (a, b) = (start, start + PIECE_BYTES);
    let first: Vec<u8> = swapped[a..a + PIECE_BYTES].to_vec();
    swapped.copy_within(b..b + PIECE_BYTES, a);
    swapped[b..b + PIECE_BYTES].copy_from_slice(&first);
    std::fs::write(&path, &swapped).unwrap();
    assert!(matches!(
        Checkpoint::load(&path),
        Err(CheckpointError::Checksum { .. })
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file of format 1 (its checksum over the bytes themselves, as the first format defined it)
/// is still read, and still checked.
#[test]
fn a_format_1_file_is_read_and_checked() {
    let dir = folder("format1");
    let path = dir.join("v1.safetensors");
    let (c, _) = pieces_state();
    let mut metadata = BTreeMap::new();
    metadata.insert(FORMAT_KEY.to_string(), FORMAT_1.to_string());
    metadata.insert("note".to_string(), "from a first-format build".to_string());
    let sum = digest::checksum(&c.tensors, &metadata, DataHash::Bytes);
    assert_ne!(
        sum,
        digest::checksum(&c.tensors, &metadata, DataHash::Pieces),
        "the two formats hash differently"
    );
    metadata.insert(CHECKSUM_KEY.to_string(), sum);
    let views: Vec<(&str, TensorView<'_>)> = c
        .tensors
        .iter()
        .map(|(name, t)| {
            let view = TensorView::new(t.kind.dtype(), t.shape.clone(), t.data()).unwrap();
            (name.as_str(), view)
        })
        .collect();
    let bytes = safetensors::serialize(views, Some(metadata.into_iter().collect())).unwrap();
    std::fs::write(&path, &bytes).unwrap();
    let back = Checkpoint::load(&path).unwrap();
    assert_eq!(back.get("big"), c.get("big"));
    assert_eq!(back.metadata("note").unwrap(), "from a first-format build");
    let mut damaged = bytes;
    let last = damaged.len() - 1;
    damaged[last] ^= 0x10;
    std::fs::write(&path, &damaged).unwrap();
    assert!(matches!(
        Checkpoint::load(&path),
        Err(CheckpointError::Checksum { .. })
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The finiteness scan over many pieces counts every non-finite element of every type and
/// names the first, wherever the pieces split the tensor.
#[test]
fn the_non_finite_scan_counts_across_pieces() {
    let (c, n) = pieces_state();
    assert_eq!(c.get("big").unwrap().non_finite(), None);
    let mut values: Vec<f32> = (0..n).map(|i| i as f32 * 1e-3).collect();
    let per_piece = PIECE_BYTES / 4;
    for (i, x) in [
        (per_piece + 7, f32::NAN),
        (per_piece - 1, f32::INFINITY),
        (n - 1, f32::NEG_INFINITY),
    ] {
        values[i] = x;
    }
    let mut c = Checkpoint::new();
    c.insert_f32("big", &values).unwrap();
    let found = c.get("big").unwrap().non_finite().unwrap();
    assert_eq!((found.count, found.first), (3, per_piece - 1));
    assert_eq!(found.value, f32::INFINITY);
    // 16-bit types by their own exponents: f16's 0x7c00 is infinite, bf16's is finite.
    let at = PIECE_BYTES / 2 + 9; // in the second piece
    let bits: Vec<u16> = (0..PIECE_BYTES / 2 + 10)
        .map(|i| if i == at { 0x7c00 } else { 0x3c00 })
        .collect();
    let mut c = Checkpoint::new();
    c.insert_u16("h", TensorKind::F16, &bits).unwrap();
    c.insert_u16("b", TensorKind::Bf16, &bits).unwrap();
    c.insert_u16("r", TensorKind::U16, &[0xffff]).unwrap();
    let h = c.get("h").unwrap().non_finite().unwrap();
    assert_eq!((h.count, h.first, h.value), (1, at, f32::INFINITY));
    assert_eq!(c.get("b").unwrap().non_finite(), None);
    assert_eq!(
        c.get("r").unwrap().non_finite(),
        None,
        "words are no values"
    );
    c.insert_f32("big", &values).unwrap();
    // A load scans each piece as it reads it: the same findings as the scan in memory.
    let dir = folder("scan");
    let path = dir.join("scan.safetensors");
    c.save(&path).unwrap();
    let back = Checkpoint::load(&path).unwrap();
    for name in ["big", "h", "b", "r"] {
        assert!(
            back.tensors[name].scanned.get().is_some(),
            "`{name}` scanned by the read"
        );
        assert_eq!(
            back.get(name).unwrap().non_finite(),
            c.get(name).unwrap().non_finite(),
            "{name}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
