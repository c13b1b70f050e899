//! Launches on memory and streams that other CUDA code owns (a training codebase on cudarc or on
//! raw driver calls), so that it can adopt adamant one kernel at a time: [`DeviceRegion`] is a
//! raw device range, [`ForeignStream`] a borrowed raw stream, and
//! [`Adamant::launch_optimizer_raw`], [`Adamant::launch_stepped_raw`] and their multi-tensor
//! forms ([`Adamant::launch_multi_raw`], [`Adamant::launch_multi_stepped_raw`]) the validated
//! launches over them.
//!
//! The launch runs every check of the safe launchers (registered entry, bound, domains, lengths,
//! overlaps) and one more that only raw memory needs: each range must lie inside one allocation
//! of device memory that the driver knows (`cuPointerGetAttribute`), so a host pointer, a freed
//! or foreign-context address, or a length past the allocation's end is refused with a typed
//! error before anything is enqueued. What no check can see, that the memory stays allocated and
//! unaliased until the launch has run, is the caller's promise (`unsafe`).
use std::marker::PhantomData;
use std::mem::{size_of, ManuallyDrop};
use std::ops::Deref;

use adamant_kernels::abi::{same_buffers, OptimizerEntry, Same};
use cust::stream::Stream;
use cust::sys::CUstream;

use crate::buffers::LaunchBuffer;
use crate::clamp_policy::ClampPolicy;
use crate::device::Adamant;
use crate::error::{Error, Result};
use crate::launch::LaunchInfo;
use crate::launch_check::Uniforms;
use crate::memory::Keep;
use crate::multi::TensorSet;
use crate::records::Records;
use crate::step::StepStates;

/// `len` `f32`s of device memory at `ptr`, owned by other code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceRegion {
    ptr: u64,
    len: usize,
}

impl DeviceRegion {
    /// The range `ptr .. ptr + 4·len`. Checks what the address alone can tell: not null (unless
    /// empty), 4-byte aligned, no overflow. [`Adamant::launch_optimizer_raw`] checks it against
    /// the driver's allocations.
    ///
    /// # Errors
    ///
    /// [`Error::ForeignRegion`] naming the reason.
    pub fn new(ptr: u64, len: usize) -> Result<DeviceRegion> {
        let bad = |reason: &str| {
            Err(Error::ForeignRegion {
                ptr,
                len,
                reason: reason.to_string(),
            })
        };
        if len > 0 && ptr == 0 {
            return bad("a null address");
        }
        if !ptr.is_multiple_of(size_of::<f32>() as u64) {
            return bad("not 4-byte aligned");
        }
        if (len as u64)
            .checked_mul(size_of::<f32>() as u64)
            .and_then(|bytes| ptr.checked_add(bytes))
            .is_none()
        {
            return bad("the range overflows the address space");
        }
        Ok(DeviceRegion { ptr, len })
    }

    /// The device address.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// The length in `f32` elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The driver's word on the region: it lies inside one device allocation.
    fn check_allocation(&self, kernel: &'static str, buffer: &'static str) -> Result<()> {
        if self.len == 0 {
            return Ok(());
        }
        let refuse = |reason: String| Error::ForeignBuffer {
            kernel,
            buffer,
            ptr: self.ptr,
            len: self.len,
            reason,
        };
        let (start, size) = crate::driver::allocation_of(self.ptr)
            .map_err(|s| refuse(format!("the driver knows no allocation there ({s:?})")))?;
        let end = self.ptr + (self.len * size_of::<f32>()) as u64;
        if end > start.saturating_add(size) {
            return Err(refuse(format!(
                "it runs {} bytes past the end of its allocation ({size} bytes at {start:#x})",
                end - start.saturating_add(size)
            )));
        }
        Ok(())
    }
}

/// The buffer family of the raw launches: every buffer a [`DeviceRegion`] of memory other code
/// owns (`E::Buffers<Raw>`, e.g. `iqn_adam_kernel::Buffers { p: region(..)?, .. }`).
pub type Raw = Same<DeviceRegion>;

impl LaunchBuffer for DeviceRegion {
    fn address(&self) -> u64 {
        self.ptr
    }
    fn len(&self) -> usize {
        self.len
    }
    /// Memory other code owns: its life is the raw launch's caller's promise.
    fn keep(&self) -> Option<Keep> {
        None
    }
}

