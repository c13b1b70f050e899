//! A [`ParamGroup`] (one model's f32 parameters and Adam state, the runtime's own buffers) into
//! a checkpoint and back, for the kernel that steps it, named by the group: an application whose
//! step updates groups with kernels chosen at run time (adamant-rl's session) saves and restores
//! them through the same checks as [`Checkpoint::save_tensor`] and [`Restore::tensor`].
use adamant_device::abi::{KernelDescriptor, ParamRole};
use cust::stream::Stream;

use super::state::{Kept, Restore};
use super::Checkpoint;
use crate::buffers::keep_of;
use crate::error::{Error, Result};
use crate::groups::{GroupBuffer, ParamGroup};
use crate::step::StepStates;

/// The buffers `kernel` keeps (its parameter buffer and states, not its inputs), each the
/// group's buffer of that name.
///
/// # Errors
///
/// [`Error::MissingBuffer`] for a buffer the kernel keeps that the group has not (a `v_max`,
/// or any buffer of a kernel that is no single-tensor optimizer entry of f32 buffers);
/// [`Error::StorageMismatch`] for a kernel that keeps a buffer in another storage type than
/// the group's.
pub(super) fn group_kept(
    group: &ParamGroup,
    kernel: &'static KernelDescriptor,
) -> Result<Vec<Kept>> {
    let missing = |buffer: &'static str| Error::MissingBuffer {
        kernel: kernel.name,
        group: group.name().to_string(),
        buffer,
    };
    if kernel.param_buffer_index().is_none() || kernel.is_multi_tensor() {
        return Err(missing(
            "p (a single-tensor optimizer entry's parameter buffer)",
        ));
    }
    let mut kept = Vec::new();
    for param in kernel.params {
        if !matches!(param.role, ParamRole::ParamBuffer | ParamRole::State) {
            continue;
        }
        let which = match param.name {
            "p" => GroupBuffer::Params,
            "m" => GroupBuffer::M,
            "v" => GroupBuffer::V,
            "v_max" => GroupBuffer::VMax,
            other => return Err(missing(other)),
        };
        let buffer = group.buffer(which).ok_or_else(|| missing(param.name))?;
        if param.storage != buffer.storage() {
            return Err(Error::StorageMismatch {
                kernel: kernel.name,
                buffer: param.name,
                declared: param.storage,
                given: buffer.storage(),
            });
        }
        kept.push(Kept {
            buffer: param.name,
            address: buffer.device_ptr(),
            len: buffer.len(),
            storage: buffer.storage(),
            keep: Some(keep_of(buffer)),
        });
    }
    Ok(kept)
}

impl Checkpoint {
    /// As [`Checkpoint::save_tensor`], for `group` stepped by `kernel` (its plain entry's
    /// descriptor, `E::DESCRIPTOR`), under the group's name: `<name>`, `<name>.exp_avg`, ...
    ///
    /// # Errors
    ///
    /// As [`Checkpoint::save_tensor`]; [`Error::MissingBuffer`] or [`Error::StorageMismatch`] for
    /// a kernel whose buffers the group does not hold.
    pub fn save_group(
        &mut self,
        group: &ParamGroup,
        kernel: &'static KernelDescriptor,
        step: Option<(&StepStates, usize)>,
        stream: &Stream,
    ) -> Result<()> {
        let kept = group_kept(group, kernel)?;
        self.save_kept(kernel, group.name(), kept, step, stream)
    }
}

impl Restore<'_, '_> {
    /// As [`Restore::tensor`], into `group` stepped by `kernel`, from the tensors under the
    /// group's name.
    ///
    /// # Errors
    ///
    /// As [`Restore::tensor`]; [`Error::MissingBuffer`] or [`Error::StorageMismatch`] for a
    /// kernel whose buffers the group does not hold.
    pub fn group(
        &mut self,
        group: &mut ParamGroup,
        kernel: &'static KernelDescriptor,
    ) -> Result<()> {
        let kept = group_kept(group, kernel)?;
        self.queue(kernel, group.name(), kept)
    }
}
