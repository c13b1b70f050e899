//! The runtime object: one CUDA context, adamant's PTX module loaded once, every kernel entry
//! resolved up front (a missing entry fails here, by name, not at the first launch).
use rustc_hash::FxHashMap as HashMap;

use cust::context::{Context, CurrentContext};
use cust::device::{Device, DeviceAttribute};
use cust::function::Function;
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};

use crate::error::{CudaContext, Error, Result};
use crate::module::AuditedModule;

/// adamant on one GPU: that GPU's primary CUDA context, the embedded [`MODULE`](crate::MODULE),
/// verified, with every kernel entry resolved, and a stream the launchers enqueue on.
/// [`Adamant::new`] takes GPU 0, [`Adamant::on_device`] the GPU you name. Everything launched
/// through it, and every device buffer allocated while it is alive, belongs to its context: keep
/// it alive while any of them are in use.
///
/// # The CUDA context, shared with cudarc or PyTorch
///
/// adamant uses the device's *primary* context (`cuDevicePrimaryCtxRetain`, through cust's
/// `Context::new`), not a context of its own: the one the CUDA runtime API uses (PyTorch,
/// cuBLAS, anything on `cudart`) and the one cudarc's `CudaContext::new(ordinal)` retains. So
/// another library's device memory and streams on the same GPU are valid in adamant's context
/// as they are, with no copy and no handoff ([`DeviceRegion`](crate::DeviceRegion),
/// [`ForeignStream`](crate::ForeignStream)). What you must do:
///
/// - **Name the same GPU.** `Adamant::on_device(ordinal)` with the ordinal cudarc was given, or
///   PyTorch's `tensor.device.index` (`torch.cuda.current_device()`). Ordinals count the GPUs
///   `CUDA_VISIBLE_DEVICES` leaves visible, in every library of the process alike.
/// - **Make the context current on each thread that calls adamant.** `new`/`on_device` make it
///   current on the calling thread (replacing whatever context was current there). On another
///   thread, call `cust::context::CurrentContext::set_current(rt.context())` first; cudarc's
///   `ctx.bind_to_thread()` and PyTorch's `torch.cuda.set_device(ordinal)` make the same
///   primary context current, so any of them will do.
/// - **Do not reset the device** (`cudaDeviceReset`, `cuDevicePrimaryCtxReset`) while adamant
///   is alive: that destroys the shared context, with adamant's module and memory in it. The
///   context itself is reference-counted: it lives while adamant or another library retains
///   it, so dropping the [`Adamant`] leaves cudarc's or PyTorch's work alone.
/// - **Order the streams.** [`Adamant::stream`] is a blocking stream: it orders with the
///   legacy default stream (PyTorch's default stream, unless per-thread default streams are
///   on), not with other streams. To launch on PyTorch's current stream or a cudarc stream,
///   pass it as a [`ForeignStream`](crate::ForeignStream).
///
/// ```
/// use adamant_kernels::optimizers::iqn_adam_kernel;
/// use adamant_runtime::{
///     adam_scalars, AdamHyper, Adamant, ClampPolicy, Error, GroupBuffer, ParamGroup, ReadBuffer,
/// };
///
/// # fn main() -> adamant_runtime::Result<()> {
/// let rt = match Adamant::new() {
///     Ok(rt) => rt,
///     // No GPU or no driver on this machine (CI has none): nothing to launch on.
///     Err(Error::NoDevice { .. }) => return Ok(()),
///     Err(e) => return Err(e),
/// };
/// println!("{} with {} SMs", rt.device_name(), rt.multiprocessors());
///
/// // A model's parameters (gradients and moments start at zero), then a step's gradients.
/// let mut iqn = ParamGroup::new("iqn_online", &vec![0.01; 4096])?;
/// iqn.upload(GroupBuffer::Grads, &vec![1e-3; 4096])?;
///
/// // One Adam step of `iqn_adam_kernel` at t = 1, clamped to 100 × max(Q_ABS_REF, 1.0) = 100.
/// let hyper = AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.0, 1)?;
/// let scalars = adam_scalars!(iqn_adam_kernel, hyper, weight_decay: hyper.weight_decay)?;
/// let group = iqn.parts_mut();
/// let buffers = iqn_adam_kernel::Buffers {
///     p: group.params,
///     g: group.grads.input(),
///     m: group.m,
///     v: group.v,
/// };
/// let policy = ClampPolicy::from_isv(1.0);
/// let info = rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
///     .plain(&scalars, policy)
///     .buffers(&buffers, group.records)?;
/// assert_eq!((info.kernel, info.elements, info.bound), ("iqn_adam_kernel", 4096, 100.0));
///
/// rt.synchronize()?; // launches are asynchronous
/// let params = iqn.download(GroupBuffer::Params)?;
/// assert!((params[0] - 0.009).abs() < 1e-6); // Adam's first step moves each weight by ~lr
/// # Ok(())
/// # }
/// ```
pub struct Adamant {
    // Field order is drop order: the entries go before the module, the stream and module before
    // the context.
    stream: Stream,
    /// Every entry of every loaded module, by (kernel set, name), resolved once at load: a
    /// launch looks its entry up here instead of asking the driver (`cuModuleGetFunction`, a
    /// string copy and a locked lookup) each time.
    functions: HashMap<(&'static str, &'static str), Function<'static>>,
    /// adamant's module first, then those of [`Adamant::add_module`].
    modules: Vec<Module>,
    multiprocessors: u32,
    device_name: String,
    ordinal: u32,
    /// The captures in progress ([`Adamant::capture_step`]), by the driver's capture id, with
    /// the allocations their launches used so far: the graph each becomes keeps them alive.
    pub(crate) captures: crate::memory::Captures,
    context: Context,
}

