//! The runtime's one error type. Every variant names what was wrong (the kernel, the buffer, the
//! field) and the sizes or values involved; none of them is raised after a launch was enqueued.
use cust::error::CudaError;

/// The runtime's `Result`: [`Error`] unless another error type is named.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What the driver said when a call failed ([`Error::Cuda`]'s source): cust's error for a call
/// cust wraps, the raw status for one the runtime makes itself. cust 0.3 keeps its own
/// status-to-error table private, so a raw status stays a status rather than being guessed into
/// a `CudaError`; [`DriverError::code`] gives the driver's number for either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DriverError {
    /// From a cust call.
    Cust(CudaError),
    /// From a raw driver call (`cust::sys`), never `CUDA_SUCCESS`.
    Status(cust::sys::CUresult),
}

impl DriverError {
    /// The driver's status number (`CUresult`), e.g. 700 for an illegal address.
    pub fn code(&self) -> u32 {
        match *self {
            DriverError::Cust(e) => e as u32,
            DriverError::Status(s) => s as u32,
        }
    }
}

impl std::fmt::Display for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DriverError::Cust(e) => write!(f, "{e} (CUresult {})", self.code()),
            DriverError::Status(s) => write!(f, "{s:?} (CUresult {})", self.code()),
        }
    }
}

impl std::error::Error for DriverError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DriverError::Cust(e) => Some(e),
            DriverError::Status(_) => None,
        }
    }
}