/// A stream created by other code, borrowed for launches: it derefs to cust's [`Stream`], which
/// every launcher and the NaN checker take, and is never destroyed by adamant.
///
/// Three ways in, one per form the handle comes in, none needing a cast:
///
/// - [`ForeignStream::from_raw`]: cust's own `CUstream` (`cust::sys::CUstream`, or
///   `stream.as_inner()` of a cust [`Stream`]);
/// - [`ForeignStream::from_ptr`]: any other library's pointer type for it. cudarc's `CUstream`
///   is `*mut cudarc::driver::sys::CUstream_st`, a type of its own, so a cudarc stream goes in
///   as `ForeignStream::from_ptr(stream.cu_stream())` (cudarc's `CudaStream::cu_stream()`);
///   a `*mut c_void` from C goes in the same way;
/// - [`ForeignStream::from_address`]: the handle as an integer, as PyTorch gives it:
///   `torch.cuda.current_stream().cuda_stream` is a Python `int` (the `CUstream`'s address; 0
///   for the legacy default stream), which a binding hands to Rust as a `usize`.
///
/// The stream must belong to the runtime's context: with cudarc, a stream of
/// `CudaContext::new(ordinal)` for the ordinal the runtime was started on
/// ([`Adamant::on_device`]); with PyTorch, a stream of that GPU. Both are streams of the
/// device's primary context, which is the runtime's (see [`Adamant`], "The CUDA context").
///
/// ```
/// use adamant_runtime::ForeignStream;
///
/// // What a PyTorch binding receives for `torch.cuda.current_stream().cuda_stream`.
/// let from_torch: usize = 0; // the legacy default stream
/// // SAFETY: the legacy default stream is valid in every context, for as long as it is used.
/// let stream = unsafe { ForeignStream::from_address(from_torch) };
/// assert!(stream.as_inner().is_null());
///
/// // A handle of another library's pointer type (cudarc's `*mut CUstream_st`, or C's `void*`).
/// let from_c: *mut std::ffi::c_void = std::ptr::null_mut();
/// // SAFETY: as above.
/// let stream = unsafe { ForeignStream::from_ptr(from_c) };
/// assert!(stream.as_inner().is_null());
/// ```
pub struct ForeignStream<'a> {
    stream: ManuallyDrop<Stream>,
    _borrowed: PhantomData<&'a ()>,
}

impl ForeignStream<'_> {
    /// Borrows the stream whose handle is `ptr`, of whatever pointer type the library that made
    /// it uses for a `CUstream` (cudarc's `*mut cudarc::driver::sys::CUstream_st`, a C
    /// `void*`): the handle is the address, whatever type it points to.
    ///
    /// # Safety
    ///
    /// As [`ForeignStream::from_raw`]: `ptr` is a `CUstream` (not the address of one) of the
    /// runtime's context, or null, that stays valid for the returned value's life.
    pub unsafe fn from_ptr<T>(ptr: *mut T) -> Self {
        Self::from_raw(ptr.cast())
    }

    /// Borrows the stream whose handle is the integer `address`: PyTorch's
    /// `torch.cuda.current_stream().cuda_stream` (0 is the legacy default stream).
    ///
    /// # Safety
    ///
    /// As [`ForeignStream::from_raw`]: `address` is a `CUstream` of the runtime's context, or 0,
    /// that stays valid for the returned value's life (PyTorch's streams live as long as its
    /// stream pool: the process).
    pub unsafe fn from_address(address: usize) -> Self {
        Self::from_raw(address as CUstream)
    }

    /// Borrows `raw`, cust's `CUstream`.
    ///
    /// # Safety
    ///
    /// `raw` is a stream of the runtime's context (or null, the legacy default stream) that stays
    /// valid for the returned value's life.
    pub unsafe fn from_raw(raw: CUstream) -> Self {
        // cust's `Stream` (pinned at =0.3.2) is one `CUstream` field, `inner`; a test checks that
        // the round trip gives back the same handle. `ManuallyDrop` keeps cust's `Drop`, which
        // would destroy the stream, from ever running.
        const _: () = assert!(size_of::<Stream>() == size_of::<CUstream>());
        let stream: Stream = std::mem::transmute::<CUstream, Stream>(raw);
        ForeignStream {
            stream: ManuallyDrop::new(stream),
            _borrowed: PhantomData,
        }
    }
}

impl Deref for ForeignStream<'_> {
    type Target = Stream;

    fn deref(&self) -> &Stream {
        &self.stream
    }
}

