//! The runtime's one error type. Every variant names what was wrong (the kernel, the buffer, the
//! field) and the sizes or values involved; none of them is raised after a launch was enqueued.
use cust::error::CudaError;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The driver loaded but found no GPU (or no driver at all could be initialised).
    #[error(
        "no CUDA GPU is available: adamant's kernels need an NVIDIA GPU (sm_90) and its driver"
    )]
    NoDevice { source: CudaError },

    /// A device allocation failed.
    #[error("out of GPU memory allocating {what} ({bytes} bytes)")]
    OutOfMemory { what: String, bytes: usize },

    /// The embedded PTX lacks an entry the runtime launches.
    #[error("the PTX module has no kernel entry `{name}` (is the PTX older than kernels-rs?)")]
    MissingKernel {
        name: &'static str,
        source: CudaError,
    },

    /// The driver refused the PTX module.
    #[error("the driver rejected adamant's PTX module")]
    ModuleLoad { source: CudaError },

    /// Two per-element buffers of one launch differ in length.
    #[error(
        "{kernel}: buffer `{buffer}` has {found} elements but `{reference}` has {expected}; \
         every per-element buffer of one launch must have the same length (nothing was launched)"
    )]
    LengthMismatch {
        kernel: &'static str,
        buffer: &'static str,
        found: usize,
        reference: &'static str,
        expected: usize,
    },

    /// A group lacks a buffer the kernel needs (for example AMSGrad's `v_max`).
    #[error("{kernel}: parameter group `{group}` has no `{buffer}` buffer (nothing was launched)")]
    MissingBuffer {
        kernel: &'static str,
        group: String,
        buffer: &'static str,
    },

    /// A host slice passed to upload or download has the wrong length.
    #[error("group `{group}`, buffer `{buffer}`: host data has {found} elements, the device buffer {expected}")]
    HostLength {
        group: String,
        buffer: &'static str,
        found: usize,
        expected: usize,
    },

    /// A hyperparameter outside its valid range.
    #[error("invalid hyperparameter `{field}` = {value}: must be {requirement}")]
    InvalidHyper {
        field: &'static str,
        value: f64,
        requirement: &'static str,
    },

    /// The ISV's `Q_ABS_REF` (or the bound derived from it) is not usable.
    #[error(
        "invalid clamp input `{what}` = {value}: must be {requirement} (nothing was launched)"
    )]
    InvalidClamp {
        what: &'static str,
        value: f32,
        requirement: &'static str,
    },

    /// A disabled clamp needs a stated reason.
    #[error("a disabled weight clamp needs a non-empty reason")]
    DisabledWithoutReason,

    /// A size the device tables cannot represent.
    #[error("{kernel}: {what} is {value}, more than the {limit} a launch supports")]
    TooLarge {
        kernel: &'static str,
        what: String,
        value: usize,
        limit: usize,
    },

    /// An error about one tensor of a multi-tensor launch.
    #[error("tensor {tensor} of the set: {source}")]
    InTensor { tensor: usize, source: Box<Error> },

    /// Something that cannot happen while a stream is captured into a graph (or a capture
    /// that failed).
    #[error("graph capture: {operation}")]
    Capture { operation: String },

    /// Any other driver error, with the operation that raised it.
    #[error("CUDA error during {operation}")]
    Cuda {
        operation: String,
        source: CudaError,
    },

    /// A NaN-check range that is empty or reaches past the slot table.
    #[error(
        "nan check: slot range {first}..={last} is not a non-empty range inside the slot table \
         (slots 0..={}; nothing was launched)",
        slots - 1
    )]
    InvalidSlotRange {
        first: usize,
        last: usize,
        slots: usize,
    },

    /// A slot of the checked range has no buffer bound to it.
    #[error(
        "nan check: slot {index} `{name}` is in the checked range but no buffer is bound to it \
         (bind it with SlotBindings::bind or bind_group; nothing was launched)"
    )]
    UnboundSlot { index: usize, name: &'static str },

    /// A slot bound to a null device address with a non-zero length.
    #[error(
        "nan check: slot {index} `{name}` is bound to a null device address with {len} elements"
    )]
    NullSlotBuffer {
        index: usize,
        name: &'static str,
        len: usize,
    },

    /// `SlotBindings::bind_group` with a group the slot table has no slot for.
    #[error(
        "nan check: the slot table declares no slot for parameter group `{group}` (is the group \
         name spelt as in the table?)"
    )]
    UnknownSlotGroup { group: String },

    /// The checked range has more chunks than one launch takes.
    #[error("nan check: {work_items} work items exceed the limit of {limit} per launch")]
    NanCheckTooLarge { work_items: usize, limit: usize },

    /// The `Q_ABS_REF` a check was given is unusable.
    #[error("nan check: Q_ABS_REF = {value} must be finite and >= 0 (nothing was launched)")]
    InvalidQAbsRef { value: f32 },

    /// `factor × q_abs_ref_eff` overflows f32 for a max-abs slot.
    #[error(
        "nan check: slot {index} `{name}`: threshold {factor} × q_abs_ref_eff {q_abs_ref_eff} is \
         not finite in f32 (nothing was launched)"
    )]
    SlotThresholdOverflow {
        index: usize,
        name: &'static str,
        factor: f32,
        q_abs_ref_eff: f32,
    },

    /// `NanChecker::report` before any `enqueue`.
    #[error("nan check: report() was called before any check was enqueued")]
    NanCheckNotEnqueued,

    /// A NaN check found tripped slots (`NanReport::ensure_quiet`); `report` is the log line.
    #[error("{report}")]
    NanCheckTripped { report: String },
}

impl Error {
    /// Wraps a driver error from `operation`, mapping the ones with a meaning of their own.
    pub fn cuda(operation: impl Into<String>, source: CudaError) -> Error {
        match source {
            CudaError::NoDevice | CudaError::InvalidDevice | CudaError::NotInitialized => {
                Error::NoDevice { source }
            }
            _ => Error::Cuda {
                operation: operation.into(),
                source,
            },
        }
    }
}

/// `result.map_err(|e| Error::cuda(op, e))`, shorter.
pub(crate) trait CudaContext<T> {
    fn during(self, operation: &str) -> Result<T>;
}

impl<T> CudaContext<T> for std::result::Result<T, CudaError> {
    fn during(self, operation: &str) -> Result<T> {
        self.map_err(|e| Error::cuda(operation, e))
    }
}
