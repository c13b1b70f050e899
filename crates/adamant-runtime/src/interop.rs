//! Launches on memory and streams that other CUDA code owns (a training codebase on cudarc or on
//! raw driver calls), so that it can adopt adamant one kernel at a time: [`DeviceRegion`] is a
//! raw device range, [`ForeignStream`] a borrowed raw stream, and
//! [`Launch::raw_buffers`](crate::Launch::raw_buffers), [`Launch::raw_buffers`](crate::Launch::raw_buffers) and their multi-tensor
//! forms ([`Launch::raw_set`](crate::Launch::raw_set), [`Launch::raw_set`](crate::Launch::raw_set)) the validated
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

use adamant_device::abi::{same_buffers, OptimizerEntry, Same, Storage};
use cust::stream::Stream;
use cust::sys::CUstream;

use crate::buffers::LaunchBuffer;
#[cfg(doc)]
use crate::device::Adamant;
use crate::error::{Error, Result};
use crate::memory::Keep;

/// `len` elements of device memory at `ptr`, owned by other code: `f32`s
/// ([`DeviceRegion::new`]) or of another storage type ([`DeviceRegion::of`], for a kernel that
/// declares a 16-bit buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceRegion {
    ptr: u64,
    len: usize,
    storage: Storage,
}

impl DeviceRegion {
    /// The range `ptr .. ptr + 4·len`. Checks what the address alone can tell: not null (unless
    /// empty), 4-byte aligned, no overflow. [`Launch::raw_buffers`](crate::Launch::raw_buffers) checks it against
    /// the driver's allocations.
    ///
    /// # Errors
    ///
    /// [`Error::ForeignRegion`] naming the reason.
    pub fn new(ptr: u64, len: usize) -> Result<DeviceRegion> {
        DeviceRegion::of(ptr, len, Storage::F32)
    }

    /// The range `ptr .. ptr + len·storage.bytes()` of elements stored as `storage` (for a
    /// kernel's `#[param(bf16)]`, `Storage::Bf16`), checked as [`DeviceRegion::new`] checks an
    /// f32 region: not null (unless empty), aligned to the element, no overflow. A launch refuses
    /// it for a buffer its kernel declares with another storage type.
    ///
    /// # Errors
    ///
    /// [`Error::ForeignRegion`] naming the reason.
    pub fn of(ptr: u64, len: usize, storage: Storage) -> Result<DeviceRegion> {
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
        let element = storage.bytes() as u64;
        if !ptr.is_multiple_of(element) {
            return bad(&format!(
                "not {element}-byte aligned ({} elements)",
                storage.name()
            ));
        }
        if (len as u64)
            .checked_mul(element)
            .and_then(|bytes| ptr.checked_add(bytes))
            .is_none()
        {
            return bad("the range overflows the address space");
        }
        Ok(DeviceRegion { ptr, len, storage })
    }

    /// How its elements are stored.
    pub fn storage(&self) -> Storage {
        self.storage
    }

    /// The device address.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// The length in elements (of its storage type).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The driver's word on the region: it lies inside one device allocation.
    pub(crate) fn check_allocation(
        &self,
        kernel: &'static str,
        buffer: &'static str,
    ) -> Result<()> {
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
        let end = self.ptr + (self.len * self.storage.bytes()) as u64;
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
    fn storage(&self) -> Storage {
        self.storage
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

/// Every region of every tensor of a raw multi-tensor launch against the driver's allocations;
/// an error names its tensor in a set of more than one (as the lengths' errors do).
pub(crate) fn check_set_regions<E: OptimizerEntry>(
    kernel: &'static str,
    tensors: &[E::Buffers<Raw>],
) -> Result<()> {
    for (t, tensor) in tensors.iter().enumerate() {
        check_regions::<E>(kernel, tensor).map_err(|e| e.in_tensor(t, tensors.len()))?;
    }
    Ok(())
}

/// Every region of a raw launch against the driver's allocations, before any other check.
pub(crate) fn check_regions<E: OptimizerEntry>(
    kernel: &'static str,
    buffers: &E::Buffers<Raw>,
) -> Result<()> {
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
        // borrow never destroys the stream is checked on the GPU (tests/gpu/interop.rs destroys
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