impl Adamant {
    /// [`Adamant::launch_optimizer`] over memory other code owns: the same checks (registered
    /// entry, bound, scalar domains, lengths, no written buffer overlapping another), and each
    /// region must lie inside one device allocation the driver knows. `stream` may be a
    /// [`ForeignStream`].
    ///
    /// ```
    /// use adamant_kernels::optimizers::iqn_adam_kernel;
    /// use adamant_runtime::cust::memory::DeviceBuffer;
    /// use adamant_runtime::{adam_scalars, AdamHyper, ClampPolicy, DeviceRegion, Error, Records};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let rt = match adamant_runtime::Adamant::new() {
    /// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
    /// #     other => other?,
    /// # };
    /// // Memory another library allocated, known to us by address and length only.
    /// let n = 4096;
    /// let owned: Vec<DeviceBuffer<f32>> =
    ///     (0..4).map(|_| DeviceBuffer::from_slice(&vec![0.1f32; n])).collect::<Result<_, _>>()?;
    /// let region = |i: usize| DeviceRegion::new(owned[i].as_device_ptr().as_raw(), n);
    /// let buffers = iqn_adam_kernel::Buffers { p: region(0)?, g: region(1)?, m: region(2)?, v: region(3)? };
    /// let records = Records::single::<iqn_adam_kernel::Entry>()?;
    /// let hyper = AdamHyper::pytorch_defaults(1)?;
    /// let scalars = adam_scalars!(iqn_adam_kernel, hyper, weight_decay: 0.0)?;
    /// let policy = ClampPolicy::Fixed { bound: 1.0 };
    /// // SAFETY: the four buffers outlive the launch (synchronised below) and nothing else
    /// // touches them meanwhile.
    /// unsafe {
    ///     rt.launch_optimizer_raw::<iqn_adam_kernel::Entry>(
    ///         rt.stream(),
    ///         &buffers,
    ///         &scalars,
    ///         policy,
    ///         &records,
    ///     )?
    /// };
    /// rt.synchronize()?;
    /// assert_eq!(records.read().sequence, 1);
    ///
    /// // One element past the end of its allocation: refused by the driver's tables.
    /// let past = iqn_adam_kernel::Buffers {
    ///     p: DeviceRegion::new(owned[0].as_device_ptr().as_raw() + 4, n)?, ..buffers
    /// };
    /// let refused = unsafe {
    ///     rt.launch_optimizer_raw::<iqn_adam_kernel::Entry>(
    ///         rt.stream(),
    ///         &past,
    ///         &scalars,
    ///         policy,
    ///         &records,
    ///     )
    /// };
    /// assert!(matches!(refused, Err(Error::ForeignBuffer { buffer: "p", .. })));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Safety
    ///
    /// Every region is device memory of the runtime's context that stays allocated until the
    /// launch has run on `stream` (for a recorded graph, until its last replay: a graph keeps
    /// the runtime's own memory alive, never a region), and no other work reads or writes the
    /// regions the entry writes while it runs (the checks see addresses, not other code's work).
    ///
    /// # Errors
    ///
    /// Those of [`Adamant::launch_optimizer`], and [`Error::ForeignBuffer`] for a region outside
    /// the driver's device allocations. Nothing is enqueued on error.
    pub unsafe fn launch_optimizer_raw<E: OptimizerEntry>(
        &self,
        stream: &Stream,
        buffers: &E::Buffers<Raw>,
        scalars: &E::Scalars,
        policy: ClampPolicy,
        records: &Records,
    ) -> Result<LaunchInfo> {
        check_regions::<E>(E::DESCRIPTOR.name, buffers)?;
        self.launch_single::<E, _>(
            stream,
            buffers,
            Uniforms::Plain { scalars, policy },
            records,
        )
    }

