//! The kernel's work layout, derived from a slot table and the bindings of a checked range:
//! one [`SlotMeta`] per slot in range and one [`WorkItem`] per chunk of every slot.
//!
//! Chunking is what makes one launch fast on skewed slot sizes: a 10M-element weight buffer
//! becomes ~2,500 items spread over every block of the grid instead of one block's work.
use std::ops::RangeInclusive;

use adamant_device::nan_check::{slot_storage, SlotMeta, WorkItem};

use super::bindings::SlotRegion;
use super::tables::SlotTable;
use crate::error::{Error, Result};

/// Elements per work item: large enough that a block's reduction and its three atomics are a
/// small fraction of the item (16 elements per thread at 256 threads), small enough that a
/// large slot spreads over every SM.
pub const CHECK_CHUNK_ELEMENTS: usize = 4096;

/// The most work items one launch takes. Blocks step through the table by the grid size in
/// `u32` arithmetic; staying under `i32::MAX` keeps that from wrapping.
pub const MAX_WORK_ITEMS: usize = i32::MAX as usize;

/// What the kernel reads for one checked range.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// One entry per slot of the range, in order (slot `range.start() + i` at `i`).
    pub slots: Vec<SlotMeta>,
    /// Every chunk of every slot, slot by slot.
    pub work: Vec<WorkItem>,
}

/// Re-exported for the tests that walk the work table (the check lives with the table).
pub use super::tables::validate_range;

/// The most elements one work item takes when a check is large.
pub const MAX_CHUNK_ELEMENTS: usize = 1 << 20;

/// The chunk size for a check of `total` elements over a grid of `blocks`: [`CHECK_CHUNK_ELEMENTS`]
/// unless that would give each block many items, then larger (a multiple of it), so that each
/// item's fixed costs (three dependent table reads, a block reduction, three atomics) stay small
/// beside its data. Measured on an H200: a 2^28-element slot in 4,096-element items read at
/// 0.55× the copy bandwidth.
pub fn chunk_for(total: usize, blocks: usize) -> usize {
    let per_block_pair = total.div_ceil(2 * blocks.max(1));
    per_block_pair
        .next_multiple_of(CHECK_CHUNK_ELEMENTS)
        .clamp(CHECK_CHUNK_ELEMENTS, MAX_CHUNK_ELEMENTS)
}

/// The layout for `range` of `table`, whose slots are bound to `regions` (in range order), in
/// chunks of [`CHECK_CHUNK_ELEMENTS`].
pub fn build(
    table: SlotTable,
    range: &RangeInclusive<usize>,
    regions: &[SlotRegion],
) -> Result<Layout> {
    build_with_chunk(table, range, regions, CHECK_CHUNK_ELEMENTS)
}

/// As [`build`], with chunks of `chunk` elements (a multiple of 4; 16-byte loads of a 16-bit
/// slot need a multiple of 8, which every chunk size the checker picks is, and a chunk that
/// starts inside a group is read an element at a time).
pub fn build_with_chunk(
    table: SlotTable,
    range: &RangeInclusive<usize>,
    regions: &[SlotRegion],
    chunk: usize,
) -> Result<Layout> {
    assert!(
        chunk.is_multiple_of(4) && chunk > 0,
        "chunk size must be a positive multiple of 4"
    );
    validate_range(table, range)?;
    assert_eq!(
        regions.len(),
        range.clone().count(),
        "one region per slot of the range"
    );
    let slots = range
        .clone()
        .zip(regions)
        .map(|(index, region)| {
            let spec = &table.slots()[index];
            // The bindings refuse such a region; a layout built from regions by hand is checked
            // here.
            let storage = slot_storage(region.storage).ok_or(Error::BufferStorage {
                operation: "a NaN-check layout",
                buffer: spec.name,
                storage: region.storage,
                needs: "values (f32, bf16 or f16): a bf16 remainder is half of a master",
            })?;
            Ok(SlotMeta {
                ptr: region.ptr,
                len: region.len as u64,
                factor: spec.check.device_factor(),
                storage,
            })
        })
        .collect::<Result<_>>()?;
    let lens: Vec<usize> = regions.iter().map(|r| r.len).collect();
    let work_items: usize = lens.iter().map(|len| len.div_ceil(chunk)).sum();
    if work_items > MAX_WORK_ITEMS {
        return Err(Error::NanCheckTooLarge {
            work_items,
            limit: MAX_WORK_ITEMS,
        });
    }
    Ok(Layout {
        slots,
        work: work_items_for(&lens, chunk),
    })
}

/// The chunks of slots with these lengths: slot `i` gets `ceil(len / chunk)` items, each of
/// `chunk` elements but the last. A slot of length 0 gets none (its outputs stay quiet).
pub fn work_items_for(lens: &[usize], chunk: usize) -> Vec<WorkItem> {
    assert!(
        chunk > 0 && chunk <= u32::MAX as usize,
        "chunk size must fit a u32"
    );
    let mut items = Vec::new();
    for (slot, &len) in lens.iter().enumerate() {
        let mut start = 0;
        while start < len {
            let count = chunk.min(len - start);
            items.push(WorkItem {
                start: start as u64,
                slot: slot as u32,
                count: count as u32,
            });
            start += count;
        }
    }
    items
}