impl Adamant {
    /// adamant on GPU 0: [`Adamant::on_device`]`(0)`.
    ///
    /// # Errors
    ///
    /// Those of [`Adamant::on_device`].
    pub fn new() -> Result<Self> {
        Self::on_device(0)
    }

    /// Verifies adamant's embedded module ([`MODULE`](crate::MODULE), once per process; see
    /// [`AuditedModule::verify`]), then initialises the driver, retains the primary context of
    /// GPU `ordinal` and makes it current on the calling thread (see "The CUDA context" above),
    /// loads the module and resolves every kernel that `adamant-kernels` declares, so that a missing
    /// entry is reported here, by name, rather than at its first launch.
    ///
    /// ```
    /// use adamant_runtime::{Adamant, Error};
    ///
    /// # fn main() -> adamant_runtime::Result<()> {
    /// match Adamant::on_device(1) {
    ///     Ok(rt) => assert_eq!(rt.ordinal(), 1),
    ///     // A machine with one GPU: the ordinal and the count, named.
    ///     Err(Error::NoSuchDevice { ordinal: 1, count }) => assert_eq!(count, 1),
    ///     Err(Error::NoDevice { .. }) => {} // no GPU at all (CI)
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// - [`Error::UnauditedModule`] or [`Error::DescriptorMismatch`] if the embedded module is not
    ///   the audited one for the descriptors this program links (checked before any driver
    ///   call, so also on a machine without a GPU);
    /// - [`Error::NoDevice`] on a machine without a GPU or without a driver that starts;
    /// - [`Error::NoSuchDevice`] for an `ordinal` past the GPUs the driver sees, naming both;
    /// - [`Error::ModuleLoad`] if the driver rejects the PTX (a driver too old for it, say);
    /// - [`Error::MissingKernel`] if the module lacks a declared entry;
    /// - [`Error::Cuda`] for any other driver failure, naming the step.
    pub fn on_device(ordinal: u32) -> Result<Self> {
        let kernels = crate::module::own_kernels()?;
        Self::start(ordinal, crate::MODULE.ptx(), &kernels)
    }

