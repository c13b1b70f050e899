//! Reading a checkpoint file with its checksum pieces hashed as they arrive: the header first,
//! then each tensor's bytes piece by piece (format 2's pieces, [`PIECE_BYTES`]), each piece
//! handed to the thread pool to hash while the next one is read. A load then takes about the
//! file's read time, not the read and then the hash.
//!
//! Nothing here judges the file: a header that does not parse, tensors that do not tile the
//! data, or a file of another length are read whole without hashing, and the checks of
//! `Checkpoint::from_bytes` name what is wrong.
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use super::digest::{PieceDigest, PIECE_BYTES};

/// Bytes of the length word before a safetensors header.
const LENGTH_BYTES: usize = 8;

/// The pieces' digests of each tensor a read hashed, by name.
pub(super) type Digests = HashMap<String, Vec<PieceDigest>>;

/// The file at `path`, and the pieces' digests of each tensor when its layout could be read
/// from its header.
pub(super) fn read_hashing(path: &Path) -> std::io::Result<(Vec<u8>, Digests)> {
    let mut file = File::open(path)?;
    let len = usize::try_from(file.metadata()?.len()).map_err(std::io::Error::other)?;
    // Zeroed pages are mapped lazily: reading into them is the only write.
    let mut bytes = vec![0u8; len];
    let Some(data_start) = header_end(&mut file, &mut bytes)? else {
        file.read_exact(&mut bytes[LENGTH_BYTES.min(len)..])?;
        return Ok((bytes, HashMap::new()));
    };
    let Some(layout) = layout(&bytes, data_start) else {
        file.read_exact(&mut bytes[data_start..])?;
        return Ok((bytes, HashMap::new()));
    };
    let digests = read_pieces(&mut file, &mut bytes[data_start..], &layout)?;
    Ok((bytes, digests))
}

/// Reads the length word and the header into `bytes`; the offset where the data starts, or
/// `None` (nothing read past the length word) for a length that does not fit the file.
fn header_end(file: &mut File, bytes: &mut [u8]) -> std::io::Result<Option<usize>> {
    if bytes.len() < LENGTH_BYTES {
        file.read_exact(bytes)?;
        return Ok(None);
    }
    file.read_exact(&mut bytes[..LENGTH_BYTES])?;
    let word: [u8; LENGTH_BYTES] = bytes[..LENGTH_BYTES].try_into().expect("eight bytes");
    let end = usize::try_from(u64::from_le_bytes(word))
        .ok()
        .and_then(|n| n.checked_add(LENGTH_BYTES))
        .filter(|&end| end <= bytes.len());
    if let Some(end) = end {
        file.read_exact(&mut bytes[LENGTH_BYTES..end])?;
    }
    Ok(end)
}

/// Each tensor's name and byte length, in the order its bytes lie in the data, when the header
/// (in `bytes`, whose data is not read yet) parses and its tensors tile the data.
fn layout(bytes: &[u8], data_start: usize) -> Option<Vec<(String, usize)>> {
    let (_, metadata) = safetensors::SafeTensors::read_metadata(bytes).ok()?;
    let mut tensors: Vec<(String, (usize, usize))> = metadata
        .tensors()
        .into_iter()
        .map(|(name, info)| (name, info.data_offsets))
        .collect();
    tensors.sort_by_key(|(_, (start, _))| *start);
    let mut at = 0;
    for (_, (start, end)) in &tensors {
        if *start != at || end < start {
            return None;
        }
        at = *end;
    }
    (data_start + at == bytes.len())
        .then(|| tensors.into_iter().map(|(n, (s, e))| (n, e - s)).collect())
}

/// Reads `data` (the file's data, in `layout`'s order) piece by piece, each piece hashed on
/// the thread pool while the next is read.
fn read_pieces(
    file: &mut File,
    data: &mut [u8],
    layout: &[(String, usize)],
) -> std::io::Result<Digests> {
    let counts: Vec<usize> = layout
        .iter()
        .map(|(_, n)| n.div_ceil(PIECE_BYTES))
        .collect();
    let slots: Vec<Mutex<Vec<Option<PieceDigest>>>> =
        counts.iter().map(|&c| Mutex::new(vec![None; c])).collect();
    let mut failed = None;
    rayon::scope(|scope| {
        let mut rest: &mut [u8] = data;
        'tensors: for (t, (_, len)) in layout.iter().enumerate() {
            let (mut tensor, after) = std::mem::take(&mut rest).split_at_mut(*len);
            rest = after;
            for k in 0..counts[t] {
                let n = tensor.len().min(PIECE_BYTES);
                let (piece, after) = std::mem::take(&mut tensor).split_at_mut(n);
                tensor = after;
                if let Err(e) = file.read_exact(piece) {
                    failed = Some(e);
                    break 'tensors;
                }
                let piece: &[u8] = piece;
                let slot = &slots[t];
                scope.spawn(move |_| {
                    let digest: PieceDigest = Sha256::digest(piece).into();
                    slot.lock().expect("a hash task panicked")[k] = Some(digest);
                });
            }
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(layout
        .iter()
        .zip(slots)
        .map(|((name, _), slot)| {
            let digests = slot.into_inner().expect("a hash task panicked");
            (name.clone(), digests.into_iter().flatten().collect())
        })
        .collect())
}