/// Everything the runtime can fail with. Each variant names what was wrong (the kernel, the
/// buffer, the field) and the sizes or values involved, and its message says so in one line.
/// Errors about the caller's inputs (lengths, overlaps, scalars, the clamp policy,
/// hyperparameters, slot bindings) are raised before anything is enqueued: those messages end
/// in "nothing was launched". The variants that carry a `source` keep the driver's error for
/// [`std::error::Error::source`]. New variants may be added ([`non_exhaustive`]).
///
/// Every error of a launch names its kernel: those whose own fields do not (a clamp policy's,
/// a step-state index's, a capture's, the driver's) come inside [`Error::InKernel`].
///
/// Code around the runtime can use `?` on its own cust calls: a [`CudaError`] converts to
/// [`Error::NoDevice`] or [`Error::Cuda`].
///
/// ```
/// use adamant_runtime::cust::memory::DeviceBuffer;
/// use adamant_runtime::{Adamant, Error, Result};
///
/// fn upload(values: &[f32]) -> Result<DeviceBuffer<f32>> {
///     Ok(DeviceBuffer::from_slice(values)?) // cust's error, converted
/// }
///
/// # fn main() -> Result<()> {
/// let _rt = match Adamant::new() {
///     Err(Error::NoDevice { .. }) => return Ok(()), // no GPU here
///     other => other?,
/// };
/// assert_eq!(upload(&[1.0, 2.0])?.len(), 2);
/// # Ok(())
/// # }
/// ```
///
/// [`non_exhaustive`]: https://doc.rust-lang.org/reference/attributes/type_system.html
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The driver loaded but found no GPU, or no driver could be initialised at all: what
    /// [`Adamant::new`](crate::Adamant::new) gives on a machine without a GPU, such as CI.
    #[error(
        "no CUDA GPU is available: adamant's kernels need an NVIDIA GPU (sm_90) and its driver"
    )]
    NoDevice {
        /// The driver's error (`NoDevice`, `InvalidDevice` or `NotInitialized`).
        source: CudaError,
    },

    /// A device allocation failed for lack of memory.
    #[error("out of GPU memory allocating {what} ({bytes} bytes)")]
    OutOfMemory {
        /// What was being allocated, e.g. "group `<name>` buffer `m`".
        what: String,
        /// The size asked for, in bytes.
        bytes: usize,
    },

    /// No loaded PTX module of the entry's kernel set holds it: the module is older than the
    /// kernel crate, or the set's module was never loaded ([`Adamant::add_module`]).
    ///
    /// [`Adamant::add_module`]: crate::Adamant::add_module
    #[error(
        "no loaded PTX module of kernel set `{set}` has the entry `{name}` (is the PTX older \
         than its kernel crate, or was that crate's module not loaded with Adamant::add_module?)"
    )]
    MissingKernel {
        /// The kernel set (defining crate) of the entry, e.g. `adamant_kernels`.
        set: &'static str,
        /// The entry's name, e.g. `iqn_adam_kernel`.
        name: &'static str,
        /// The driver's error from resolving it.
        source: CudaError,
    },

    /// An upload whose host data is not the buffer's length
    /// ([`ParamBuffer::upload`](crate::ParamBuffer::upload),
    /// [`DeviceArray::upload`](crate::DeviceArray::upload)).
    #[error(
        "upload to {buffer}: {found} host elements for a buffer of {expected} (nothing was \
         written)"
    )]
    UploadLength {
        /// Which kind of buffer.
        buffer: &'static str,
        /// The host slice's length.
        found: usize,
        /// The buffer's length.
        expected: usize,
    },

    /// A host copy of a buffer in a type it does not hold: `upload`/`download` of `f32`s to or
    /// from a 16-bit buffer, `upload_bits`/`download_bits` of an `f32` one, a 16-bit buffer where
    /// only `f32` is read (a NaN-check slot, a `Q_ABS_REF` slot), or a 16-bit constructor given
    /// `Storage::F32`.
    #[error(
        "{operation} on {buffer} of {} elements: {needs} (nothing was written)",
        storage.name()
    )]
    BufferStorage {
        /// What was asked: `upload`, `download_bits`, `a NaN-check binding`, ...
        operation: &'static str,
        /// Which kind of buffer.
        buffer: &'static str,
        /// How the buffer's elements are stored.
        storage: adamant_device::abi::Storage,
        /// What the operation needs.
        needs: &'static str,
    },

    /// A `#[uniform_ptr]` argument that is not a live [`DeviceScalar`](crate::DeviceScalar)'s
    /// pointer: the scalar was dropped (a copy of its pointer outlived it), or the pointer was
    /// made by hand.
    #[error(
        "{kernel}: `{name}` points at {ptr:#x}, which is no live DeviceScalar (dropped, or not \
         made by DeviceScalar::uniform_ptr): nothing was launched"
    )]
    StaleUniform {
        /// The entry.
        kernel: &'static str,
        /// The `#[uniform_ptr]` argument.
        name: &'static str,
        /// The address it held.
        ptr: u64,
    },

    /// A raw device range that cannot be one ([`DeviceRegion::new`]).
    ///
    /// [`DeviceRegion::new`]: crate::DeviceRegion::new
    #[error("device region of {len} f32s at {ptr:#x}: {reason}")]
    ForeignRegion {
        /// The address given.
        ptr: u64,
        /// The length given, in elements.
        len: usize,
        /// What is wrong with it.
        reason: String,
    },

    /// A raw launch's buffer is not inside one device allocation the driver knows
    /// ([`Launch::raw_buffers`](crate::Launch::raw_buffers)); nothing was launched.
    ///
    /// [`Launch::raw_buffers`]: crate::Launch::raw_buffers
    #[error(
        "{kernel}: buffer `{buffer}` ({len} f32s at {ptr:#x}) is not device memory of this \
         context: {reason} (nothing was launched)"
    )]
    ForeignBuffer {
        /// The entry launched.
        kernel: &'static str,
        /// The buffer, by its name in the kernel's signature.
        buffer: &'static str,
        /// Its address.
        ptr: u64,
        /// Its length in elements.
        len: usize,
        /// What the driver said.
        reason: String,
    },

    /// [`Adamant::add_module`] was given a kernel whose set and name are already loaded.
    ///
    /// [`Adamant::add_module`]: crate::Adamant::add_module
    #[error("kernel `{name}` of set `{set}` is already loaded (nothing was added)")]
    KernelSetLoaded {
        /// The kernel set.
        set: &'static str,
        /// The entry's name.
        name: &'static str,
    },

    /// A kernel set of which no kernel is registered in this program: a module's certificate
    /// names it ([`AuditedModule::verify`]), or a name given to
    /// [`abi::kernel_set`](adamant_device::abi::kernel_set) is misspelt (converted from its
    /// [`UnknownSet`](adamant_device::abi::UnknownSet) by `?`). The set's kernel crate must be
    /// linked into the binary, under its library name (`my_kernels` for the package
    /// `my-kernels`).
    ///
    /// [`AuditedModule::verify`]: crate::AuditedModule::verify
    #[error("{} (nothing was loaded)", unknown_set(set, registered))]
    UnknownKernelSet {
        /// The set asked for, or named by the certificate.
        set: String,
        /// The sets registered in this program
        /// ([`abi::sets`](adamant_device::abi::sets)).
        registered: Vec<&'static str>,
    },

    /// A module given no kernels to resolve ([`Adamant::add_unaudited_module`],
    /// [`Adamant::with_unaudited_ptx`] with an empty list): no launch could find an entry in it.
    ///
    /// [`Adamant::add_unaudited_module`]: crate::Adamant::add_unaudited_module
    /// [`Adamant::with_unaudited_ptx`]: crate::Adamant::with_unaudited_ptx
    #[error(
        "a module was given an empty kernel list (registered sets: {}); pass its set's \
         kernels, `abi::kernel_set(\"my_kernels\")?` (nothing was loaded)",
        adamant_device::abi::describe_sets(registered)
    )]
    NoKernels {
        /// The sets registered in this program.
        registered: Vec<&'static str>,
    },

    /// [`Adamant::on_device`] with an ordinal past the GPUs the driver sees (`CUDA_VISIBLE_DEVICES`
    /// renumbers them from 0).
    ///
    /// [`Adamant::on_device`]: crate::Adamant::on_device
    #[error(
        "GPU {ordinal} does not exist: the driver sees {count} GPU(s), ordinals 0..{count} \
         (CUDA_VISIBLE_DEVICES renumbers the visible ones from 0)"
    )]
    NoSuchDevice {
        /// The ordinal asked for.
        ordinal: u32,
        /// How many GPUs the driver sees.
        count: u32,
    },

    /// The driver refused the PTX module.
    #[error("the driver rejected adamant's PTX module")]
    ModuleLoad {
        /// The driver's error from loading it.
        source: CudaError,
    },

    /// A module that is not, or cannot be shown to be, the one its build's audit passed
    /// ([`AuditedModule::verify`]): its certificate is malformed or of an unknown format, the
    /// PTX's digest is not the certified one, or no kernel of its set is registered here.
    ///
    /// [`AuditedModule::verify`]: crate::AuditedModule::verify
    #[error(
        "the module of kernel set `{set}` is not loaded as audited: {reason} (nothing was \
         loaded)"
    )]
    UnauditedModule {
        /// The kernel set the certificate names (`(unreadable)` when it cannot be read).
        set: String,
        /// What is wrong: both digests for a PTX that is not the certified text.
        reason: String,
    },

    /// The host's registered descriptors of a module's kernel set are not the ones the module
    /// was audited against ([`AuditedModule::verify`]): launches would build their arguments
    /// from the host's, so the module is refused. The build script and the host can link two
    /// versions of one kernel crate (a build-dependency's features are resolved apart).
    ///
    /// [`AuditedModule::verify`]: crate::AuditedModule::verify
    #[error(
        "kernel set `{set}`, entry `{entry}`: the host's descriptors are not the ones the module \
         was audited against: {detail} (nothing was loaded)"
    )]
    DescriptorMismatch {
        /// The kernel set.
        set: String,
        /// The entry that differs.
        entry: String,
        /// How: the parameter that differs, or the entry missing from one side or registered
        /// twice.
        detail: String,
    },

    /// Two per-element buffers of one launch differ in length.
    #[error(
        "{kernel}: buffer `{buffer}` has {found} elements but `{reference}` has {expected}; \
         every per-element buffer of one launch must have the same length (nothing was launched)"
    )]
    LengthMismatch {
        /// The kernel entry launched.
        kernel: &'static str,
        /// The buffer whose length is wrong, by its parameter name (`g`, `v_max`, ...).
        buffer: &'static str,
        /// Its length, in elements.
        found: usize,
        /// The buffer the lengths are measured against: the parameter buffer (`p`, `target`).
        reference: &'static str,
        /// The parameter buffer's length, in elements.
        expected: usize,
    },

    /// A launch's diagnostics records are shaped for another launch: their tensor or buffer
    /// count differs from the entry's.
    #[error(
        "{kernel}: the diagnostics records hold {found}, but the launch needs {expected} \
         (nothing was launched)"
    )]
    RecordsMismatch {
        /// The kernel entry launched.
        kernel: &'static str,
        /// The launch's shape: tensors and buffers per tensor.
        expected: String,
        /// The records' shape.
        found: String,
    },

    /// A group's diagnostics records are not those of the session's last step: something other
    /// than the session launched the group, or a launch did not run.
    #[error(
        "group `{group}`: its diagnostics records are from launch {sequence}, but the session \
         has run {steps} steps"
    )]
    RecordsStale {
        /// The group.
        group: String,
        /// The records' launch count.
        sequence: u32,
        /// The session's step count.
        steps: u64,
    },

    /// Two groups of one step have the same name: their slots (and their records) could not be
    /// told apart.
    #[error("two groups are called `{group}`; every group of a step needs its own name")]
    DuplicateGroup {
        /// The name.
        group: String,
    },

    /// A slot derived from a group would take a name the report already has.
    #[error(
        "the nan check would derive slot `{name}` for a group, but a slot of that name exists; \
         rename the group"
    )]
    DuplicateSlotName {
        /// The name.
        name: String,
    },

    /// A buffer whose storage type is not the one its kernel declares for it (an f32 buffer for
    /// a `#[param(bf16)]`, say).
    #[error(
        "{kernel}: buffer `{buffer}` holds {} elements but the kernel declares it {} (nothing was \
         launched)",
        given.name(),
        declared.name()
    )]
    StorageMismatch {
        /// The kernel entry launched.
        kernel: &'static str,
        /// The buffer's name in the kernel's signature.
        buffer: &'static str,
        /// The storage type the kernel declares.
        declared: adamant_device::abi::Storage,
        /// The storage type of the buffer given.
        given: adamant_device::abi::Storage,
    },

    /// Two buffers of one launch share memory, and at least one of them is written.
    #[error(
        "{kernel}: buffer {second} overlaps buffer {first}; a written buffer must not share \
         memory with any other buffer of the launch (nothing was launched)"
    )]
    Overlap {
        /// The kernel entry launched.
        kernel: &'static str,
        /// One of the two buffers: its name, device address, length and whether it is written
        /// (and its tensor, in a multi-tensor launch).
        first: String,
        /// The other buffer, described likewise.
        second: String,
    },

    /// A uniform argument outside the domain its kernel declares (`#[domain(..)]`, or finite
    /// for an `f32` without one).
    #[error(
        "{kernel}: scalar `{name}` = {value} must be {requirement} (nothing was launched or \
         written)"
    )]
    InvalidScalar {
        /// The kernel entry launched.
        kernel: &'static str,
        /// The scalar's parameter name (`lr`, `tau`, ...).
        name: &'static str,
        /// The value given.
        value: f64,
        /// The declared domain in words, e.g. "finite, >= 0, <= 1".
        requirement: String,
    },

    /// An entry's uniform values do not match its registered descriptor in number (a
    /// hand-written `OptimizerEntry` impl; the generated ones cannot).
    #[error(
        "{kernel}: {found} uniform values for {expected} declared uniforms (nothing was launched)"
    )]
    ScalarCount {
        /// The kernel entry launched.
        kernel: &'static str,
        /// The number of uniforms the descriptor declares.
        expected: usize,
        /// The number of values given.
        found: usize,
    },

    /// A uniform value of another type than its declared one (a hand-written impl again).
    #[error("{kernel}: uniform `{name}` must be a {expected:?} value (nothing was launched)")]
    ScalarType {
        /// The kernel entry launched.
        kernel: &'static str,
        /// The uniform's parameter name.
        name: &'static str,
        /// Its declared type.
        expected: adamant_device::abi::ParamType,
    },

    /// A launch under a descriptor that is not the registered one of that name.
    #[error(
        "{kernel}: not a registered kernel entry, or its descriptor differs from the registered \
         one (only entries generated by #[optimizer_kernel] are launched; nothing was launched)"
    )]
    UnregisteredKernel {
        /// The name the descriptor claims.
        kernel: &'static str,
    },

    /// A group lacks a buffer the kernel needs (for example AMSGrad's `v_max`).
    #[error("{kernel}: parameter group `{group}` has no `{buffer}` buffer (nothing was launched)")]
    MissingBuffer {
        /// The kernel, or the operation (`upload`, `download`, `nan_check_kernel`), that needed it.
        kernel: &'static str,
        /// The group's name.
        group: String,
        /// The buffer's name ([`GroupBuffer::name`](crate::GroupBuffer::name)).
        buffer: &'static str,
    },

    /// A host slice passed to upload or download has the wrong length.
    #[error("group `{group}`, buffer `{buffer}`: host data has {found} elements, the device buffer {expected}")]
    HostLength {
        /// The group's name.
        group: String,
        /// The buffer's name.
        buffer: &'static str,
        /// The host slice's length, in elements.
        found: usize,
        /// The device buffer's length, in elements.
        expected: usize,
    },

    /// A hyperparameter outside its valid range ([`AdamHyper::validate`](crate::AdamHyper::validate)).
    #[error("invalid hyperparameter `{field}` = {value}: must be {requirement}")]
    InvalidHyper {
        /// The field, e.g. `beta1` or `step`.
        field: &'static str,
        /// The value given.
        value: f64,
        /// The valid range, e.g. "finite, >= 0, < 1" (from the kernel's `#[domain]`).
        requirement: String,
    },

    /// The ISV's `Q_ABS_REF`, the bound derived from it, or a fixed bound is not usable
    /// ([`ClampPolicy::bound`](crate::ClampPolicy::bound)).
    #[error(
        "invalid clamp input `{what}` = {value}: must be {requirement} (nothing was launched)"
    )]
    InvalidClamp {
        /// Which input: `Q_ABS_REF`, the derived bound, or `weight_clamp_max_abs`.
        what: &'static str,
        /// Its value.
        value: f32,
        /// What it must be.
        requirement: &'static str,
    },

    /// A per-tensor clamp scale ([`TensorSet::set_clamp_scales`](crate::TensorSet::set_clamp_scales))
    /// that would not give its tensor a clamping bound.
    #[error(
        "{kernel}: the clamp scale of tensor {tensor} is {value:e}: {requirement} (nothing was \
         launched or uploaded)"
    )]
    InvalidClampScale {
        /// The multi-tensor entry the set was built for.
        kernel: &'static str,
        /// The tensor's index in the set.
        tensor: usize,
        /// Its scale.
        value: f32,
        /// What it must be, or what it would do.
        requirement: String,
    },

    /// Per-tensor clamp scales whose count is not the set's tensor count: given for another
    /// set, or kept from the tensors a set described before it was rebuilt.
    #[error(
        "{kernel}: {scales} per-tensor clamp scales for a set of {tensors} tensors{hint} (nothing \
         was launched or uploaded)"
    )]
    ClampScales {
        /// The multi-tensor entry the set was built for (or is being built for).
        kernel: &'static str,
        /// Scales given (or kept).
        scales: usize,
        /// Tensors in the set.
        tensors: usize,
        /// What to do about it.
        hint: &'static str,
    },

    /// A disabled clamp needs a stated reason ([`ClampPolicy::disabled`](crate::ClampPolicy::disabled)).
    #[error("a disabled weight clamp needs a non-empty reason")]
    DisabledWithoutReason,

    /// A size the device tables cannot represent: a tensor of a multi-tensor set with more than
    /// `u32::MAX` elements, or a set of more than `u32::MAX` chunks.
    #[error("{kernel}: {what} is {value}, more than the {limit} a launch supports")]
    TooLarge {
        /// The kernel entry launched.
        kernel: &'static str,
        /// What is too large, e.g. "tensor 3" or "chunk count".
        what: String,
        /// Its size.
        value: usize,
        /// The largest size supported.
        limit: usize,
    },

    /// An error of a launch whose own message does not name the entry launched (a clamp
    /// policy's [`Error::InvalidClamp`], a step-state [`Error::StepIndex`], a capture's or the
    /// driver's), wrapped with the entry's name. Errors that name it themselves
    /// ([`Error::LengthMismatch`], [`Error::InvalidScalar`], ...) are not wrapped. Match
    /// `Error::InKernel { source, .. }` and then `*source` for the cause.
    #[error("{kernel}: {source}")]
    InKernel {
        /// The entry launched, e.g. `iqn_adam_kernel_multi_stepped`.
        kernel: &'static str,
        /// What went wrong.
        source: Box<Error>,
    },

    /// An error about one tensor of a multi-tensor launch.
    #[error("tensor {tensor} of the set: {source}")]
    InTensor {
        /// The tensor's index in the slice passed to the launch.
        tensor: usize,
        /// What was wrong with it.
        source: Box<Error>,
    },

    /// A plain launch prepared for repeated enqueues ([`crate::Launch::prepare`]) of a kernel
    /// with a scalar that changes every step: every enqueue would pass the value of the step it
    /// was prepared at.
    #[error(
        "{kernel}: a prepared launch passes the same arguments at every enqueue, and the \
         kernel's scalar `{scalar}` ({how}) changes every step; prepare its stepped launch \
         (`Launch::stepped`), which reads it from the step-state record"
    )]
    FrozenScalar {
        /// The entry that was to be prepared.
        kernel: &'static str,
        /// Its first scalar that changes every step.
        scalar: &'static str,
        /// What makes it change: a `#[step]` field or `#[derived]` from the step number.
        how: &'static str,
    },

    /// Something that cannot happen while a stream is captured into a graph (such as
    /// rebuilding a [`TensorSet`](crate::TensorSet)'s tables), or a graph call that failed.
    #[error("graph capture: {operation}")]
    Capture {
        /// What was attempted, and the driver's status where there is one.
        operation: String,
    },

    /// A step-state record index past the end of its [`StepStates`](crate::StepStates).
    #[error("step state: record {index} does not exist ({len} records; nothing was launched)")]
    StepIndex {
        /// The index given.
        index: usize,
        /// How many records there are.
        len: usize,
    },

    /// A stepped launch on records that no [`StepStates::advance`](crate::StepStates::advance)
    /// was enqueued (or recorded) for: their step is 0 and their bias corrections 0, which would
    /// divide by zero.
    #[error(
        "{kernel}: its step-state records were never advanced (step 0 would give a bias \
         correction of 0); enqueue StepStates::advance before the first stepped launch \
         (nothing was launched)"
    )]
    NotAdvanced {
        /// The entry launched.
        kernel: &'static str,
    },

    /// A stepped launch with a record made for another kernel's scalars (or for none): the
    /// record's own words hold what the kernel it was made for declared, at its slots.
    #[error(
        "{kernel}: step-state record {index} was made for {made_for}, whose record scalars are not \
         this kernel's; make the record for this kernel (StepSpec::with_kernel) (nothing was \
         launched)"
    )]
    RecordKernel {
        /// The entry launched.
        kernel: &'static str,
        /// The record's index.
        index: usize,
        /// The kernel the record was made for, in words (`no kernel` for a record of `#[step]`
        /// fields only).
        made_for: String,
    },

    /// A fused set's chunk size that is not a positive multiple of 4 up to the limit.
    #[error(
        "a fused set's chunks of {value} elements: a chunk must be a positive multiple of 4 \
         elements, at most {limit} (nothing was made)"
    )]
    InvalidChunkElements {
        /// The size given.
        value: usize,
        /// The largest allowed.
        limit: usize,
    },

    /// A fused set's chunk budget in bytes below 4 or above the limit.
    #[error(
        "a fused set's chunks of {value} bytes: a chunk budget must be at least 4 bytes and at \
         most {limit} (nothing was made)"
    )]
    InvalidChunkBytes {
        /// The budget given.
        value: usize,
        /// The largest allowed.
        limit: usize,
    },

    /// A tensor for a fused launch whose kernel has more buffers of a role than a fused entry
    /// has tables for it: no fused set can name the kernel as a rule.
    #[error(
        "{kernel}: it has {count} {role}s, a fused entry takes at most {limit}, so it cannot be \
         a rule of a fused set (nothing was launched)"
    )]
    NotFusable {
        /// The kernel.
        kernel: &'static str,
        /// The role (`#[input]`, `#[state]` or `#[uniform_ptr]`).
        role: &'static str,
        /// How many the kernel has.
        count: usize,
        /// How many a fused entry takes.
        limit: usize,
    },

    /// A tensor of a fused launch whose kernel is not one of the fused entry's rules.
    #[error(
        "{kernel}: tensor {tensor} is to be updated by `{rule}`, which is not one of this fused \
         entry's rules ({rules}) (nothing was launched)"
    )]
    NotARule {
        /// The fused entry.
        kernel: &'static str,
        /// The tensor's index in the launch.
        tensor: usize,
        /// The kernel the tensor was made for.
        rule: &'static str,
        /// The entry's rules, in words.
        rules: String,
    },

    /// A step guard's setting out of its range ([`GuardSpec`](crate::GuardSpec)).
    #[error("step guard: `{field}` = {value} must be {requirement} (nothing was made or written)")]
    InvalidGuard {
        /// The setting.
        field: &'static str,
        /// The value given.
        value: f64,
        /// Its range, in words.
        requirement: String,
    },

    /// An advance of guarded records, one of which had no guard run enqueued since its last
    /// advance ([`GradientGuard::enqueue`](crate::GradientGuard::enqueue)): its step would go
    /// unchecked.
    #[error(
        "step-state record {index} is guarded, and no GradientGuard::enqueue ran for it since \
         its last advance; enqueue the guard over its tensors' gradients first (nothing was \
         launched)"
    )]
    Unguarded {
        /// The record.
        index: usize,
    },

    /// A gradient guard's records that cannot be judged: none, or one named twice.
    #[error("{kernel}: {problem} (nothing was allocated)")]
    GuardGroups {
        /// The guard's entry.
        kernel: &'static str,
        /// What is wrong.
        problem: String,
    },

    /// A gradient guard enqueued for a record made without one ([`StepSpec::guarded`](crate::StepSpec::guarded)).
    #[error(
        "step-state record {index} is not guarded (StepSpec::guarded): a guard run would \
         protect nothing (nothing was launched)"
    )]
    NotGuarded {
        /// The record.
        index: usize,
    },

    /// A host write of a scalar the record's kernel does not have.
    #[error(
        "step-state record {index} ({kernel}) has no scalar `{name}`; it has {known} (nothing \
         was written)"
    )]
    UnknownScalar {
        /// The record's index.
        index: usize,
        /// The kernel the record was made for, in words.
        kernel: String,
        /// The name given.
        name: String,
        /// The names it has.
        known: String,
    },

    /// A host write of a scalar the device computes: a `#[derived]` one (the kernel's schedule)
    /// or a bias correction (every advance).
    #[error(
        "step-state record {index} ({kernel}): `{name}` is computed on the device by {by} at \
         every step, so the host cannot set it (nothing was written)"
    )]
    ComputedScalar {
        /// The record's index.
        index: usize,
        /// The kernel the record was made for, in words.
        kernel: String,
        /// The scalar.
        name: String,
        /// What computes it.
        by: String,
    },

    /// A host write of the wrong type: an `f32` to a `u32` scalar or the reverse.
    #[error(
        "step-state record {index} ({kernel}): `{name}` is a {expected}, not a {given} (nothing \
         was written)"
    )]
    ScalarKind {
        /// The record's index.
        index: usize,
        /// The kernel the record was made for, in words.
        kernel: String,
        /// The scalar.
        name: String,
        /// Its declared type.
        expected: &'static str,
        /// The type given.
        given: &'static str,
    },

    /// A host write that only an owned `Q_ABS_REF` accepts, on records that read a slot of the
    /// caller's buffer ([`QAbsRef::Slot`](crate::QAbsRef::Slot)).
    #[error(
        "step state: Q_ABS_REF is read from a slot of the caller's buffer; write that slot \
         instead (nothing was written)"
    )]
    QAbsRefNotOwned,

    /// A training session has no group of this name.
    #[error("training session: no parameter group named `{group}` (nothing was written)")]
    UnknownGroup {
        /// The name given.
        group: String,
    },

    /// The driver refused a call, with the operation that made it: a call cust wraps (its
    /// [`CudaError`]) or one the runtime makes itself (`driver.rs`, the raw status). The one
    /// variant for every driver failure other than [`Error::NoDevice`], [`Error::OutOfMemory`],
    /// [`Error::ModuleLoad`] and a capture's ([`Error::Capture`]).
    #[error("CUDA error during {operation}: {source}")]
    Cuda {
        /// What the runtime was doing, e.g. "launching iqn_adam_kernel (4096 elements)".
        operation: String,
        /// What the driver said.
        source: DriverError,
    },

    /// A NaN-check range that is empty or reaches past the slot table.
    #[error(
        "nan check: slot range {first}..={last} is not a non-empty range inside slot table \
         `{table}` (slots 0..={}; nothing was launched)",
        slots - 1
    )]
    InvalidSlotRange {
        /// The table's name ([`SlotTable::name`](crate::nan_check::SlotTable::name)).
        table: &'static str,
        /// The range's first slot.
        first: usize,
        /// The range's last slot (inclusive).
        last: usize,
        /// The number of slots in the table.
        slots: usize,
    },

    /// A slot of the checked range has no buffer bound to it.
    #[error(
        "nan check: slot {index} `{name}` of table `{table}` is in the checked range but no \
         buffer is bound to it (bind it with SlotBindings::bind or bind_group; nothing was \
         launched)"
    )]
    UnboundSlot {
        /// The slot's table.
        table: &'static str,
        /// The slot's index.
        index: usize,
        /// The slot's name.
        name: &'static str,
    },

    /// A [`SlotId`](crate::nan_check::SlotId) of one table given to the bindings of another:
    /// its index would name someone else's slot.
    #[error(
        "nan check: slot {index} `{name}` is a slot of table `{table}`, not of table \
         `{bindings}` these bindings are for (nothing was bound or launched)"
    )]
    ForeignSlot {
        /// The slot's index in its own table.
        index: usize,
        /// The slot's name in its own table.
        name: &'static str,
        /// The slot's table.
        table: &'static str,
        /// The table of the bindings it was given to.
        bindings: &'static str,
    },

    /// Slot bindings of one table where another table's are needed (an application's training
    /// step that checks its own table, say).
    #[error(
        "nan check: {what} needs bindings of slot table `{expected}`, but these are for table \
         `{table}` (nothing was launched)"
    )]
    WrongSlotTable {
        /// Who needs the bindings.
        what: &'static str,
        /// The table it checks.
        expected: &'static str,
        /// The table of the bindings given.
        table: &'static str,
    },

    /// A slot bound to a null device address with a non-zero length.
    #[error(
        "nan check: slot {index} `{name}` is bound to a null device address with {len} elements"
    )]
    NullSlotBuffer {
        /// The slot's index.
        index: usize,
        /// The slot's name.
        name: &'static str,
        /// The length given, in elements.
        len: usize,
    },

    /// [`SlotBindings::bind_group`](crate::SlotBindings::bind_group) with a group the slot
    /// table has no slot for.
    #[error(
        "nan check: the slot table declares no slot for parameter group `{group}` (is the group \
         name spelt as in the table?)"
    )]
    UnknownSlotGroup {
        /// The group's name.
        group: String,
    },

    /// The checked range has more chunks than one launch takes.
    #[error("nan check: {work_items} work items exceed the limit of {limit} per launch")]
    NanCheckTooLarge {
        /// The chunks the range would need.
        work_items: usize,
        /// The most one launch takes.
        limit: usize,
    },

    /// The `Q_ABS_REF` a check was given is unusable.
    #[error("nan check: Q_ABS_REF = {value} must be finite and >= 0 (nothing was launched)")]
    InvalidQAbsRef {
        /// The value given.
        value: f32,
    },

    /// `factor × q_abs_ref_eff` overflows f32 for a max-abs slot.
    #[error(
        "nan check: slot {index} `{name}`: threshold {factor} × q_abs_ref_eff {q_abs_ref_eff} is \
         not finite in f32 (nothing was launched)"
    )]
    SlotThresholdOverflow {
        /// The slot's index.
        index: usize,
        /// The slot's name.
        name: &'static str,
        /// The slot's max-abs factor.
        factor: f32,
        /// `max(Q_ABS_REF, 1.0)` for this check.
        q_abs_ref_eff: f32,
    },

    /// [`NanChecker::report`](crate::NanChecker::report) before any
    /// [`enqueue`](crate::NanChecker::enqueue).
    #[error("nan check: report() was called before any check was enqueued")]
    NanCheckNotEnqueued,

    /// A checkpoint's step record that cannot replace the state's record `index`: of another
    /// run (another bound mode, guard or fixed bound, another number of records, an owned
    /// `Q_ABS_REF` where the state reads the caller's), or holding a value no host write or
    /// advance could have given it. Nothing was restored.
    #[error(
        "checkpoint step record {index}: {field} is {found}, the state needs {requirement} \
         (nothing was restored)"
    )]
    RecordRestore {
        /// The record's index (for a count mismatch: the file's count).
        index: usize,
        /// The field or property: `records`, `bound_mode`, `guard_mode`, `bound`, `lr`, ...
        field: &'static str,
        /// What the file holds.
        found: String,
        /// What the state needs.
        requirement: String,
    },

    /// A checkpoint that cannot be written, read or restored: the file layer's error (a bad
    /// file, a tensor or record of another shape, type, kernel or rule than the state's). A
    /// restore that fails with it has changed nothing on the device.
    #[error(transparent)]
    Checkpoint(#[from] crate::checkpoint::CheckpointError),

    /// A NaN check found tripped slots ([`NanReport::ensure_quiet`](crate::NanReport::ensure_quiet)).
    #[error("{report}")]
    NanCheckTripped {
        /// The report's log line, naming every tripped slot.
        report: String,
    },
}