    /// As [`Adamant::new`] (GPU 0), with another PTX text and the list of kernels that must be in it,
    /// neither of them verified (tests use this to prove that a missing entry is reported).
    /// Launches still go through the registered descriptors and their checks, whatever this
    /// module holds.
    ///
    /// # Safety
    ///
    /// The caller vouches that `ptx` passed adamant's PTX audit against exactly `kernels`, the
    /// descriptors registered in this program. Otherwise a launch can write unclamped values to
    /// a parameter buffer: the runtime builds every argument from the registered descriptor and
    /// cannot see what the entry of that name does with it.
    ///
    /// # Errors
    ///
    /// As [`Adamant::new`], but for the verification; [`Error::NoKernels`] for an empty
    /// `kernels`, before any driver call.
    pub unsafe fn with_unaudited_ptx(
        ptx: &str,
        kernels: &[&'static adamant_device::abi::KernelDescriptor],
    ) -> Result<Self> {
        Self::start(0, ptx, kernels)
    }

    /// The driver, GPU `ordinal`'s primary context (current on this thread) and `ptx` loaded
    /// with `kernels` resolved in it.
    fn start(
        ordinal: u32,
        ptx: &str,
        kernels: &[&'static adamant_device::abi::KernelDescriptor],
    ) -> Result<Self> {
        refuse_empty(kernels)?;
        cust::init(cust::CudaFlags::empty()).during("cuInit")?;
        let count = Device::num_devices().during("counting the GPUs")?;
        check_ordinal(ordinal, count)?;
        let device =
            Device::get_device(ordinal).during_with(|| format!("selecting GPU {ordinal}"))?;
        // cust's `Context::new` retains the device's primary context and makes it current, but
        // drops the status of the latter: set it again, checked.
        let context = Context::new(device)
            .during_with(|| format!("retaining GPU {ordinal}'s primary context"))?;
        CurrentContext::set_current(&context)
            .during_with(|| format!("making GPU {ordinal}'s primary context current"))?;
        let mut functions = HashMap::with_capacity_and_hasher(kernels.len(), Default::default());
        let module = load_module(ptx, kernels, &mut functions)?;
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
            functions,
            modules: vec![module],
            multiprocessors,
            device_name,
            ordinal,
            captures: Default::default(),
            context,
        })
    }

    /// The runtime's stream: the one to pass to the launchers and the NaN checker when you have
    /// no stream of your own (an application's training step, such as adamant-rl's, runs on it).
    /// It is a blocking stream: it orders with the legacy default stream that cust's synchronous copies
    /// use, so a [`ParamGroup::upload`](crate::ParamGroup::upload) lands before a later launch
    /// reads it. Pass it, or a stream of your own, to [`Adamant::launch`](crate::Adamant::launch) and
    /// [`Launch::set`](crate::Launch::set).
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The GPU's streaming multiprocessor count (132 on an H200), read once at start; the NaN
    /// checker sizes its grid from it.
    pub fn multiprocessors(&self) -> u32 {
        self.multiprocessors
    }

    /// The ordinal of the GPU this runtime is on (0 for [`Adamant::new`]).
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// The GPU's primary context, which the runtime retains: for
    /// `cust::context::CurrentContext::set_current(rt.context())` on another thread before it
    /// calls the runtime (see "The CUDA context" on [`Adamant`]).
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The GPU's name as the driver reports it (for logs and benchmark tables).
    pub fn device_name(&self) -> &str {
        &self.device_name
    }

