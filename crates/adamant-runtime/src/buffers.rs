//! The device buffers a safe launch takes, each typed by its role.
//!
//! - [`ParamBuffer`]: parameters (weights). Only a kernel's `#[param]` slot takes one mutably,
//!   so a parameter buffer is only ever written through the clamp; nothing converts it to
//!   another role.
//! - [`DeviceArray`]: any other `f32` buffer (gradients, moments, activations): an `#[input]` or
//!   `#[state]`.
//! - [`DeviceScalar`]: one `f32` every thread of a launch reads (a `#[uniform_ptr]` argument,
//!   such as DQN's `grad_scale`).
//!
//! Each owns its allocation (shared with every graph that recorded it, see `memory.rs`) and is
//! not `Clone` or `Copy`, and there is no view of one that could outlive it: a launch borrows
//! the buffers it writes mutably, so the borrow checker keeps a written buffer from also being
//! any other buffer of the launch. [`Owned`] is the buffer family of the safe launches
//! (`E::Buffers<Owned<'_>>`).
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use adamant_device::abi::{BufferKinds, Storage, UniformPtr};
use cust::memory::DevicePointer;
use cust::stream::Stream;

use crate::error::{Error, Result};
use crate::memory::{DeviceMemory, Keep};

mod sealed {
    /// Implemented by the runtime's buffer types only: a launch trusts what `memory` and
    /// `layout` return.
    pub trait Sealed {
        /// The allocation, in 32-bit words (a 16-bit buffer's elements two to a word).
        fn memory(&self) -> &std::sync::Arc<crate::memory::DeviceMemory<f32>>;
        /// The number of elements and how each is stored.
        fn layout(&self) -> (usize, adamant_device::abi::Storage);
    }
}

/// A device buffer that a launch may read: a [`ParamBuffer`] or a [`DeviceArray`], for an
/// `#[input]` slot (a target network's soft update reads the online network's parameters,
/// say), a NaN-check binding or a `Q_ABS_REF` slot (those two read `f32` only). Sealed.
pub trait ReadBuffer: sealed::Sealed {
    /// Number of elements (of its storage type: `f32` unless made 16-bit).
    fn len(&self) -> usize {
        self.layout().0
    }

    /// How its elements are stored: [`Storage::F32`] unless it was made with a 16-bit storage
    /// type (`zeroed_as`, `from_bits`). A launch refuses a buffer whose storage is not the one
    /// its kernel declares for it.
    fn storage(&self) -> Storage {
        self.layout().1
    }

    /// Whether the buffer has no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The device address of the first element, in the runtime's context (for logs and for
    /// kernels of other code, which take raw pointers in `unsafe` launches of their own).
    fn device_ptr(&self) -> u64 {
        self.memory().address()
    }

    /// The buffer as an `#[input]` of a launch: a shared borrow, read only.
    fn input(&self) -> Input<'_> {
        let (len, storage) = self.layout();
        Input {
            memory: self.memory(),
            len,
            storage,
        }
    }
}

/// 32-bit words that hold `len` elements of `storage`.
fn words(len: usize, storage: Storage) -> usize {
    (len * storage.bytes()).div_ceil(4)
}

/// 16-bit elements packed two to a little-endian word (element `2k` in word `k`'s low half), as
/// the device reads them at `base + 2i`.
fn pack(bits: &[u16]) -> Vec<f32> {
    bits.chunks(2)
        .map(|pair| {
            let high = pair.get(1).copied().unwrap_or(0);
            f32::from_bits(u32::from(pair[0]) | (u32::from(high) << 16))
        })
        .collect()
}

/// The first `len` 16-bit elements of `words` (the inverse of [`pack`]).
fn unpack(words: &[f32], len: usize) -> Vec<u16> {
    words
        .iter()
        .flat_map(|w| {
            let b = w.to_bits();
            [b as u16, (b >> 16) as u16]
        })
        .take(len)
        .collect()
}

/// A shared borrow of a [`ParamBuffer`] or a [`DeviceArray`] for an `#[input]` slot, which the
/// kernel only reads: `g: grads.input()`. While it lives, the borrow checker keeps the buffer
/// from being any launch's written buffer.
#[derive(Clone, Copy)]
pub struct Input<'a> {
    memory: &'a Arc<DeviceMemory<f32>>,
    len: usize,
    storage: Storage,
}

impl std::fmt::Debug for Input<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Input({:?})", self.memory)
    }
}

