//! Which device buffer each slot watches.
//!
//! A binding records a device address and a length, as the seed's `nan_check_buf_ptrs` /
//! `nan_check_buf_lens` did: the checker uploads them once and every check reads through them,
//! so the training loop can keep mutating its buffers between checks. A binding of one of the
//! runtime's buffers also holds a share of its allocation, as does every checker built from it
//! and every graph that recorded one of its checks: the buffer stays allocated while anything
//! can still read it, whoever drops it. Raw bindings ([`SlotBindings::bind_raw`]) are `unsafe`:
//! their memory's life is the caller's promise.
use super::slots::Source;
use super::tables::{SlotId, SlotTable};
use crate::buffers::{keep_of, ReadBuffer};
use crate::error::{Error, Result};
use crate::groups::ParamGroup;
use crate::memory::Keep;
use adamant_device::abi::Storage;

/// A device buffer as a slot binding records it: its address, element count and storage type,
/// not a borrow (see [`SlotBindings`] on keeping it allocated).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotRegion {
    /// The device address of the first element, in the runtime's context (0 only when empty).
    pub ptr: u64,
    /// The number of elements (of `storage`).
    pub len: usize,
    /// How the elements are stored: f32, bf16 or f16 (the checker widens a 16-bit value to the
    /// f32 it is, exactly, before it judges it). A bf16 remainder is no value by itself and
    /// cannot be bound ([`Error::BufferStorage`]).
    pub storage: Storage,
}

impl SlotRegion {
    /// The address, length and storage of `buffer`.
    pub fn of(buffer: &dyn ReadBuffer) -> SlotRegion {
        SlotRegion {
            ptr: buffer.device_ptr(),
            len: buffer.len(),
            storage: buffer.storage(),
        }
    }

    /// No elements: what [`SlotBindings::leave_to_records`] binds.
    pub const EMPTY: SlotRegion = SlotRegion {
        ptr: 0,
        len: 0,
        storage: Storage::F32,
    };
}

/// Refuses a storage no slot can watch (a bf16 remainder), naming the slot.
fn watchable(slot: &'static str, storage: Storage) -> Result<()> {
    match adamant_device::nan_check::slot_storage(storage) {
        Some(_) => Ok(()),
        None => Err(Error::BufferStorage {
            operation: "a NaN-check binding",
            buffer: slot,
            storage,
            needs: "values (f32, bf16 or f16): a bf16 remainder is half of a master",
        }),
    }
}

/// One slot's binding: the region, and the allocation behind it when it is the runtime's.
#[derive(Clone, Debug)]
struct Binding {
    region: SlotRegion,
    keep: Option<Keep>,
}

/// The device buffer bound to each slot of one [`SlotTable`] (or none yet), from which a
/// [`NanChecker`](super::NanChecker) builds its tables.
///
/// A binding records an address and a length, as the seed's `nan_check_buf_ptrs` /
/// `nan_check_buf_lens` did, so the training loop keeps using its buffers between checks, and a
/// share of the buffer's allocation, so the checker never reads freed memory. The checker only
/// reads them. Parameter-group slots are bound by group name
/// ([`SlotBindings::bind_group`]), activations one by one ([`SlotBindings::bind`]). Every method
/// that takes a [`SlotId`] refuses one of another table ([`Error::ForeignSlot`]).
#[derive(Clone, Debug)]
pub struct SlotBindings {
    table: SlotTable,
    regions: Vec<Option<Binding>>,
}

impl SlotBindings {
    /// No slot of `table` bound.
    pub fn new(table: SlotTable) -> SlotBindings {
        SlotBindings {
            table,
            regions: vec![None; table.len()],
        }
    }

    /// The table these bindings are for.
    pub fn table(&self) -> SlotTable {
        self.table
    }

    /// `slot`'s index, if it is a slot of this table.
    fn index_of(&self, slot: SlotId) -> Result<usize> {
        if slot.table() != self.table {
            return Err(Error::ForeignSlot {
                index: slot.index(),
                name: slot.name(),
                table: slot.table().name(),
                bindings: self.table.name(),
            });
        }
        Ok(slot.index())
    }

    /// Binds `slot` to `data` (replacing an earlier binding), keeping a share of its
    /// allocation (see [`SlotBindings`]).
    ///
    /// # Errors
    ///
    /// [`Error::ForeignSlot`] for a slot of another table, [`Error::BufferStorage`] for a bf16
    /// remainder (nothing is bound).
    pub fn bind(&mut self, slot: SlotId, data: &dyn ReadBuffer) -> Result<&mut Self> {
        let index = self.index_of(slot)?;
        watchable(slot.name(), data.storage())?;
        self.regions[index] = Some(Binding {
            region: SlotRegion::of(data),
            keep: Some(keep_of(data)),
        });
        Ok(self)
    }

