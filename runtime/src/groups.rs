//! Device buffers for one parameter group: parameters, gradients and Adam state, all the same
//! length (checked at construction, at every upload and again at every launch).
use cust::memory::{CopyDestination, DeviceBuffer, DeviceSlice};

use crate::error::{CudaContext, Error, Result};
use crate::records::{LaunchRecords, Records};

/// Which buffer of a [`ParamGroup`], for uploads, downloads and the NaN checker's slot table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupBuffer {
    /// The parameters (weights) the optimizer updates and clamps.
    Params,
    /// The gradients, written by the backward pass and read by the optimizer.
    Grads,
    /// Adam's first moment.
    M,
    /// Adam's second moment.
    V,
    /// AMSGrad's running maximum of `v` (curiosity only).
    VMax,
}

impl GroupBuffer {
    /// The buffer's name in error messages and in `docs/audit.md`: `params`, `grads`, `m`, `v`
    /// or `v_max` (the kernels' parameter names, but `params` and `grads` for `p` and `g`).
    pub fn name(self) -> &'static str {
        match self {
            GroupBuffer::Params => "params",
            GroupBuffer::Grads => "grads",
            GroupBuffer::M => "m",
            GroupBuffer::V => "v",
            GroupBuffer::VMax => "v_max",
        }
    }
}

/// One model's parameters with their gradients and optimizer state on the GPU: `params`,
/// `grads`, `m`, `v` (and `v_max` for AMSGrad), all `f32` and all of one length, which the
/// typed launchers ([`Adamant::iqn_adam`](crate::Adamant::iqn_adam) and the others) step in
/// place. The name identifies the group in errors and binds its buffers to the NaN checker's
/// slots ([`SlotBindings::bind_group`](crate::SlotBindings::bind_group)). The buffers are freed
/// when the group is dropped. See [`Adamant`](crate::Adamant) for an example.
pub struct ParamGroup {
    name: String,
    pub(crate) params: DeviceBuffer<f32>,
    pub(crate) grads: DeviceBuffer<f32>,
    pub(crate) m: DeviceBuffer<f32>,
    pub(crate) v: DeviceBuffer<f32>,
    pub(crate) v_max: Option<DeviceBuffer<f32>>,
    /// The diagnostics records of the group's launches: one tensor of 4 buffers (`p`, `g`, `m`,
    /// `v`), or 5 with AMSGrad's `v_max`.
    pub(crate) records: Records,
}

/// Records for the launches of a group's kernels: one tensor of the buffers of the kernel that
/// steps it (`iqn_adam_kernel`'s `p`, `g`, `m`, `v` like every Adam kernel's, or
/// `curiosity_adam_step`'s, with `v_max`), taken from their descriptors.
fn group_records(amsgrad: bool) -> Result<Records> {
    use adamant_kernels::optimizers::{curiosity_adam_step, iqn_adam_kernel};
    if amsgrad {
        Records::single::<curiosity_adam_step::Entry>()
    } else {
        Records::single::<iqn_adam_kernel::Entry>()
    }
}

fn zeroed(group: &str, buffer: GroupBuffer, len: usize) -> Result<DeviceBuffer<f32>> {
    DeviceBuffer::zeroed(len).map_err(|source| match source {
        cust::error::CudaError::OutOfMemory => Error::OutOfMemory {
            what: format!("group `{group}` buffer `{}`", buffer.name()),
            bytes: len * 4,
        },
        other => Error::cuda(format!("allocating group `{group}`"), other),
    })
}

impl ParamGroup {
    /// Allocates a group of `initial_params.len()` elements named `name`, with these initial
    /// parameters and zeroed gradients and moments (no `v_max`).
    ///
    /// # Errors
    ///
    /// [`Error::OutOfMemory`] naming the buffer that did not fit; [`Error::Cuda`] for another
    /// failure of the allocation or the upload.
    pub fn new(name: impl Into<String>, initial_params: &[f32]) -> Result<Self> {
        let name = name.into();
        let len = initial_params.len();
        let mut params = zeroed(&name, GroupBuffer::Params, len)?;
        params
            .copy_from(initial_params)
            .during(&format!("uploading group `{name}` params"))?;
        Ok(ParamGroup {
            grads: zeroed(&name, GroupBuffer::Grads, len)?,
            m: zeroed(&name, GroupBuffer::M, len)?,
            v: zeroed(&name, GroupBuffer::V, len)?,
            v_max: None,
            records: group_records(false)?,
            params,
            name,
        })
    }

    /// As [`ParamGroup::new`], and also AMSGrad's `v_max` (zeroed), which
    /// [`Adamant::curiosity_adam`](crate::Adamant::curiosity_adam) needs.
    ///
    /// # Errors
    ///
    /// As [`ParamGroup::new`].
    pub fn new_amsgrad(name: impl Into<String>, initial_params: &[f32]) -> Result<Self> {
        let mut group = ParamGroup::new(name, initial_params)?;
        group.v_max = Some(zeroed(
            &group.name,
            GroupBuffer::VMax,
            initial_params.len(),
        )?);
        group.records = group_records(true)?;
        Ok(group)
    }

