//! The finiteness scan of a checkpoint tensor, piece by piece (the checksum's pieces,
//! [`PIECE_BYTES`]): each piece's count of NaN and infinite elements and the first one's index,
//! combined in order. A load scans each piece as it reads and hashes it, so a restore's check
//! that every moment is finite reads nothing again; a tensor built in memory is scanned on every
//! core at its first check.
use rayon::prelude::*;

use super::digest::PIECE_BYTES;
use super::TensorKind;

/// A tensor's (or a piece's) non-finite elements: how many, and the first one's index; `None`
/// when there is none.
pub(crate) type Found = Option<(usize, usize)>;

/// Bytes per element and the exponent mask of a float kind (an element is NaN or infinite when
/// its exponent bits are all ones); `None` for words that are no values by themselves.
fn float_layout(kind: TensorKind) -> Option<(usize, u32)> {
    let exponent = match kind {
        TensorKind::F32 => 0x7F80_0000,
        TensorKind::Bf16 => 0x7F80,
        TensorKind::F16 => 0x7C00,
        TensorKind::U16 | TensorKind::U32 => return None,
    };
    Some((kind.bytes(), exponent))
}

/// The non-finite elements of `piece` (whole elements of `kind`); `None` for a word kind.
pub(crate) fn scan_piece(kind: TensorKind, piece: &[u8]) -> Option<Found> {
    let (bytes, exponent) = float_layout(kind)?;
    let word = |b: &[u8]| match bytes {
        4 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        _ => u16::from_le_bytes([b[0], b[1]]) as u32,
    };
    let bad = |b: &[u8]| word(b) & exponent == exponent;
    // Counted without a branch per element (it vectorizes); searched only where there is one.
    let count = piece.chunks_exact(bytes).filter(|b| bad(b)).count();
    Some(match count {
        0 => None,
        _ => Some((
            count,
            piece.chunks_exact(bytes).position(bad).expect("counted"),
        )),
    })
}

/// The pieces' findings (in order, each piece [`PIECE_BYTES`] long but the last) combined for
/// a tensor of `kind`: the total count, and the first element's index in the tensor.
pub(crate) fn combine(kind: TensorKind, pieces: &[Found]) -> Found {
    let per_piece = float_layout(kind).map_or(1, |(bytes, _)| PIECE_BYTES / bytes);
    let (k, (_, first)) = pieces
        .iter()
        .enumerate()
        .find_map(|(k, f)| f.map(|f| (k, f)))?;
    let count = pieces.iter().flatten().map(|(n, _)| n).sum();
    Some((count, k * per_piece + first))
}

/// The non-finite elements of `data` (a whole tensor of `kind`), scanned on every core; `None`
/// for a word kind.
pub(crate) fn scan(kind: TensorKind, data: &[u8]) -> Option<Found> {
    float_layout(kind)?;
    let pieces: Vec<Found> = data
        .par_chunks(PIECE_BYTES)
        .map(|p| scan_piece(kind, p).expect("a float kind"))
        .collect();
    Some(combine(kind, &pieces))
}
