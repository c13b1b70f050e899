//! How a fused launch cuts its tensors into chunks (one block each): by elements, the same for
//! every tensor, or by bytes, so that every block moves about the same bytes whatever its
//! tensor's storage.
//!
//! Why bytes by default: a block's fixed cost (the chain of dependent reads before its first
//! load, its record flush after its last) is paid per chunk, and a 16-bit tensor moves half the
//! bytes per element of an f32 one. With one element count for every tensor, a bf16 set pays
//! that fixed cost twice as often per byte. Measured on an H100 (docs/performance.md, seventeenth
//! session, call D, one binary): the RL set as bf16 AdamW (14 B an element), graph replay of
//! advance + one fused launch, 51.6 µs in chunks of 4,096 elements for every tensor and 47.7 µs
//! by this default; the same set in f32 71.5 and 71.4 µs, the four-group set 52.0 and 51.8 µs.
//! One element count of 8,192 for every tensor would slow the four-group set instead (53.8 µs
//! against 50.9 at 4,096 in call A).

use crate::error::{Error, Result};
use crate::launch_check::BufferRange;

/// Elements per chunk of an f32 Adam tensor (28 bytes an element) in a fused launch, and the
/// element count of [`FUSED_CHUNK_BYTES`]: twice the multi-tensor entries'. Each block, before
/// its first load, waits out a chain of dependent reads (the chunk, the tensor's record pointer,
/// the record, its scale and rule), and flushes its record after its last, so fewer, larger
/// chunks pay it less often; much larger ones leave a set of few tensors too few blocks.
/// Measured on an H100 (docs/performance.md, issue 25 fifth session), graph replays of the RL
/// set (102 tensors) with chunks of 1,024 / 2,048 / 4,096 / 8,192 / 32,768 elements: 98 / 81 /
/// 78 / 78 / 95 µs, twice; the four-group set 60.1 µs at 2,048 and 58.3 at 4,096.
pub const FUSED_CHUNK_ELEMENTS: usize = 2 * crate::multi::MULTI_CHUNK_ELEMENTS;

/// Bytes f32 Adam moves per element: `p`, `m` and `v` read and written, `g` read.
pub const ADAM_F32_BYTES_PER_ELEMENT: usize = 28;

/// Bytes a block of a fused launch moves by default (read + written, over all of its tensor's
/// buffers): [`FUSED_CHUNK_ELEMENTS`] elements of f32 Adam.
pub const FUSED_CHUNK_BYTES: usize = FUSED_CHUNK_ELEMENTS * ADAM_F32_BYTES_PER_ELEMENT;

/// The largest chunk [`ChunkSize::Elements`] takes, and the most elements a byte budget gives.
pub const MAX_CHUNK_ELEMENTS: usize = 1 << 24;

/// A byte budget's chunks are a whole number of a block's sweeps (a group of four elements a
/// thread) when they can be: a chunk of 3,185 elements would end in a sweep with most of its
/// threads idle.
const SWEEP_ELEMENTS: usize = crate::launch::BLOCK_THREADS as usize * 4;

/// How a fused set cuts each tensor into chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkSize {
    /// The same element count for every tensor (a positive multiple of 4, at most
    /// [`MAX_CHUNK_ELEMENTS`]).
    Elements(usize),
    /// About this many bytes moved per chunk: a tensor's chunk is the budget divided by the bytes
    /// its rule moves per element (read + written), rounded down to a multiple of 1,024 elements
    /// (a block's sweep) when at least one sweep fits, else to a multiple of 4, and at least 4.
    Bytes(usize),
}

impl ChunkSize {
    /// The runtime's default: [`FUSED_CHUNK_BYTES`] per chunk.
    pub const DEFAULT: ChunkSize = ChunkSize::Bytes(FUSED_CHUNK_BYTES);

    /// This size checked.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidChunkElements`] for elements that are not a positive multiple of 4 up to
    /// [`MAX_CHUNK_ELEMENTS`]; [`Error::InvalidChunkBytes`] for a budget of less than 4 bytes
    /// (the fewest any rule moves per element: a 16-bit parameter read and written, so a smaller
    /// budget holds no element) or more than 4 bytes × [`MAX_CHUNK_ELEMENTS`] (the budget at
    /// which that smallest rule's chunk reaches [`MAX_CHUNK_ELEMENTS`]).
    pub fn checked(self) -> Result<ChunkSize> {
        match self {
            ChunkSize::Elements(n) if n == 0 || !n.is_multiple_of(4) || n > MAX_CHUNK_ELEMENTS => {
                Err(Error::InvalidChunkElements {
                    value: n,
                    limit: MAX_CHUNK_ELEMENTS,
                })
            }
            ChunkSize::Bytes(b) if !(4..=4 * MAX_CHUNK_ELEMENTS).contains(&b) => {
                Err(Error::InvalidChunkBytes {
                    value: b,
                    limit: 4 * MAX_CHUNK_ELEMENTS,
                })
            }
            ok => Ok(ok),
        }
    }