/// The allocation behind a readable buffer, as a graph keeps it.
pub(crate) fn keep_of(buffer: &dyn ReadBuffer) -> Keep {
    buffer.memory().clone()
}

/// The methods every buffer type has, written once.
macro_rules! f32_buffer {
    ($ty:ident, $what:literal) => {
        impl sealed::Sealed for $ty {
            fn memory(&self) -> &Arc<DeviceMemory<f32>> {
                &self.memory
            }
            fn layout(&self) -> (usize, Storage) {
                (self.len, self.storage)
            }
        }

        impl ReadBuffer for $ty {}

        impl $ty {
            /// A buffer of `len` zeros.
            ///
            /// # Errors
            ///
            /// [`Error::OutOfMemory`], or [`Error::Cuda`] (no context: create an
            /// [`Adamant`](crate::Adamant) first).
            pub fn zeroed(len: usize) -> Result<$ty> {
                $ty::filled(len, 0.0)
            }

            /// A buffer of `len` copies of `value`, written on the device (no host copy of
            /// `len` values is made).
            ///
            /// # Errors
            ///
            /// As [`Self::zeroed`].
            pub fn filled(len: usize, value: f32) -> Result<$ty> {
                Ok($ty {
                    memory: DeviceMemory::filled(len, value, $what)?,
                    len,
                    storage: Storage::F32,
                })
            }

            /// A buffer holding a copy of `data` (synchronous: `data` may be reused on return).
            ///
            /// # Errors
            ///
            /// As [`Self::zeroed`].
            pub fn from_host(data: &[f32]) -> Result<$ty> {
                Ok($ty {
                    memory: DeviceMemory::from_host(data, $what)?,
                    len: data.len(),
                    storage: Storage::F32,
                })
            }

            /// A buffer of `len` zeros stored as `storage` (for a kernel that declares this
            /// buffer `bf16`, `f16` or a bf16 remainder; `Storage::F32` is [`Self::zeroed`]).
            ///
            /// # Errors
            ///
            /// As [`Self::zeroed`].
            pub fn zeroed_as(len: usize, storage: Storage) -> Result<$ty> {
                Ok($ty {
                    memory: DeviceMemory::filled(words(len, storage), 0.0, $what)?,
                    len,
                    storage,
                })
            }

            /// A buffer of 16-bit elements stored as `storage` (`Bf16`, `F16` or a remainder's
            /// `Bf16Remainder`), holding a copy of `bits` (`half::bf16::to_bits` of each value,
            /// say).
            ///
            /// # Errors
            ///
            /// [`Error::BufferStorage`] for `Storage::F32` (use [`Self::from_host`]); as
            /// [`Self::zeroed`].
            pub fn from_bits(bits: &[u16], storage: Storage) -> Result<$ty> {
                if storage.bytes() != 2 {
                    return Err(Error::BufferStorage {
                        operation: "from_bits",
                        buffer: $what,
                        storage,
                        needs: "a 16-bit storage type (f32 buffers: from_host)",
                    });
                }
                Ok($ty {
                    memory: DeviceMemory::from_host(&pack(bits), $what)?,
                    len: bits.len(),
                    storage,
                })
            }

            /// Number of elements.
            pub fn len(&self) -> usize {
                self.len
            }

            /// Whether the buffer has no elements.
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// How its elements are stored (see [`ReadBuffer::storage`]).
            pub fn storage(&self) -> Storage {
                self.storage
            }

            /// The device address of the first element (see [`ReadBuffer::device_ptr`]).
            pub fn device_ptr(&self) -> u64 {
                self.memory.address()
            }

            /// The buffer as an `#[input]` of a launch (see [`Input`]).
            pub fn input(&self) -> Input<'_> {
                ReadBuffer::input(self)
            }

            /// `operation` needs the buffer stored as `f32` (or, `sixteen`, as 16 bits).
            fn expect_storage(&self, operation: &'static str, sixteen: bool) -> Result<()> {
                if (self.storage.bytes() == 2) == sixteen {
                    return Ok(());
                }
                Err(Error::BufferStorage {
                    operation,
                    buffer: $what,
                    storage: self.storage,
                    needs: if sixteen {
                        "a 16-bit buffer (f32 buffers: upload, download)"
                    } else {
                        "an f32 buffer (16-bit buffers: upload_bits, download_bits)"
                    },
                })
            }

            /// Overwrites the buffer with `data`, by cust's synchronous copy on the legacy
            /// default stream: `data` may be reused on return, and a later launch on the
            /// runtime's (blocking) stream runs after it.
            ///
            /// # Errors
            ///
            /// [`Error::BufferStorage`] for a 16-bit buffer ([`Self::upload_bits`]);
            /// [`Error::UploadLength`] unless `data` has exactly [`Self::len`] elements (nothing
            /// is written); [`Error::Cuda`] if the copy fails.
            pub fn upload(&mut self, data: &[f32]) -> Result<()> {
                self.expect_storage("upload", false)?;
                if data.len() != self.len() {
                    return Err(Error::UploadLength {
                        buffer: $what,
                        found: data.len(),
                        expected: self.len(),
                    });
                }
                self.memory.write(data, $what)
            }

            /// As [`Self::upload`], for a 16-bit buffer: `bits` are its elements' bits.
            ///
            /// # Errors
            ///
            /// [`Error::BufferStorage`] for an `f32` buffer; as [`Self::upload`].
            pub fn upload_bits(&mut self, bits: &[u16]) -> Result<()> {
                self.expect_storage("upload_bits", true)?;
                if bits.len() != self.len() {
                    return Err(Error::UploadLength {
                        buffer: $what,
                        found: bits.len(),
                        expected: self.len(),
                    });
                }
                self.memory.write(&pack(bits), $what)
            }

            /// A copy of the buffer on the host, by cust's synchronous copy (after the work
            /// enqueued before it on the runtime's blocking stream).
            ///
            /// # Errors
            ///
            /// [`Error::BufferStorage`] for a 16-bit buffer ([`Self::download_bits`]);
            /// [`Error::Cuda`] if the copy fails (a fault of an earlier launch may surface here).
            pub fn download(&self) -> Result<Vec<f32>> {
                self.expect_storage("download", false)?;
                self.memory.read($what)
            }

            /// As [`Self::download`], for a 16-bit buffer: its elements' bits.
            ///
            /// # Errors
            ///
            /// [`Error::BufferStorage`] for an `f32` buffer; as [`Self::download`].
            pub fn download_bits(&self) -> Result<Vec<u16>> {
                self.expect_storage("download_bits", true)?;
                Ok(unpack(&self.memory.read($what)?, self.len))
            }
        }

        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(
                    f,
                    "{}({} × {}, {:?})",
                    stringify!($ty),
                    self.len,
                    self.storage.name(),
                    self.memory
                )
            }
        }
    };
}

