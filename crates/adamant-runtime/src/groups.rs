//! Device buffers for one parameter group: parameters, gradients and Adam state, all the same
//! length (checked at construction, at every upload and again at every launch).
use crate::buffers::{DeviceArray, ParamBuffer, ReadBuffer};
use crate::error::{Error, Result};
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
/// `grads`, `m`, `v` (and `v_max` for AMSGrad), all `f32` and all of one length, which an
/// optimizer launch steps in place ([`ParamGroup::parts_mut`] lends it all of them at once). The
/// name identifies the group in errors and binds its buffers to the NaN checker's slots
/// ([`SlotBindings::bind_group`](crate::SlotBindings::bind_group)). The buffers are freed when
/// the group is dropped. See [`Adamant`](crate::Adamant) for an example.
pub struct ParamGroup {
    name: String,
    pub(crate) params: ParamBuffer,
    pub(crate) grads: DeviceArray,
    pub(crate) m: DeviceArray,
    pub(crate) v: DeviceArray,
    pub(crate) v_max: Option<DeviceArray>,
    /// The diagnostics records of the group's launches: one tensor of 4 buffers (`p`, `g`, `m`,
    /// `v`), or 5 with AMSGrad's `v_max`.
    pub(crate) records: Records,
}

/// Every buffer of a [`ParamGroup`] and its records, borrowed at once
/// ([`ParamGroup::parts_mut`]): what a launch of a kernel that steps the whole group takes
/// (its `#[param]`, the gradients as an `#[input]`, the moments as `#[state]`s, and the
/// [`Records`] the launch writes), which [`ParamGroup::params_mut`] and
/// [`ParamGroup::state_mut`], one buffer at a time, cannot give together.
///
/// ```
/// use adamant_kernels::optimizers::attn_adam_kernel;
/// use adamant_runtime::{adam_scalars, AdamHyper, ClampPolicy, ParamGroup, ReadBuffer};
///
/// # fn main() -> adamant_runtime::Result<()> {
/// # let rt = match adamant_runtime::Adamant::new() {
/// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
/// #     other => other?,
/// # };
/// let mut group = ParamGroup::new("net", &vec![0.1; 1024])?;
/// let hyper = AdamHyper::pytorch_defaults(1)?;
/// let scalars = adam_scalars!(attn_adam_kernel, hyper, weight_decay: hyper.weight_decay)?;
/// let parts = group.parts_mut();
/// let buffers = attn_adam_kernel::Buffers {
///     p: parts.params,
///     g: parts.grads.input(),
///     m: parts.m,
///     v: parts.v,
/// };
/// let policy = ClampPolicy::from_isv(1.0);
/// rt.launch::<attn_adam_kernel::Entry>(rt.stream())
///     .plain(&scalars, policy)
///     .buffers(&buffers, parts.records)?;
/// # rt.synchronize()?;
/// # Ok(())
/// # }
/// ```
pub struct GroupParts<'g> {
    /// The parameters (a launch's `#[param]`).
    pub params: &'g mut ParamBuffer,
    /// The gradients, read only (a launch's `#[input]`: [`ReadBuffer::input`]).
    pub grads: &'g DeviceArray,
    /// Adam's first moment.
    pub m: &'g mut DeviceArray,
    /// Adam's second moment.
    pub v: &'g mut DeviceArray,
    /// AMSGrad's `v_max`, if the group keeps it ([`ParamGroup::new_amsgrad`]).
    pub v_max: Option<&'g mut DeviceArray>,
    /// The group's diagnostics records, which [`ParamGroup::records`] reads: one tensor of the
    /// group's buffers in the order `p`, `g`, `m`, `v` (then `v_max`).
    pub records: &'g Records,
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

/// A zeroed buffer of the group; an allocation error names the group and the buffer.
fn zeroed(group: &str, buffer: GroupBuffer, len: usize) -> Result<DeviceArray> {
    DeviceArray::zeroed(len).map_err(|e| named(e, group, buffer))
}

