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
    /// Implemented by the runtime's buffer types only: a launch trusts what `memory` returns.
    pub trait Sealed {
        fn memory(&self) -> &std::sync::Arc<crate::memory::DeviceMemory<f32>>;
    }
}

/// A device buffer of `f32`s that a launch may read: a [`ParamBuffer`] or a [`DeviceArray`],
/// for an `#[input]` slot (a target network's soft update reads the online network's
/// parameters, say), a NaN-check binding or a `Q_ABS_REF` slot. Sealed.
pub trait ReadBuffer: sealed::Sealed {
    /// Number of `f32` elements.
    fn len(&self) -> usize {
        self.memory().len()
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
        Input {
            memory: self.memory(),
        }
    }
}

/// A shared borrow of a [`ParamBuffer`] or a [`DeviceArray`] for an `#[input]` slot, which the
/// kernel only reads: `g: grads.input()`. While it lives, the borrow checker keeps the buffer
/// from being any launch's written buffer.
#[derive(Clone, Copy)]
pub struct Input<'a> {
    memory: &'a Arc<DeviceMemory<f32>>,
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
                })
            }

            /// Number of `f32` elements.
            pub fn len(&self) -> usize {
                self.memory.len()
            }

            /// Whether the buffer has no elements.
            pub fn is_empty(&self) -> bool {
                self.memory.len() == 0
            }

            /// The device address of the first element (see [`ReadBuffer::device_ptr`]).
            pub fn device_ptr(&self) -> u64 {
                self.memory.address()
            }

            /// The buffer as an `#[input]` of a launch (see [`Input`]).
            pub fn input(&self) -> Input<'_> {
                Input {
                    memory: &self.memory,
                }
            }

            /// Overwrites the buffer with `data`, by cust's synchronous copy on the legacy
            /// default stream: `data` may be reused on return, and a later launch on the
            /// runtime's (blocking) stream runs after it.
            ///
            /// # Errors
            ///
            /// [`Error::UploadLength`] unless `data` has exactly [`Self::len`] elements (nothing
            /// is written); [`Error::Cuda`] if the copy fails.
            pub fn upload(&mut self, data: &[f32]) -> Result<()> {
                if data.len() != self.len() {
                    return Err(Error::UploadLength {
                        buffer: $what,
                        found: data.len(),
                        expected: self.len(),
                    });
                }
                self.memory.write(data, $what)
            }

            /// A copy of the buffer on the host, by cust's synchronous copy (after the work
            /// enqueued before it on the runtime's blocking stream).
            ///
            /// # Errors
            ///
            /// [`Error::Cuda`] if the copy fails (a fault of an earlier launch may surface here).
            pub fn download(&self) -> Result<Vec<f32>> {
                self.memory.read($what)
            }
        }

        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}({:?})", stringify!($ty), self.memory)
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
}
f32_buffer!(ParamBuffer, "a parameter buffer");

/// An `f32` buffer in device memory for any role but parameters: gradients (an `#[input]`),
/// moments (a `#[state]`), activations for the NaN check, the ISV vector that holds
/// `Q_ABS_REF`. Code of your own writes it through [`DeviceArray::as_device_ptr`] in launches
/// of its own.
pub struct DeviceArray {
    memory: Arc<DeviceMemory<f32>>,
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
        if crate::graph::is_capturing(stream)? {
            return Err(Error::Capture {
                operation: "DeviceScalar::set_async is a host write between steps; recorded into \
                            a graph it would write the same value at every replay (call it \
                            between replays)"
                    .into(),
            });
        }
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
        self.memory().len()
    }
    fn keep(&self) -> Option<Keep> {
        Some(self.memory().clone())
    }
}

/// A buffer a read takes: a `&ParamBuffer` or a `&DeviceArray` ([`Shared`]).
impl<T: ReadBuffer> LaunchBuffer for &T {
    fn address(&self) -> u64 {
        self.memory().address()
    }
    fn len(&self) -> usize {
        self.memory().len()
    }
    fn keep(&self) -> Option<Keep> {
        Some(self.memory().clone())
    }
}

impl LaunchBuffer for Input<'_> {
    fn address(&self) -> u64 {
        self.memory.address()
    }
    fn len(&self) -> usize {
        self.memory.len()
    }
    fn keep(&self) -> Option<Keep> {
        Some(self.memory.clone())
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
