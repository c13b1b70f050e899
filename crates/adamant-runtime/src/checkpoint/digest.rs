//! The checkpoint's checksum (`adamant.checksum`), as docs/checkpoints.md defines it for each
//! format version. Format 2 hashes each tensor's bytes in pieces of [`PIECE_BYTES`], each piece
//! on its own, so the pieces of a state of gigabytes are hashed on every core at once (one core
//! hashes SHA-256 at about a disk's speed, which made the checksum as slow as the file itself);
//! format 1 hashed the bytes themselves, and is still read.
use std::collections::BTreeMap;

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::{CheckpointTensor, CHECKSUM_KEY};

/// Bytes per piece of a tensor's data that format 2 hashes on its own (the last piece of a
/// tensor is shorter; an empty tensor has none).
pub const PIECE_BYTES: usize = 1 << 24;

/// How a format version hashes a tensor's data into the checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DataHash {
    /// Format 1: the bytes.
    Bytes,
    /// Format 2: the SHA-256 digest of each [`PIECE_BYTES`] piece, in order.
    Pieces,
}

/// The SHA-256 digests of the pieces of every tensor of `tensors`, in order: `digests[t]` holds
/// tensor `t`'s. Every piece of every tensor is one task of the thread pool.
fn piece_digests<'a>(tensors: impl Iterator<Item = &'a CheckpointTensor>) -> Vec<Vec<[u8; 32]>> {
    let pieces: Vec<(usize, &[u8])> = tensors
        .enumerate()
        .flat_map(|(t, tensor)| tensor.data().chunks(PIECE_BYTES).map(move |p| (t, p)))
        .collect();
    let hashed: Vec<(usize, [u8; 32])> = pieces
        .par_iter()
        .map(|&(t, piece)| (t, Sha256::digest(piece).into()))
        .collect();
    let mut out: Vec<Vec<[u8; 32]>> = Vec::new();
    for (t, digest) in hashed {
        if out.len() <= t {
            out.resize_with(t + 1, Vec::new);
        }
        out[t].push(digest);
    }
    out
}

/// The checksum (SHA-256, hex) of `tensors` (in name order) and `metadata` (in key order, its
/// checksum entry left out), hashing each tensor's data as `data` says.
pub(crate) fn checksum(
    tensors: &BTreeMap<String, CheckpointTensor>,
    metadata: &BTreeMap<String, String>,
    data: DataHash,
) -> String {
    let digests = match data {
        DataHash::Pieces => piece_digests(tensors.values()),
        DataHash::Bytes => Vec::new(),
    };
    let mut h = Sha256::new();
    for (t, (name, tensor)) in tensors.iter().enumerate() {
        h.update((name.len() as u64).to_le_bytes());
        h.update(name.as_bytes());
        h.update(tensor.kind.name().as_bytes());
        h.update((tensor.shape.len() as u64).to_le_bytes());
        for d in &tensor.shape {
            h.update((*d as u64).to_le_bytes());
        }
        h.update((tensor.data().len() as u64).to_le_bytes());
        match data {
            DataHash::Bytes => h.update(tensor.data()),
            DataHash::Pieces => {
                for digest in digests.get(t).into_iter().flatten() {
                    h.update(digest);
                }
            }
        }
    }
    for (k, v) in metadata.iter().filter(|(k, _)| *k != CHECKSUM_KEY) {
        h.update((k.len() as u64).to_le_bytes());
        h.update(k.as_bytes());
        h.update((v.len() as u64).to_le_bytes());
        h.update(v.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}