    /// Binds every slot whose [`Source::Group`] names this group (by [`ParamGroup::name`]) to
    /// that buffer of the group. Returns the slots bound.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownSlotGroup`] if the table names no slot for this group (a misspelt group
    /// name would otherwise leave its slots silently unbound); [`Error::MissingBuffer`] if the
    /// group lacks a buffer a slot wants (AMSGrad's `v_max` on a group made with
    /// [`ParamGroup::new`]); [`Error::BufferStorage`] for a bf16 remainder. Slots bound before
    /// the error stay bound.
    pub fn bind_group(&mut self, group: &ParamGroup) -> Result<Vec<SlotId>> {
        let mut bound = Vec::new();
        for spec in self.table.slots() {
            let Source::Group {
                group: wanted,
                buffer,
            } = spec.source
            else {
                continue;
            };
            if wanted != group.name() {
                continue;
            }
            let data = group.buffer(buffer).ok_or_else(|| Error::MissingBuffer {
                kernel: "nan_check_kernel",
                group: group.name().to_string(),
                buffer: buffer.name(),
            })?;
            watchable(spec.name, data.storage())?;
            self.regions[spec.index] = Some(Binding {
                region: SlotRegion::of(data),
                keep: Some(keep_of(data)),
            });
            bound.push(SlotId::declared(self.table, spec.index));
        }
        if bound.is_empty() {
            return Err(Error::UnknownSlotGroup {
                group: group.name().to_string(),
            });
        }
        Ok(bound)
    }

    /// Binds every slot of each of `groups` ([`SlotBindings::bind_group`] for each, in order):
    /// with every group the table names, only the activation slots remain to bind.
    ///
    /// # Errors
    ///
    /// As [`SlotBindings::bind_group`], for the first group that fails.
    pub fn bind_groups<'g>(
        &mut self,
        groups: impl IntoIterator<Item = &'g ParamGroup>,
    ) -> Result<()> {
        for group in groups {
            self.bind_group(group)?;
        }
        Ok(())
    }

    /// Binds `slot` to `len` elements of `storage` at device address `ptr` (0 is accepted only
    /// with `len` 0): for buffers that are not the runtime's, such as those of other CUDA code.
    ///
    /// # Errors
    ///
    /// [`Error::ForeignSlot`] for a slot of another table; [`Error::BufferStorage`] for a bf16
    /// remainder; [`Error::NullSlotBuffer`] for a null `ptr` with a non-zero `len`. Nothing is
    /// bound on error.
    ///
    /// # Safety
    /// `ptr` must address `len` elements of `storage` of device memory in the runtime's context,
    /// which must stay allocated while checks built from these bindings run.
    pub unsafe fn bind_raw(
        &mut self,
        slot: SlotId,
        ptr: u64,
        len: usize,
        storage: Storage,
    ) -> Result<&mut Self> {
        let index = self.index_of(slot)?;
        watchable(slot.name(), storage)?;
        if ptr == 0 && len != 0 {
            return Err(Error::NullSlotBuffer {
                index,
                name: slot.name(),
                len,
            });
        }
        self.regions[index] = Some(Binding {
            region: SlotRegion { ptr, len, storage },
            keep: None,
        });
        Ok(self)
    }

    /// Binds `slot` to no elements: the checker kernel does no work for it. For a slot whose
    /// result the caller takes from elsewhere: a training step that owns its groups (adamant-rl's
    /// session, say) does this for every group slot, whose result it takes from the group's
    /// diagnostics records ([`result_from_record`](crate::nan_check::result_from_record)).
    ///
    /// # Errors
    ///
    /// [`Error::ForeignSlot`] for a slot of another table.
    pub fn leave_to_records(&mut self, slot: SlotId) -> Result<&mut Self> {
        let index = self.index_of(slot)?;
        self.regions[index] = Some(Binding {
            region: SlotRegion::EMPTY,
            keep: None,
        });
        Ok(self)
    }

    /// Removes the binding of `slot`.
    ///
    /// # Errors
    ///
    /// [`Error::ForeignSlot`] for a slot of another table.
    pub fn unbind(&mut self, slot: SlotId) -> Result<&mut Self> {
        let index = self.index_of(slot)?;
        self.regions[index] = None;
        Ok(self)
    }

    /// The buffer bound to `slot`, if any.
    ///
    /// # Errors
    ///
    /// [`Error::ForeignSlot`] for a slot of another table.
    pub fn region(&self, slot: SlotId) -> Result<Option<SlotRegion>> {
        Ok(self.regions[self.index_of(slot)?]
            .as_ref()
            .map(|b| b.region))
    }

    /// Whether a buffer is bound to `slot`.
    ///
    /// # Errors
    ///
    /// [`Error::ForeignSlot`] for a slot of another table.
    pub fn is_bound(&self, slot: SlotId) -> Result<bool> {
        Ok(self.region(slot)?.is_some())
    }

    /// The regions bound to the slots of `range` (slot indices, inclusive), in order: what a
    /// [`NanChecker`](super::NanChecker) for `range` would watch.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidSlotRange`] for an empty range or one past the table;
    /// [`Error::UnboundSlot`] naming the first slot of the range with no buffer bound.
    pub fn regions_for(&self, range: &std::ops::RangeInclusive<usize>) -> Result<Vec<SlotRegion>> {
        super::tables::validate_range(self.table, range)?;
        range
            .clone()
            .map(|index| {
                self.regions[index]
                    .as_ref()
                    .map(|b| b.region)
                    .ok_or(Error::UnboundSlot {
                        table: self.table.name(),
                        index,
                        name: self.table.slots()[index].name,
                    })
            })
            .collect()
    }

    /// The allocations behind the bindings of `range` (the runtime's buffers among them), for a
    /// checker to keep.
    pub(crate) fn keeps_for(&self, range: &std::ops::RangeInclusive<usize>) -> Vec<Keep> {
        self.regions[range.clone()]
            .iter()
            .flatten()
            .filter_map(|b| b.keep.clone())
            .collect()
    }
}
