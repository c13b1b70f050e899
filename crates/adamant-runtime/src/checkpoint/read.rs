//! Reading a checkpoint file with its checksum pieces hashed and scanned as they arrive: the
//! header first, then every piece of every tensor (format 2's pieces, [`PIECE_BYTES`]) read at
//! its own offset by a task of the thread pool, which then hashes it and counts its non-finite
//! elements while the other tasks read. A load then takes about the file's read time, not the
//! read, then the hash, then the scan; and several reads in flight move more than one.
//!
//! Nothing here judges the file: a header that does not parse, tensors that do not tile the
//! data, or a file of another length are read whole without hashing, and the checks of
//! `Checkpoint::from_bytes` name what is wrong.
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::Path;

use rayon::prelude::*;

use super::digest::{hash_piece, PieceDigest, PIECE_BYTES};
use super::scan::{combine, scan_piece, Found};
use super::TensorKind;

/// What a read found of one tensor's pieces.
pub(super) struct ReadTensor {
    /// The kind the header gave it (its findings mean nothing for another).
    pub kind: TensorKind,
    /// Each piece's digest, in order.
    pub digests: Vec<PieceDigest>,
    /// Its non-finite elements (None for a word kind's, which are no values).
    pub non_finite: Found,
}

/// What a read found of each tensor it read piece by piece, by name.
pub(super) type ReadPieces = HashMap<String, ReadTensor>;

/// Bytes of the length word before a safetensors header.
const LENGTH_BYTES: usize = 8;

/// The file at `path`, and what was found of each tensor's pieces when its layout could be read
/// from its header.
pub(super) fn read_hashing(path: &Path) -> std::io::Result<(Vec<u8>, ReadPieces)> {
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
    let found = read_pieces(&file, data_start, &mut bytes[data_start..], &layout)?;
    Ok((bytes, found))
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

/// Each tensor's name, kind and byte length, in the order its bytes lie in the data, when the
/// header (in `bytes`, whose data is not read yet) parses, every tensor is of a kind a state
/// holds, and the tensors tile the data.
fn layout(bytes: &[u8], data_start: usize) -> Option<Vec<(String, TensorKind, usize)>> {
    let (_, metadata) = safetensors::SafeTensors::read_metadata(bytes).ok()?;
    let mut tensors: Vec<(String, TensorKind, (usize, usize))> = metadata
        .tensors()
        .into_iter()
        .map(|(name, info)| Some((name, TensorKind::of(info.dtype)?, info.data_offsets)))
        .collect::<Option<_>>()?;
    tensors.sort_by_key(|(_, _, (start, _))| *start);
    let mut at = 0;
    for (_, _, (start, end)) in &tensors {
        if *start != at || end < start {
            return None;
        }
        at = *end;
    }
    (data_start + at == bytes.len()).then(|| {
        tensors
            .into_iter()
            .map(|(n, k, (s, e))| (n, k, e - s))
            .collect()
    })
}

/// Reads `data` (the file's data, from offset `data_start`, in `layout`'s order): every piece
/// a task of the thread pool that reads it at its offset, hashes it and scans it.
fn read_pieces(
    file: &File,
    data_start: usize,
    data: &mut [u8],
    layout: &[(String, TensorKind, usize)],
) -> std::io::Result<ReadPieces> {
    // (tensor, offset in the file, the piece's bytes)
    let mut pieces: Vec<(usize, u64, &mut [u8])> = Vec::new();
    let mut rest: &mut [u8] = data;
    let mut at = data_start as u64;
    for (t, (_, _, len)) in layout.iter().enumerate() {
        let (tensor, after) = std::mem::take(&mut rest).split_at_mut(*len);
        rest = after;
        for piece in tensor.chunks_mut(PIECE_BYTES) {
            let n = piece.len() as u64;
            pieces.push((t, at, piece));
            at += n;
        }
    }
    let found: Vec<(usize, PieceDigest, Option<Found>)> = pieces
        .into_par_iter()
        .map(|(t, offset, piece)| {
            read_at(file, piece, offset)?;
            Ok((t, hash_piece(piece), scan_piece(layout[t].1, piece)))
        })
        .collect::<std::io::Result<_>>()?;
    // In order: the pieces were listed tensor by tensor, and `collect` keeps their order.
    let mut per_tensor: Vec<(Vec<PieceDigest>, Vec<Found>)> =
        layout.iter().map(|_| (Vec::new(), Vec::new())).collect();
    for (t, digest, scanned) in found {
        per_tensor[t].0.push(digest);
        per_tensor[t].1.extend(scanned);
    }
    Ok(layout
        .iter()
        .zip(per_tensor)
        .map(|((name, kind, _), (digests, scanned))| {
            let tensor = ReadTensor {
                kind: *kind,
                digests,
                non_finite: combine(*kind, &scanned),
            };
            (name.clone(), tensor)
        })
        .collect())
}

/// Fills `buf` from `file` at `offset` (a positioned read: the tasks share the file).
#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

/// Fills `buf` from `file` at `offset` (a positioned read: the tasks share the file).
#[cfg(windows)]
fn read_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(file, buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}