/// Parameters (weights) in device memory: `len` `f32`s that only an optimizer kernel's
/// `#[param]` slot writes, through the clamp. The type is the role: a safe launch takes a
/// `&mut ParamBuffer` for its `#[param]` and nowhere else that writes (a `#[state]` takes a
/// [`DeviceArray`]), and nothing converts one to a view of another role. An `#[input]` may read
/// it (`&ParamBuffer` is a [`ReadBuffer`]). Host uploads (initial weights, a checkpoint) are the
/// caller's values: the next optimizer step clamps whatever it finds.
pub struct ParamBuffer {
    memory: Arc<DeviceMemory<f32>>,
    len: usize,
    storage: Storage,
}
f32_buffer!(ParamBuffer, "a parameter buffer");

/// An `f32` buffer in device memory for any role but parameters: gradients (an `#[input]`),
/// moments (a `#[state]`), activations for the NaN check, the ISV vector that holds
/// `Q_ABS_REF`. Code of your own writes it through [`DeviceArray::as_device_ptr`] in launches
/// of its own.
pub struct DeviceArray {
    memory: Arc<DeviceMemory<f32>>,
    len: usize,
    storage: Storage,
}
f32_buffer!(DeviceArray, "a device array");

impl DeviceArray {
    /// cust's pointer to the first element, for kernels of other code (a backward pass writing
    /// gradients), whose launches are `unsafe` and take raw pointers.
    pub fn as_device_ptr(&self) -> DevicePointer<f32> {
        DevicePointer::from_raw(self.memory.address())
    }
}

/// One `f32` in device memory that every thread of a launch reads: the value of a
/// `#[uniform_ptr]` argument (DQN's `grad_scale`, the global-norm clip coefficient), written by
/// the host ([`DeviceScalar::set`]) or by a kernel of other code. A launch takes it as
/// [`DeviceScalar::uniform_ptr`] and checks, before anything is enqueued, that the scalar is
/// still alive (a copy of the pointer can outlive it); a captured graph keeps it alive.
pub struct DeviceScalar {
    memory: Arc<DeviceMemory<f32>>,
}