    /// Blocks until all work enqueued on [`Adamant::stream`] has finished. Launches are
    /// asynchronous: a launch's [`Error::Cuda`] from the device, if any, surfaces here.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] (or [`Error::NoDevice`]) if the driver reports a failure of the stream's
    /// work or of the wait.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().during("synchronizing the stream")
    }

    /// Loads another kernel crate's PTX module beside adamant's, once it is verified
    /// ([`AuditedModule::verify`]: the PTX is the text its build audited, against the
    /// descriptors this program registers for its set), and resolves every entry of that set
    /// in it. Each launch then finds its entry in the module of its descriptor's set, so a
    /// user's kernels and adamant's never shadow one another, even where two sets use the same
    /// entry name.
    ///
    /// # Errors
    ///
    /// [`Error::UnauditedModule`], [`Error::UnknownKernelSet`] (the certificate's set has no
    /// kernel registered in this program: its kernel crate is not linked) or
    /// [`Error::DescriptorMismatch`] from the verification; [`Error::ModuleLoad`] if the driver rejects the PTX; [`Error::MissingKernel`] if it lacks
    /// one of the set's entries; [`Error::KernelSetLoaded`] if an entry of the same set and name
    /// is already loaded. Nothing is added on error.
    pub fn add_module(&mut self, module: &AuditedModule) -> Result<()> {
        let kernels = module.verify()?;
        self.load(module.ptx(), &kernels)
    }

    /// As [`Adamant::add_module`], for a PTX text and kernel set that are not verified.
    ///
    /// # Safety
    ///
    /// The caller vouches that `ptx` passed adamant's PTX audit against exactly `kernels`, the
    /// descriptors registered in this program. Otherwise a launch can write unclamped values to
    /// a parameter buffer.
    ///
    /// # Errors
    ///
    /// As [`Adamant::add_module`], but for the verification; [`Error::NoKernels`] for an empty
    /// `kernels` (take them from `abi::kernel_set("my_kernels")?`, which refuses a misspelt set
    /// with [`Error::UnknownKernelSet`]).
    pub unsafe fn add_unaudited_module(
        &mut self,
        ptx: &str,
        kernels: &[&'static adamant_device::abi::KernelDescriptor],
    ) -> Result<()> {
        self.load(ptx, kernels)
    }

    /// `ptx` loaded beside the modules already loaded, with `kernels` resolved in it.
    fn load(
        &mut self,
        ptx: &str,
        kernels: &[&'static adamant_device::abi::KernelDescriptor],
    ) -> Result<()> {
        refuse_empty(kernels)?;
        if let Some(k) = kernels
            .iter()
            .find(|k| self.functions.contains_key(&(k.set, k.name)))
        {
            return Err(Error::KernelSetLoaded {
                set: k.set,
                name: k.name,
            });
        }
        let mut functions = HashMap::with_capacity_and_hasher(kernels.len(), Default::default());
        let module = load_module(ptx, kernels, &mut functions)?;
        self.functions.extend(functions);
        self.modules.push(module);
        Ok(())
    }

    /// The loaded entry of `kernel` (its set's module). All of a module's kernels were resolved
    /// when it was loaded, so this only fails for a kernel no loaded module was given.
    pub(crate) fn function(
        &self,
        kernel: &'static adamant_device::abi::KernelDescriptor,
    ) -> Result<&Function<'_>> {
        self.functions
            .get(&(kernel.set, kernel.name))
            .ok_or(Error::MissingKernel {
                set: kernel.set,
                name: kernel.name,
                source: cust::error::CudaError::NotFound,
            })
    }
}

/// `ordinal` names one of the `count` GPUs the driver sees.
fn check_ordinal(ordinal: u32, count: u32) -> Result<()> {
    if ordinal >= count {
        return Err(Error::NoSuchDevice { ordinal, count });
    }
    Ok(())
}

/// A module loaded with no kernel to resolve could serve no launch: an empty list is a mistake
/// (a filter that kept nothing), refused before any driver call.
fn refuse_empty(kernels: &[&'static adamant_device::abi::KernelDescriptor]) -> Result<()> {
    if kernels.is_empty() {
        return Err(Error::NoKernels {
            registered: adamant_device::abi::sets(),
        });
    }
    Ok(())
}

/// `ptx` loaded, with every entry of `kernels` resolved into `functions`.
fn load_module(
    ptx: &str,
    kernels: &[&'static adamant_device::abi::KernelDescriptor],
    functions: &mut HashMap<(&'static str, &'static str), Function<'static>>,
) -> Result<Module> {
    let module = Module::from_ptx(ptx, &[]).map_err(|source| match source {
        cust::error::CudaError::NoDevice => Error::NoDevice { source },
        source => Error::ModuleLoad { source },
    })?;
    for kernel in kernels {
        let function = module
            .get_function(kernel.name)
            .map_err(|source| Error::MissingKernel {
                set: kernel.set,
                name: kernel.name,
                source,
            })?;
        // SAFETY: a `Function` is only the driver's handle of an entry of `module`, valid while
        // the module is loaded. The 'static erases the borrow of `module`, which the `Adamant`
        // owns (in `modules`) and drops after `functions` (field order); `Adamant::function`
        // lends them out for the life of `&self` only.
        let function: Function<'static> = unsafe { std::mem::transmute(function) };
        functions.insert((kernel.set, kernel.name), function);
    }
    Ok(module)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ordinal_past_the_device_count_is_named_with_it() {
        assert!(check_ordinal(0, 1).is_ok() && check_ordinal(1, 2).is_ok());
        let err = check_ordinal(2, 2).unwrap_err();
        assert!(
            matches!(
                err,
                Error::NoSuchDevice {
                    ordinal: 2,
                    count: 2
                }
            ),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "GPU 2 does not exist: the driver sees 2 GPU(s), ordinals 0..2 (CUDA_VISIBLE_DEVICES \
             renumbers the visible ones from 0)"
        );
    }
}