    /// [`Adamant::launch_stepped`] over memory other code owns: the bound and the `#[step]`
    /// scalars come from record `index` of `states`, so a graph that records this launch after
    /// [`StepStates::advance`](crate::StepStates::advance) trains at every replay, on foreign
    /// buffers and a [`ForeignStream`] alike. The checks are those of
    /// [`Adamant::launch_optimizer_raw`] and of the stepped launch.
    ///
    /// # Safety
    ///
    /// As [`Adamant::launch_optimizer_raw`]: for a recorded graph, until its last replay has run.
    ///
    /// # Errors
    ///
    /// Those of [`Adamant::launch_stepped`], and [`Error::ForeignBuffer`].
    pub unsafe fn launch_stepped_raw<E: OptimizerEntry>(
        &self,
        stream: &Stream,
        buffers: &E::Buffers<Raw>,
        scalars: &E::StepScalars,
        states: &StepStates,
        index: usize,
        records: &Records,
    ) -> Result<LaunchInfo> {
        check_regions::<E>(E::STEPPED_DESCRIPTOR.name, buffers)?;
        let uniforms = Uniforms::Stepped {
            scalars,
            states,
            index,
        };
        self.launch_single::<E, _>(stream, buffers, uniforms, records)
    }
}

impl Adamant {
    /// [`Adamant::launch_multi`] over memory other code owns: one launch of `E`'s multi-tensor
    /// entry over `tensors`, each a set of foreign [`DeviceRegion`]s. Every region is checked
    /// against the driver's allocations (an error inside an [`Error::InTensor`] naming the
    /// tensor, in a set of more than one), then the checks of [`Adamant::launch_multi`] run:
    /// lengths, overlaps across the whole set, the bound and the scalar domains. `set` keeps
    /// the device tables as for the safe launch: built from these regions, and rebuilt only
    /// when they change, which is refused while `stream` is being captured. The launch's
    /// records are `set`'s ([`TensorSet::records`]).
    ///
    /// ```
    /// use adamant_kernels::optimizers::attn_adam_kernel;
    /// use adamant_runtime::cust::memory::DeviceBuffer;
    /// use adamant_runtime::{adam_scalars, AdamHyper, ClampPolicy, DeviceRegion, TensorSet};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let rt = match adamant_runtime::Adamant::new() {
    /// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
    /// #     other => other?,
    /// # };
    /// // Two tensors of another library's model, each as four raw allocations [p, g, m, v].
    /// let owned: Vec<Vec<DeviceBuffer<f32>>> = [300usize, 5000]
    ///     .iter()
    ///     .map(|&n| (0..4).map(|_| DeviceBuffer::from_slice(&vec![0.01f32; n])).collect())
    ///     .collect::<Result<_, _>>()?;
    /// let region = |b: &DeviceBuffer<f32>| DeviceRegion::new(b.as_device_ptr().as_raw(), b.len());
    /// let tensors = owned
    ///     .iter()
    ///     .map(|t| {
    ///         Ok(attn_adam_kernel::Buffers {
    ///             p: region(&t[0])?, g: region(&t[1])?, m: region(&t[2])?, v: region(&t[3])?,
    ///         })
    ///     })
    ///     .collect::<adamant_runtime::Result<Vec<_>>>()?;
    /// let hyper = AdamHyper::pytorch_defaults(1)?;
    /// let scalars = adam_scalars!(attn_adam_kernel, hyper, weight_decay: hyper.weight_decay)?;
    /// let mut set = TensorSet::new();
    /// // SAFETY: the regions outlive the launch (synchronised below), nothing else touches them.
    /// let info = unsafe {
    ///     rt.launch_multi_raw::<attn_adam_kernel::Entry>(
    ///         rt.stream(), &mut set, &tensors, &scalars, ClampPolicy::Fixed { bound: 1.0 },
    ///     )?
    /// };
    /// rt.synchronize()?;
    /// assert_eq!((info.kernel, set.elements()), ("attn_adam_kernel_multi", 5300));
    /// assert_eq!(set.records().expect("built").tensors.len(), 2);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Safety
    ///
    /// As [`Adamant::launch_optimizer_raw`], for every region of every tensor.
    ///
    /// # Errors
    ///
    /// Those of [`Adamant::launch_multi`], and [`Error::ForeignBuffer`] (inside an
    /// [`Error::InTensor`] in a set of more than one). Nothing is enqueued on error.
    ///
    /// [`TensorSet::records`]: crate::TensorSet::records
    pub unsafe fn launch_multi_raw<E: OptimizerEntry>(
        &self,
        stream: &Stream,
        set: &mut TensorSet,
        tensors: &[E::Buffers<Raw>],
        scalars: &E::Scalars,
        policy: ClampPolicy,
    ) -> Result<LaunchInfo> {
        check_set_regions::<E>(E::MULTI_DESCRIPTOR.name, tensors)?;
        self.launch_set::<E, _>(stream, set, tensors, Uniforms::Plain { scalars, policy })
    }