impl std::fmt::Debug for DeviceScalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceScalar({:?})", self.memory)
    }
}

/// Every live [`DeviceScalar`] by address: a launch looks a `UniformPtr` up here, both to refuse
/// a dangling one and to let a graph keep the scalar alive.
fn scalars() -> &'static Mutex<HashMap<u64, Weak<DeviceMemory<f32>>>> {
    static SCALARS: OnceLock<Mutex<HashMap<u64, Weak<DeviceMemory<f32>>>>> = OnceLock::new();
    SCALARS.get_or_init(Default::default)
}

impl DeviceScalar {
    /// A device scalar holding `value`.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfMemory`] or [`Error::Cuda`].
    pub fn new(value: f32) -> Result<DeviceScalar> {
        let memory = DeviceMemory::from_host(&[value], "a device scalar")?;
        let mut live = scalars().lock().unwrap_or_else(|e| e.into_inner());
        // Forget the scalars that are gone, so the table does not grow with every one made.
        live.retain(|_, w| w.strong_count() > 0);
        live.insert(memory.address(), Arc::downgrade(&memory));
        Ok(DeviceScalar { memory })
    }

    /// The pointer a `#[uniform_ptr]` argument takes (in a kernel's `Scalars`).
    pub fn uniform_ptr(&self) -> UniformPtr {
        // SAFETY: our own live allocation of one f32; every launch that receives the pointer
        // first checks that it is still a live scalar's ([`uniform_keep`]), and a graph keeps
        // it alive.
        unsafe { UniformPtr::from_raw(self.memory.address()) }
    }

    /// Sets the value by cust's synchronous copy (ordered like [`ParamBuffer::upload`]).
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] if the copy fails.
    pub fn set(&mut self, value: f32) -> Result<()> {
        self.memory.write(&[value], "a device scalar")
    }

    /// Sets the value on `stream`, ordered with the work on it (one 4-byte memset, no host
    /// buffer to keep), so a replayed graph reads it at its next replay. Refused while `stream`
    /// is being captured: recorded into a graph, the write would set the same value at every
    /// replay.
    ///
    /// # Errors
    ///
    /// [`Error::Capture`] during a capture; [`Error::Cuda`] if the driver refuses the write.
    pub fn set_async(&self, value: f32, stream: &Stream) -> Result<()> {
        crate::graph::refuse_capture(stream, "DeviceScalar::set_async", crate::graph::HOST_WRITE)?;
        // SAFETY: one word of our own live allocation; kernels only read it.
        unsafe {
            crate::driver::fill_words_async(
                self.memory.address(),
                value.to_bits(),
                1,
                stream,
                "a device scalar",
            )
        }
    }

    /// The value, by cust's synchronous copy.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] if the copy fails.
    pub fn get(&self) -> Result<f32> {
        Ok(self.memory.read("a device scalar")?[0])
    }

    /// The device address.
    pub fn device_ptr(&self) -> u64 {
        self.memory.address()
    }
}

/// The live scalar `ptr` points at, for a launch to keep: `None` for a null pointer;
/// [`Error::StaleUniform`] for an address that is no live [`DeviceScalar`]'s.
pub(crate) fn uniform_keep(
    kernel: &'static str,
    name: &'static str,
    ptr: u64,
) -> Result<Option<Keep>> {
    if ptr == 0 {
        return Ok(None);
    }
    let live = scalars().lock().unwrap_or_else(|e| e.into_inner());
    match live.get(&ptr).and_then(Weak::upgrade) {
        Some(memory) => Ok(Some(memory)),
        None => Err(Error::StaleUniform { kernel, name, ptr }),
    }
}

/// The buffer family of the safe launches: a `#[param]` slot takes a `&mut ParamBuffer`, an
/// `#[input]` an [`Input`] (a shared borrow of either buffer type), a `#[state]` a
/// `&mut DeviceArray`. So `iqn_adam_kernel::Buffers { p: &mut params, g: grads.input(), m: &mut
/// m, v: &mut v }` is an `iqn_adam_kernel::Buffers<Owned<'_>>`, and a parameter buffer in `m` is
/// a type error.
pub struct Owned<'a>(PhantomData<&'a ()>);

impl<'a> BufferKinds for Owned<'a> {
    type Param = &'a mut ParamBuffer;
    type Input = Input<'a>;
    type State = &'a mut DeviceArray;
}