impl Error {
    /// Wraps a driver error from `operation`, mapping the ones with a meaning of their own
    /// (no device, not initialised) to [`Error::NoDevice`].
    pub(crate) fn cuda(operation: impl Into<String>, source: CudaError) -> Error {
        match source {
            CudaError::NoDevice | CudaError::InvalidDevice | CudaError::NotInitialized => {
                Error::NoDevice { source }
            }
            _ => Error::Cuda {
                operation: operation.into(),
                source: DriverError::Cust(source),
            },
        }
    }

    /// This error, raised by a launch of `kernel`: unchanged if its message names the entry
    /// already, else inside an [`Error::InKernel`] naming it, so that every launch error says
    /// which kernel it is about.
    pub(crate) fn in_kernel(self, kernel: &'static str) -> Error {
        if self.names_kernel(kernel) {
            self
        } else {
            Error::InKernel {
                kernel,
                source: Box::new(self),
            }
        }
    }

    /// Whether this error's message names a kernel (`kernel`, for those that carry a text).
    fn names_kernel(&self, kernel: &str) -> bool {
        match self {
            Error::MissingKernel { .. }
            | Error::StaleUniform { .. }
            | Error::ForeignBuffer { .. }
            | Error::LengthMismatch { .. }
            | Error::RecordsMismatch { .. }
            | Error::Overlap { .. }
            | Error::StorageMismatch { .. }
            | Error::InvalidScalar { .. }
            | Error::ScalarCount { .. }
            | Error::ScalarType { .. }
            | Error::UnregisteredKernel { .. }
            | Error::MissingBuffer { .. }
            | Error::InvalidClampScale { .. }
            | Error::ClampScales { .. }
            | Error::TooLarge { .. }
            | Error::NotAdvanced { .. }
            | Error::RecordKernel { .. }
            | Error::NotARule { .. }
            | Error::NotFusable { .. }
            | Error::FrozenScalar { .. }
            | Error::InKernel { .. } => true,
            Error::InTensor { source, .. } => source.names_kernel(kernel),
            Error::Cuda { operation, .. } | Error::Capture { operation } => {
                operation.contains(kernel)
            }
            _ => false,
        }
    }