    /// Elements per chunk of a tensor that moves `bytes_per_element` bytes an element (read +
    /// written; 0 is taken as 1).
    pub fn elements_for(self, bytes_per_element: usize) -> usize {
        match self {
            ChunkSize::Elements(n) => n,
            ChunkSize::Bytes(budget) => {
                let n = budget / bytes_per_element.max(1);
                let unit = if n >= SWEEP_ELEMENTS {
                    SWEEP_ELEMENTS
                } else {
                    4
                };
                (n / unit * unit).clamp(4, MAX_CHUNK_ELEMENTS)
            }
        }
    }
}

/// Bytes a tensor's update moves per element: every buffer read, and written again where the
/// rule writes it.
pub(crate) fn bytes_per_element(buffers: &[BufferRange]) -> usize {
    buffers
        .iter()
        .map(|b| usize::from(b.bytes) * if b.writable { 2 } else { 1 })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(bytes: u8, writable: bool) -> BufferRange {
        BufferRange {
            name: "b",
            address: 0x1000,
            len: 16,
            writable,
            bytes,
        }
    }

    /// Counted from the buffers, as the update reads and writes them.
    #[test]
    fn bytes_per_element_counts_reads_and_writes() {
        let adam = [
            buffer(4, true),
            buffer(4, false),
            buffer(4, true),
            buffer(4, true),
        ];
        assert_eq!(bytes_per_element(&adam), ADAM_F32_BYTES_PER_ELEMENT);
        let mut amsgrad = adam.to_vec();
        amsgrad.push(buffer(4, true));
        assert_eq!(bytes_per_element(&amsgrad), 36);
        let bf16 = [
            buffer(2, true),
            buffer(2, false),
            buffer(2, true),
            buffer(2, true),
        ];
        assert_eq!(bytes_per_element(&bf16), 14);
        let bf16_f32_moments = [
            buffer(2, true),
            buffer(2, false),
            buffer(4, true),
            buffer(4, true),
        ];
        assert_eq!(bytes_per_element(&bf16_f32_moments), 22);
    }

    /// The default keeps f32 Adam's chunk and gives a tensor moving half the bytes twice the
    /// elements; odd quotients round down to whole sweeps, tiny budgets to multiples of 4.
    #[test]
    fn a_byte_budget_gives_each_storage_its_elements() {
        let d = ChunkSize::DEFAULT;
        assert_eq!(
            d.elements_for(ADAM_F32_BYTES_PER_ELEMENT),
            FUSED_CHUNK_ELEMENTS
        );
        assert_eq!(d.elements_for(14), 2 * FUSED_CHUNK_ELEMENTS);
        // 114,688 / 36 = 3,185.8: three whole sweeps.
        assert_eq!(d.elements_for(36), 3 * 1024);
        // 114,688 / 22 = 5,213.1: five.
        assert_eq!(d.elements_for(22), 5 * 1024);
        // 0 bytes is taken as 1 (114,688 is 112 whole sweeps).
        assert_eq!(d.elements_for(0), FUSED_CHUNK_BYTES);
        // Below one sweep: a multiple of 4, at least 4.
        assert_eq!(ChunkSize::Bytes(28 * 100 + 5).elements_for(28), 100);
        assert_eq!(ChunkSize::Bytes(28 * 99).elements_for(28), 96);
        assert_eq!(ChunkSize::Bytes(4).elements_for(36), 4);
        // Never past the limit.
        assert_eq!(
            ChunkSize::Bytes(4 * MAX_CHUNK_ELEMENTS).elements_for(2),
            MAX_CHUNK_ELEMENTS
        );
        // An element count is the same for every storage.
        assert_eq!(ChunkSize::Elements(2048).elements_for(14), 2048);
        assert_eq!(ChunkSize::Elements(2048).elements_for(36), 2048);
    }

    #[test]
    fn sizes_are_checked() {
        for ok in [
            ChunkSize::Elements(4),
            ChunkSize::Elements(MAX_CHUNK_ELEMENTS),
            ChunkSize::Bytes(4),
            ChunkSize::DEFAULT,
            ChunkSize::Bytes(4 * MAX_CHUNK_ELEMENTS),
        ] {
            assert_eq!(ok.checked().unwrap(), ok);
        }
        for bad in [0, 2, 8190, MAX_CHUNK_ELEMENTS + 4] {
            let e = ChunkSize::Elements(bad).checked().unwrap_err();
            assert!(
                matches!(e, Error::InvalidChunkElements { value, .. } if value == bad),
                "{e}"
            );
        }
        for bad in [0, 3, 4 * MAX_CHUNK_ELEMENTS + 1] {
            let e = ChunkSize::Bytes(bad).checked().unwrap_err();
            assert!(
                matches!(e, Error::InvalidChunkBytes { value, .. } if value == bad),
                "{e}"
            );
            assert!(e.to_string().contains(&bad.to_string()), "{e}");
        }
    }
}