    /// The name the group was made with: in errors, and the key of its NaN-check slots.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of parameters (and of elements in every buffer).
    pub fn len(&self) -> usize {
        self.params.len()
    }

    /// Whether the group has no parameters (a launch on it enqueues nothing).
    pub fn is_empty(&self) -> bool {
        self.params.len() == 0
    }

    /// The diagnostics records of the group's last finished optimizer launch (read after an
    /// event recorded after it, or a synchronisation): what the launch read and wrote, per
    /// buffer in the kernel's order (`p`, `g`, `m`, `v`, then `v_max`), and what the clamp
    /// caught.
    pub fn records(&self) -> LaunchRecords {
        self.records.read()
    }

    /// Whether the group keeps AMSGrad's `v_max` ([`ParamGroup::new_amsgrad`]).
    pub fn has_amsgrad(&self) -> bool {
        self.v_max.is_some()
    }

    /// Device address of the parameter buffer, in the runtime's context (for code that checks
    /// or logs it; the NaN checker binds through [`ParamGroup::device_ptr`]).
    pub fn params_device_ptr(&self) -> u64 {
        self.params.as_device_ptr().as_raw()
    }

    /// Device address of `buffer`, or `None` for a `v_max` the group does not keep.
    pub fn device_ptr(&self, buffer: GroupBuffer) -> Option<u64> {
        self.slice(buffer).map(|s| s.as_device_ptr().as_raw())
    }

    /// `buffer` as a read-only cust slice (to copy from it or read it in a kernel of your own),
    /// or `None` for a `v_max` the group does not keep. Writing goes through
    /// [`ParamGroup::upload`] and the launchers, which check lengths.
    pub fn slice(&self, buffer: GroupBuffer) -> Option<&DeviceSlice<f32>> {
        match buffer {
            GroupBuffer::Params => Some(&self.params),
            GroupBuffer::Grads => Some(&self.grads),
            GroupBuffer::M => Some(&self.m),
            GroupBuffer::V => Some(&self.v),
            GroupBuffer::VMax => self.v_max.as_deref(),
        }
    }

    fn slice_mut(&mut self, buffer: GroupBuffer) -> Result<&mut DeviceSlice<f32>> {
        let slice = match buffer {
            GroupBuffer::Params => Some(&mut *self.params),
            GroupBuffer::Grads => Some(&mut *self.grads),
            GroupBuffer::M => Some(&mut *self.m),
            GroupBuffer::V => Some(&mut *self.v),
            GroupBuffer::VMax => self.v_max.as_deref_mut(),
        };
        slice.ok_or_else(|| Error::MissingBuffer {
            kernel: "upload",
            group: self.name.clone(),
            buffer: buffer.name(),
        })
    }

    /// Copies `data` into `buffer` with cust's synchronous copy, on the legacy default stream:
    /// `data` may be reused when this returns, and a later launch on
    /// [`Adamant::stream`](crate::Adamant::stream) (a blocking stream) runs after the copy.
    ///
    /// # Errors
    ///
    /// [`Error::HostLength`] unless `data` has exactly [`ParamGroup::len`] elements;
    /// [`Error::MissingBuffer`] for a `v_max` the group does not keep; [`Error::Cuda`] if the
    /// copy fails.
    pub fn upload(&mut self, buffer: GroupBuffer, data: &[f32]) -> Result<()> {
        let expected = self.len();
        if data.len() != expected {
            return Err(Error::HostLength {
                group: self.name.clone(),
                buffer: buffer.name(),
                found: data.len(),
                expected,
            });
        }
        let name = self.name.clone();
        self.slice_mut(buffer)?
            .copy_from(data)
            .during(&format!("uploading group `{name}` {}", buffer.name()))
    }

    /// Copies `buffer` back to the host with cust's synchronous copy, which waits for the
    /// launches enqueued before it on [`Adamant::stream`](crate::Adamant::stream): a new vector
    /// of [`ParamGroup::len`] elements.
    ///
    /// # Errors
    ///
    /// [`Error::MissingBuffer`] for a `v_max` the group does not keep; [`Error::Cuda`] if the
    /// copy fails (a fault of an earlier launch may surface here).
    pub fn download(&self, buffer: GroupBuffer) -> Result<Vec<f32>> {
        let slice = self.slice(buffer).ok_or_else(|| Error::MissingBuffer {
            kernel: "download",
            group: self.name.clone(),
            buffer: buffer.name(),
        })?;
        let mut host = vec![0.0f32; slice.len()];
        slice.copy_to(&mut host[..]).during(&format!(
            "downloading group `{}` {}",
            self.name,
            buffer.name()
        ))?;
        Ok(host)
    }
}
