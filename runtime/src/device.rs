//! The runtime object: one CUDA context, adamant's PTX module loaded once, every kernel entry
//! resolved up front (a missing entry fails here, by name, not at the first launch).
use cust::context::Context;
use cust::device::{Device, DeviceAttribute};
use cust::function::Function;
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};

use crate::error::{CudaContext, Error, Result};

/// adamant on one GPU. Keep it alive while any of its buffers or launches are in use.
pub struct Adamant {
    // Field order is drop order: the stream and module go before the context.
    stream: Stream,
    module: Module,
    multiprocessors: u32,
    device_name: String,
    _context: Context,
}

impl Adamant {
    /// Initialises the driver on GPU 0, loads the embedded PTX and resolves every kernel that
    /// kernels-rs declares. Fails with [`Error::NoDevice`] on a machine without a GPU.
    pub fn new() -> Result<Self> {
        Self::with_ptx(crate::PTX, &adamant_kernels::abi::kernels())
    }

    /// As [`Adamant::new`], with another PTX text and kernel list (tests use this to prove a
    /// missing entry is reported).
    pub fn with_ptx(
        ptx: &str,
        kernels: &[&'static adamant_kernels::abi::KernelDescriptor],
    ) -> Result<Self> {
        cust::init(cust::CudaFlags::empty()).during("cuInit")?;
        let device = Device::get_device(0).during("selecting GPU 0")?;
        let context = Context::new(device).during("creating a context")?;
        let module = Module::from_ptx(ptx, &[]).map_err(|source| match source {
            cust::error::CudaError::NoDevice => Error::NoDevice { source },
            source => Error::ModuleLoad { source },
        })?;
        for kernel in kernels {
            module
                .get_function(kernel.name)
                .map_err(|source| Error::MissingKernel {
                    name: kernel.name,
                    source,
                })?;
        }
        // A blocking stream: it orders with the legacy default stream, on which cust's
        // synchronous copies (ParamGroup::upload/download) run, so an upload is complete before
        // a later launch reads it and a download waits for the launches before it.
        let stream = Stream::new(StreamFlags::DEFAULT, None).during("creating a stream")?;
        let multiprocessors = device
            .get_attribute(DeviceAttribute::MultiprocessorCount)
            .during("reading the multiprocessor count")? as u32;
        let device_name = device.name().during("reading the device name")?;
        Ok(Adamant {
            stream,
            module,
            multiprocessors,
            device_name,
            _context: context,
        })
    }

    /// The runtime's stream; launches from the typed launchers go here unless given another.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    pub fn multiprocessors(&self) -> u32 {
        self.multiprocessors
    }

    pub fn device_name(&self) -> &str {
        &self.device_name
    }

    /// Waits for all work on the runtime's stream.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().during("synchronizing the stream")
    }

    /// The loaded entry `name` (all were resolved in `new`, so this only fails if the module
    /// was built without it).
    pub(crate) fn function(&self, name: &'static str) -> Result<Function<'_>> {
        self.module
            .get_function(name)
            .map_err(|source| Error::MissingKernel { name, source })
    }
}