fn named(e: Error, group: &str, buffer: GroupBuffer) -> Error {
    match e {
        Error::OutOfMemory { bytes, .. } => Error::OutOfMemory {
            what: format!("group `{group}` buffer `{}`", buffer.name()),
            bytes,
        },
        other => other,
    }
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
        let params = ParamBuffer::from_host(initial_params)
            .map_err(|e| named(e, &name, GroupBuffer::Params))?;
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

    /// As [`ParamGroup::new`], and also AMSGrad's `v_max` (zeroed), which an AMSGrad kernel
    /// (`curiosity_adam_step`) needs.
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
    /// or logs it).
    pub fn params_device_ptr(&self) -> u64 {
        self.params.device_ptr()
    }

    /// Device address of `buffer`, or `None` for a `v_max` the group does not keep.
    pub fn device_ptr(&self, buffer: GroupBuffer) -> Option<u64> {
        self.buffer(buffer).map(|b| b.device_ptr())
    }

    /// `buffer` for reading: an `#[input]` of a launch of your own (a soft update reads the
    /// online parameters), a NaN-check binding; `None` for a `v_max` the group does not keep.
    pub fn buffer(&self, buffer: GroupBuffer) -> Option<&dyn ReadBuffer> {
        match buffer {
            GroupBuffer::Params => Some(&self.params),
            GroupBuffer::Grads => Some(&self.grads),
            GroupBuffer::M => Some(&self.m),
            GroupBuffer::V => Some(&self.v),
            GroupBuffer::VMax => self.v_max.as_ref().map(|b| b as &dyn ReadBuffer),
        }
    }

    /// The parameters, for a launch of your own that updates them (its `#[param]`).
    pub fn params_mut(&mut self) -> &mut ParamBuffer {
        &mut self.params
    }

    /// Every buffer and the records at once, for a launch that steps the whole group (see
    /// [`GroupParts`]).
    pub fn parts_mut(&mut self) -> GroupParts<'_> {
        GroupParts {
            params: &mut self.params,
            grads: &self.grads,
            m: &mut self.m,
            v: &mut self.v,
            v_max: self.v_max.as_mut(),
            records: &self.records,
        }
    }

    /// A buffer other than the parameters, to write (a `#[state]` of a launch of your own), or
    /// `None` for the parameters (only a `#[param]` slot writes them: [`ParamGroup::params_mut`])
    /// and for a `v_max` the group does not keep.
    pub fn state_mut(&mut self, buffer: GroupBuffer) -> Option<&mut DeviceArray> {
        match buffer {
            GroupBuffer::Params => None,
            GroupBuffer::Grads => Some(&mut self.grads),
            GroupBuffer::M => Some(&mut self.m),
            GroupBuffer::V => Some(&mut self.v),
            GroupBuffer::VMax => self.v_max.as_mut(),
        }
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
        let name = &self.name;
        let missing = || Error::MissingBuffer {
            kernel: "upload",
            group: name.clone(),
            buffer: buffer.name(),
        };
        match buffer {
            GroupBuffer::Params => self.params.upload(data),
            GroupBuffer::Grads => self.grads.upload(data),
            GroupBuffer::M => self.m.upload(data),
            GroupBuffer::V => self.v.upload(data),
            GroupBuffer::VMax => self.v_max.as_mut().ok_or_else(missing)?.upload(data),
        }
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
        let missing = || Error::MissingBuffer {
            kernel: "download",
            group: self.name.clone(),
            buffer: buffer.name(),
        };
        match buffer {
            GroupBuffer::Params => self.params.download(),
            GroupBuffer::Grads => self.grads.download(),
            GroupBuffer::M => self.m.download(),
            GroupBuffer::V => self.v.download(),
            GroupBuffer::VMax => self.v_max.as_ref().ok_or_else(missing)?.download(),
        }
    }
}