/// The buffer family of reads that write nothing (a checkpoint's save): every role a shared
/// borrow, `iqn_adam_kernel::Buffers { p: &params, g: grads.input(), m: &m, v: &v }`.
pub struct Shared<'a>(PhantomData<&'a ()>);

impl<'a> BufferKinds for Shared<'a> {
    type Param = &'a ParamBuffer;
    type Input = Input<'a>;
    type State = &'a DeviceArray;
}

/// A buffer as the launch checks see it: its address, its length in elements, their storage, and the allocation
/// a graph must keep (none for memory other code owns, whose life is the raw launch's caller's
/// promise). Implemented for the runtime's buffers, for [`crate::DeviceRegion`], and for
/// `(address, len)` pairs (the checks' unit tests).
pub(crate) trait LaunchBuffer {
    fn address(&self) -> u64;
    fn len(&self) -> usize;
    fn keep(&self) -> Option<Keep>;
    /// How its elements are stored: the runtime's own buffers hold `f32`s; a
    /// [`crate::DeviceRegion`] says what it holds. A launch refuses a buffer whose storage is not
    /// the one its kernel declares for it.
    fn storage(&self) -> Storage {
        Storage::F32
    }
}

/// A buffer a launch writes: a `&mut ParamBuffer` or a `&mut DeviceArray`.
impl<T: ReadBuffer> LaunchBuffer for &mut T {
    fn address(&self) -> u64 {
        self.memory().address()
    }
    fn len(&self) -> usize {
        ReadBuffer::len(*self)
    }
    fn keep(&self) -> Option<Keep> {
        Some(self.memory().clone())
    }
    fn storage(&self) -> Storage {
        ReadBuffer::storage(*self)
    }
}

/// A buffer a read takes: a `&ParamBuffer` or a `&DeviceArray` ([`Shared`]).
impl<T: ReadBuffer> LaunchBuffer for &T {
    fn address(&self) -> u64 {
        self.memory().address()
    }
    fn len(&self) -> usize {
        ReadBuffer::len(*self)
    }
    fn keep(&self) -> Option<Keep> {
        Some(self.memory().clone())
    }
    fn storage(&self) -> Storage {
        ReadBuffer::storage(*self)
    }
}

impl LaunchBuffer for Input<'_> {
    fn address(&self) -> u64 {
        self.memory.address()
    }
    fn len(&self) -> usize {
        self.len
    }
    fn keep(&self) -> Option<Keep> {
        Some(self.memory.clone())
    }
    fn storage(&self) -> Storage {
        self.storage
    }
}

impl LaunchBuffer for (u64, usize) {
    fn address(&self) -> u64 {
        self.0
    }
    fn len(&self) -> usize {
        self.1
    }
    fn keep(&self) -> Option<Keep> {
        None
    }
}

/// A buffer family whose every role the launch checks can read.
pub(crate) trait LaunchKinds:
    BufferKinds<Param: LaunchBuffer, Input: LaunchBuffer, State: LaunchBuffer>
{
}

impl<K> LaunchKinds for K where
    K: BufferKinds<Param: LaunchBuffer, Input: LaunchBuffer, State: LaunchBuffer>
{
}

#[cfg(test)]
mod sixteen_bit_tests {
    use super::*;

    /// 16-bit elements two to a word, the even one in the low half (the device reads element
    /// `i` at byte `2i`), an odd count padded; and back, exactly.
    #[test]
    fn sixteen_bit_elements_pack_as_the_device_reads_them() {
        let bits = [0x3f80u16, 0xbf80, 0x0001, 0xffff, 0x7fc0];
        let packed = pack(&bits);
        assert_eq!(packed.len(), 3);
        assert_eq!(packed[0].to_bits(), 0xbf80_3f80);
        assert_eq!(packed[1].to_bits(), 0xffff_0001);
        assert_eq!(packed[2].to_bits(), 0x0000_7fc0);
        // The bytes in memory, little-endian: element i at byte 2i.
        let bytes: Vec<u8> = packed
            .iter()
            .flat_map(|w| w.to_bits().to_le_bytes())
            .collect();
        for (i, b) in bits.iter().enumerate() {
            assert_eq!(u16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]]), *b);
        }
        assert_eq!(unpack(&packed, bits.len()), bits);
        assert_eq!((words(5, Storage::Bf16), words(4, Storage::F16)), (3, 2));
        assert_eq!((words(5, Storage::F32), words(0, Storage::Bf16)), (5, 0));
    }
}