    /// This error, about tensor `tensor` of a launch over `tensors` tensors: inside an
    /// [`Error::InTensor`] naming it in a set of more than one, unchanged for a single tensor.
    pub(crate) fn in_tensor(self, tensor: usize, tensors: usize) -> Error {
        if tensors == 1 {
            self
        } else {
            Error::InTensor {
                tensor,
                source: Box::new(self),
            }
        }
    }
}

/// A driver error from the caller's own cust calls, so that code around the runtime can use `?`
/// on both (`DeviceBuffer::from_slice(..)?` in a function returning this crate's [`Result`]).
/// No device, an invalid device or an uninitialised driver become [`Error::NoDevice`], as in
/// the runtime's own calls; anything else [`Error::Cuda`], whose `source` is the driver's error.
impl From<CudaError> for Error {
    fn from(source: CudaError) -> Error {
        Error::cuda("a cust call of the caller's (converted by `?`)", source)
    }
}

/// The registered sets' error, with the same fields (`abi::kernel_set("my_kernels")?`).
impl From<adamant_device::abi::UnknownSet> for Error {
    fn from(e: adamant_device::abi::UnknownSet) -> Error {
        Error::UnknownKernelSet {
            set: e.set,
            registered: e.registered,
        }
    }
}

fn unknown_set(set: &str, registered: &[&'static str]) -> adamant_device::abi::UnknownSet {
    adamant_device::abi::UnknownSet {
        set: set.to_string(),
        registered: registered.to_vec(),
    }
}

/// `result.map_err(|e| Error::cuda(op, e))`, shorter.
pub(crate) trait CudaContext<T> {
    fn during(self, operation: &str) -> Result<T>;
    /// As `during`, with the description built only on failure (for the per-launch path, where
    /// formatting it every time costs more than the checks).
    fn during_with(self, operation: impl FnOnce() -> String) -> Result<T>;
}

impl<T> CudaContext<T> for std::result::Result<T, CudaError> {
    fn during(self, operation: &str) -> Result<T> {
        self.map_err(|e| Error::cuda(operation, e))
    }

    fn during_with(self, operation: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::cuda(operation(), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_error_names_its_kernel_once() {
        let kernel = "attn_adam_kernel";
        // Errors that do not name the entry are wrapped with it...
        let clamp = Error::InvalidClamp {
            what: "Q_ABS_REF",
            value: f32::NAN,
            requirement: "finite and >= 0",
        };
        let wrapped = clamp.in_kernel(kernel);
        assert!(
            matches!(&wrapped, Error::InKernel { kernel: "attn_adam_kernel", source }
                if matches!(**source, Error::InvalidClamp { what: "Q_ABS_REF", .. })),
            "{wrapped:?}"
        );
        assert_eq!(
            wrapped.to_string(),
            "attn_adam_kernel: invalid clamp input `Q_ABS_REF` = NaN: must be finite and >= 0 \
             (nothing was launched)"
        );
        for unnamed in [
            Error::DisabledWithoutReason,
            Error::StepIndex { index: 3, len: 1 },
            Error::Capture {
                operation: "a launch on a stream that is being captured by other code".into(),
            },
            Error::cuda("querying the capture status", CudaError::InvalidValue),
            Error::cuda("anything", CudaError::NoDevice),
        ] {
            let e = unnamed.in_kernel(kernel);
            assert!(e.to_string().starts_with("attn_adam_kernel: "), "{e}");
        }
        // ...those that name it already are not, nor is an error wrapped twice.
        let length = Error::LengthMismatch {
            kernel,
            buffer: "v",
            found: 9,
            reference: "p",
            expected: 10,
        };
        for named in [
            length,
            Error::cuda(
                format!("launching {kernel} (10 elements)"),
                CudaError::LaunchFailed,
            ),
            Error::Capture {
                operation: format!("{kernel}: the tensor set changed during graph capture"),
            },
            Error::StepIndex { index: 3, len: 1 }.in_kernel(kernel),
        ] {
            let before = named.to_string();
            let after = named.in_kernel(kernel);
            assert_eq!(after.to_string(), before);
            assert!(!matches!(after, Error::InKernel { source, .. }
                if matches!(*source, Error::InKernel { .. })));
        }
        // In a multi-tensor launch, a tensor's error names the kernel inside InTensor.
        let in_tensor = Error::LengthMismatch {
            kernel,
            buffer: "g",
            found: 1,
            reference: "p",
            expected: 2,
        }
        .in_tensor(1, 3)
        .in_kernel(kernel);
        assert!(
            matches!(in_tensor, Error::InTensor { tensor: 1, .. }),
            "{in_tensor:?}"
        );
    }

    #[test]
    fn messages_are_one_line_with_single_spaces() {
        for e in [
            Error::NotAdvanced {
                kernel: "iqn_adam_kernel_stepped",
            },
            Error::QAbsRefNotOwned,
        ] {
            let message = e.to_string();
            assert!(
                !message.contains("  ") && !message.contains('\n'),
                "{message}"
            );
        }
    }

    #[test]
    fn a_cust_error_converts_by_question_mark() {
        fn copy() -> Result<()> {
            Err(CudaError::InvalidValue)?
        }
        match copy() {
            Err(Error::Cuda { operation, source }) => {
                assert_eq!(source, DriverError::Cust(CudaError::InvalidValue));
                assert!(operation.contains("cust call"), "{operation}");
            }
            other => panic!("expected Error::Cuda, got {other:?}"),
        }
        // No GPU, or no driver, is the runtime's NoDevice, as from its own calls.
        for source in [
            CudaError::NoDevice,
            CudaError::InvalidDevice,
            CudaError::NotInitialized,
        ] {
            assert!(matches!(Error::from(source), Error::NoDevice { .. }));
        }
    }
}