    /// [`Adamant::launch_multi_stepped`] over memory other code owns: the bound and the
    /// `#[step]` scalars from record `index` of `states`, the region checks of
    /// [`Adamant::launch_multi_raw`].
    ///
    /// # Safety
    ///
    /// As [`Adamant::launch_multi_raw`]: for a recorded graph, until its last replay has run.
    ///
    /// # Errors
    ///
    /// Those of [`Adamant::launch_multi_stepped`], and [`Error::ForeignBuffer`] as for
    /// [`Adamant::launch_multi_raw`].
    pub unsafe fn launch_multi_stepped_raw<E: OptimizerEntry>(
        &self,
        stream: &Stream,
        set: &mut TensorSet,
        tensors: &[E::Buffers<Raw>],
        scalars: &E::StepScalars,
        states: &StepStates,
        index: usize,
    ) -> Result<LaunchInfo> {
        check_set_regions::<E>(E::MULTI_STEPPED_DESCRIPTOR.name, tensors)?;
        let uniforms = Uniforms::Stepped {
            scalars,
            states,
            index,
        };
        self.launch_set::<E, _>(stream, set, tensors, uniforms)
    }
}

/// Every region of every tensor of a raw multi-tensor launch against the driver's allocations;
/// an error names its tensor in a set of more than one (as the lengths' errors do).
fn check_set_regions<E: OptimizerEntry>(
    kernel: &'static str,
    tensors: &[E::Buffers<Raw>],
) -> Result<()> {
    for (t, tensor) in tensors.iter().enumerate() {
        check_regions::<E>(kernel, tensor).map_err(|e| e.in_tensor(t, tensors.len()))?;
    }
    Ok(())
}

/// Every region of a raw launch against the driver's allocations, before any other check.
fn check_regions<E: OptimizerEntry>(kernel: &'static str, buffers: &E::Buffers<Raw>) -> Result<()> {
    for (name, region) in same_buffers::<E, DeviceRegion>(buffers) {
        region.check_allocation(kernel, name)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_refuses_null_misaligned_and_overflowing_ranges() {
        for (ptr, len, reason) in [
            (0, 1, "null"),
            (0x1002, 4, "aligned"),
            (u64::MAX - 3, 2, "overflows"),
        ] {
            match DeviceRegion::new(ptr, len) {
                Err(Error::ForeignRegion { reason: r, .. }) => assert!(r.contains(reason), "{r}"),
                other => panic!("{ptr:#x}/{len}: {other:?}"),
            }
        }
        let empty = DeviceRegion::new(0, 0).unwrap();
        assert!(empty.is_empty());
        let r = DeviceRegion::new(0x1000, 10).unwrap();
        assert_eq!((r.ptr(), r.len()), (0x1000, 10));
    }

    #[test]
    fn a_foreign_stream_hands_back_the_raw_handle() {
        // A made-up handle: the round trip must not touch the driver (no GPU here). That the
        // borrow never destroys the stream is checked on the GPU (tests/gpu_interop.rs destroys
        // its stream itself afterwards, which fails on a stream already destroyed).
        let raw = 0x5eed_0000usize as CUstream;
        let stream = unsafe { ForeignStream::from_raw(raw) };
        assert_eq!(stream.as_inner(), raw);
    }

    #[test]
    fn a_stream_handle_of_another_pointer_type_or_an_integer_is_the_same_handle() {
        // Another library's own type for `CUstream_st` (cudarc declares one, as bindgen does).
        #[repr(C)]
        #[allow(non_camel_case_types)]
        struct CUstream_st {
            _opaque: [u8; 0],
        }
        let address = 0x5eed_0040usize;
        let theirs = address as *mut CUstream_st;
        let raw = address as CUstream;
        // No cast at the call: the handle is the address, whatever it points to.
        assert_eq!(unsafe { ForeignStream::from_ptr(theirs) }.as_inner(), raw);
        let void = address as *mut std::ffi::c_void;
        assert_eq!(unsafe { ForeignStream::from_ptr(void) }.as_inner(), raw);
        // PyTorch's `cuda_stream` is the same address as an integer.
        assert_eq!(
            unsafe { ForeignStream::from_address(address) }.as_inner(),
            raw
        );
        assert!(unsafe { ForeignStream::from_address(0) }
            .as_inner()
            .is_null());
    }
}
