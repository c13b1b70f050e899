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

/// One piece's digest.
pub(crate) type PieceDigest = [u8; 32];

/// The digest of one piece.
pub(crate) fn hash_piece(piece: &[u8]) -> PieceDigest {
    Sha256::digest(piece).into()
}

/// The digests of `data`'s pieces, in order, hashed on every core.
pub(crate) fn hash_pieces(data: &[u8]) -> Vec<PieceDigest> {
    data.par_chunks(PIECE_BYTES).map(hash_piece).collect()
}

/// How many pieces `bytes` bytes make.
pub(crate) fn piece_count(bytes: usize) -> usize {
    bytes.div_ceil(PIECE_BYTES)
}

/// Makes sure every tensor of `tensors` knows its pieces' digests (a download or a read that
/// hashed them as they came left them; the others are hashed here, the thread pool taking the
/// pieces of every tensor at once).
fn ensure_digests<'a>(tensors: impl Iterator<Item = &'a CheckpointTensor>) {
    let missing: Vec<&CheckpointTensor> = tensors.filter(|t| t.digests.get().is_none()).collect();
    missing.par_iter().for_each(|tensor| {
        // A tensor's bytes never change once it is made, so its digests are its bytes'.
        let _ = tensor.digests.set(hash_pieces(tensor.data()));
    });
}

/// The checksum (SHA-256, hex) of `tensors` (in name order) and `metadata` (in key order, its
/// checksum entry left out), hashing each tensor's data as `data` says.
pub(crate) fn checksum(
    tensors: &BTreeMap<String, CheckpointTensor>,
    metadata: &BTreeMap<String, String>,
    data: DataHash,
) -> String {
    if data == DataHash::Pieces {
        ensure_digests(tensors.values());
    }
    let mut h = Sha256::new();
    for (name, tensor) in tensors {
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
                for digest in tensor.digests.get().expect("ensured above") {
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
