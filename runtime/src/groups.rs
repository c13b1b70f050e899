//! Device buffers for one parameter group: parameters, gradients and Adam state, all the same
//! length (checked at construction, at every upload and again at every launch).
use cust::memory::{CopyDestination, DeviceBuffer, DeviceSlice};

use crate::error::{CudaContext, Error, Result};

/// Which buffer of a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupBuffer {
    Params,
    Grads,
    /// Adam's first moment.
    M,
    /// Adam's second moment.
    V,
    /// AMSGrad's running maximum of `v` (curiosity only).
    VMax,
}

impl GroupBuffer {
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

/// One model's parameters with their gradients and optimizer state on the GPU.
pub struct ParamGroup {
    name: String,
    pub(crate) params: DeviceBuffer<f32>,
    pub(crate) grads: DeviceBuffer<f32>,
    pub(crate) m: DeviceBuffer<f32>,
    pub(crate) v: DeviceBuffer<f32>,
    pub(crate) v_max: Option<DeviceBuffer<f32>>,
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
    /// A group with these initial parameters and zeroed gradients and moments.
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
            params,
            name,
        })
    }

    /// A group that also keeps AMSGrad's `v_max` (zeroed), as `curiosity_adam_step` needs.
    pub fn new_amsgrad(name: impl Into<String>, initial_params: &[f32]) -> Result<Self> {
        let mut group = ParamGroup::new(name, initial_params)?;
        group.v_max = Some(zeroed(
            &group.name,
            GroupBuffer::VMax,
            initial_params.len(),
        )?);
        Ok(group)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of parameters (and of elements in every buffer).
    pub fn len(&self) -> usize {
        self.params.len()
    }

    pub fn is_empty(&self) -> bool {
        self.params.len() == 0
    }

    pub fn has_amsgrad(&self) -> bool {
        self.v_max.is_some()
    }

    /// Device address of the parameter buffer (for the NaN checker's metadata).
    pub fn params_device_ptr(&self) -> u64 {
        self.params.as_device_ptr().as_raw()
    }

    /// Device address of `buffer`, if the group has it.
    pub fn device_ptr(&self, buffer: GroupBuffer) -> Option<u64> {
        self.slice(buffer).map(|s| s.as_device_ptr().as_raw())
    }

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

    /// Copies `data` into `buffer` (synchronously). `data` must have exactly `len()` elements.
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

    /// Copies `buffer` back to the host (synchronously).
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
