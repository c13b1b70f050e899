//! The one way to launch an `#[optimizer_kernel]` entry: [`Adamant::launch`] starts a
//! [`Launch`], the scalars choose the plain or the stepped entry ([`Launch::plain`],
//! [`Launch::stepped`]), and the buffers choose the single-buffer or the multi-tensor entry and
//! enqueue it ([`Launch::buffers`], [`Launch::set`], and over memory other code owns
//! [`Launch::raw_buffers`], [`Launch::raw_set`]). Every combination runs the same validation
//! (`launch_check`), the same argument assembly (`launch_check::assemble`, from the entry's
//! registered descriptor) and the same enqueue (`enqueue`), so a new axis (a dtype, a rule
//! table) is one change here, not one per combination.
use std::marker::PhantomData;

use adamant_device::abi::OptimizerEntry;
use cust::stream::Stream;

use crate::buffers::{LaunchKinds, Owned};
use crate::clamp_policy::ClampPolicy;
use crate::device::Adamant;
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::interop::{check_regions, check_set_regions, Raw};
use crate::launch::LaunchInfo;
use crate::launch_check::Uniforms;
use crate::multi::TensorSet;
use crate::prepared::Prepared;
use crate::records::Records;
use crate::step::StepStates;

/// A launch of `E` being put together: the stream, then the scalars (`S`: [`NoScalars`] until
/// [`Launch::plain`] or [`Launch::stepped`] gives them), then the buffers, which enqueue it.
/// Nothing is checked or enqueued before the buffers are given, and a launch without scalars
/// cannot be enqueued (it has no such method).
#[must_use = "a launch is enqueued by `buffers`, `set`, `raw_buffers` or `raw_set`"]
pub struct Launch<'a, E: OptimizerEntry, S> {
    rt: &'a Adamant,
    stream: &'a Stream,
    scalars: S,
    entry: PhantomData<fn() -> E>,
}

/// A [`Launch`] whose scalars are not given yet.
pub struct NoScalars;

/// A [`Launch`]'s scalars: a plain launch's values and clamp policy, or a stepped launch's
/// record.
pub struct WithScalars<'a, E: OptimizerEntry>(Uniforms<'a, E>);

impl Adamant {
    /// Starts a launch of the `#[optimizer_kernel]` entry `E` on `stream`.
    ///
    /// - [`Launch::plain`] gives the scalars as values (the kernel's generated `Scalars`) with
    ///   a clamp policy; [`Launch::stepped`] reads them, and the bound, on the device from a
    ///   step-state record, so a graph of the launch trains at every replay.
    /// - [`Launch::buffers`] launches the single-buffer entry over one set of buffers (the
    ///   kernel's generated `Buffers`); [`Launch::set`] the multi-tensor entry over many, one
    ///   launch for a whole model.
    ///
    /// Before anything is enqueued, every launch checks: the entry is the registered one, the
    /// clamp policy gives a valid bound (or the record exists, was advanced and was made for
    /// `E`), every scalar lies in its declared domain, every buffer of a tensor has the
    /// parameter buffer's length, and no buffer that the kernel writes overlaps another buffer
    /// of the launch.
    ///
    /// ```
    /// use adamant_kernels::optimizers::iqn_adam_kernel;
    /// use adamant_runtime::{
    ///     adam_scalars, AdamHyper, ClampPolicy, DeviceArray, Error, ParamBuffer, Records,
    /// };
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let rt = match adamant_runtime::Adamant::new() {
    /// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
    /// #     other => other?,
    /// # };
    /// // Buffers of the caller's, not a ParamGroup: the parameters are a ParamBuffer (only a
    /// // `#[param]` slot writes them), everything else DeviceArrays.
    /// let n = 10_000;
    /// let mut p = ParamBuffer::filled(n, 0.5)?;
    /// let g = DeviceArray::filled(n, 0.1)?;
    /// let mut m = DeviceArray::zeroed(n)?;
    /// let mut v = DeviceArray::zeroed(n)?;
    /// let mut short = DeviceArray::zeroed(n - 1)?;
    /// // What each launch read and wrote; one launch at a time through them.
    /// let records = Records::single::<iqn_adam_kernel::Entry>()?;
    ///
    /// let hyper = AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.01, 1)?;
    /// let scalars = adam_scalars!(iqn_adam_kernel, hyper, weight_decay: hyper.weight_decay)?;
    /// let policy = ClampPolicy::Fixed { bound: 1.0 };
    ///
    /// let buffers = iqn_adam_kernel::Buffers { p: &mut p, g: g.input(), m: &mut m, v: &mut v };
    /// let info = rt
    ///     .launch::<iqn_adam_kernel::Entry>(rt.stream())
    ///     .plain(&scalars, policy)
    ///     .buffers(&buffers, &records)?;
    /// assert_eq!((info.elements, info.bound), (n, 1.0));
    ///
    /// // A second moment one element short: refused, and nothing is enqueued.
    /// let buffers = iqn_adam_kernel::Buffers { p: &mut p, g: g.input(), m: &mut m, v: &mut short };
    /// let refused = rt
    ///     .launch::<iqn_adam_kernel::Entry>(rt.stream())
    ///     .plain(&scalars, policy)
    ///     .buffers(&buffers, &records);
    /// assert!(matches!(refused, Err(Error::LengthMismatch { buffer: "v", .. })));
    /// rt.synchronize()?;
    /// assert_eq!(records.read().sequence, 1); // the refused launch never ran
    /// # Ok(())
    /// # }
    /// ```
    pub fn launch<'a, E: OptimizerEntry>(&'a self, stream: &'a Stream) -> Launch<'a, E, NoScalars> {
        Launch {
            rt: self,
            stream,
            scalars: NoScalars,
            entry: PhantomData,
        }
    }
}

impl<'a, E: OptimizerEntry> Launch<'a, E, NoScalars> {
    /// The plain entry (`<kernel>`, `<kernel>_multi`): `scalars` (the kernel's generated
    /// `Scalars`) passed as launch arguments, and the bound from `policy`, passed last by the
    /// runtime itself. A graph replays these values as they are: a kernel with `#[step]` or
    /// `#[derived]` scalars is refused in a capture ([`Error::Capture`]); use
    /// [`Launch::stepped`] there.
    pub fn plain(
        self,
        scalars: &'a E::Scalars,
        policy: ClampPolicy,
    ) -> Launch<'a, E, WithScalars<'a, E>> {
        self.with(Uniforms::Plain { scalars, policy })
    }

    /// The stepped entry (`<kernel>_stepped`, `<kernel>_multi_stepped`): the bound and every
    /// scalar (the `#[step]` fields such as the learning rate and the bias corrections, the
    /// kernel's `#[hyper]` and `#[derived]` words) read on the device from record `index` of
    /// `states`, so a graph that records the launch after [`StepStates::advance`] trains at
    /// every replay, and a value the host sets between replays
    /// ([`StepStates::set_scalar`]) is the one the next replay uses. `scalars` holds the
    /// `#[uniform_ptr]`s (`E::StepScalars`). [`LaunchInfo::bound`] is NaN: the device reads
    /// the bound.
    ///
    /// Besides the checks of every launch: the record exists, an advance was enqueued (or
    /// recorded) before it, the record was made for `E`'s scalars
    /// ([`StepSpec::with_kernel`](crate::StepSpec::with_kernel)), and its lr and betas lie in
    /// the entry's domains.
    ///
    /// ```
    /// use adamant_kernels::optimizers::iqn_adam_kernel;
    /// use adamant_runtime::{
    ///     AdamHyper, DeviceArray, ParamBuffer, QAbsRef, Records, StepBound, StepSpec, StepStates,
    /// };
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let rt = match adamant_runtime::Adamant::new() {
    /// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
    /// #     other => other?,
    /// # };
    /// let n = 1024;
    /// let mut p = ParamBuffer::filled(n, 0.5)?;
    /// let (g, mut m, mut v) = (DeviceArray::filled(n, 1e-3)?, DeviceArray::zeroed(n)?, DeviceArray::zeroed(n)?);
    /// let records = Records::single::<iqn_adam_kernel::Entry>()?;
    /// // The record holds the kernel's own hyperparameters, beside the shared lr and betas.
    /// let spec = StepSpec::adam(&AdamHyper::pytorch_defaults(1)?, StepBound::FromQAbsRef)?
    ///     .with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper { eps: 1e-8, weight_decay: 0.0 })?;
    /// let states = StepStates::new(&[spec], QAbsRef::Owned { initial: 0.001 })?; // bound 100
    /// let scalars = iqn_adam_kernel::StepScalars {}; // no #[uniform_ptr]
    /// for _ in 0..3 {
    ///     states.advance(&rt, rt.stream())?; // t += 1 on the device
    ///     let b = iqn_adam_kernel::Buffers { p: &mut p, g: g.input(), m: &mut m, v: &mut v };
    ///     rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
    ///         .stepped(&scalars, &states, 0)
    ///         .buffers(&b, &records)?;
    /// }
    /// rt.synchronize()?;
    /// assert_eq!(states.read()?[0].step, 3);
    /// assert_eq!(records.read().sequence, 3); // three launches through the one records
    /// let host = p.download()?;
    /// assert!((host[0] - (0.5 - 3.0 * 1e-3)).abs() < 1e-5); // three Adam steps of ~lr each
    /// # Ok(())
    /// # }
    /// ```
    pub fn stepped(
        self,
        scalars: &'a E::StepScalars,
        states: &'a StepStates,
        index: usize,
    ) -> Launch<'a, E, WithScalars<'a, E>> {
        self.with(Uniforms::Stepped {
            scalars,
            states,
            index,
        })
    }

    fn with(self, uniforms: Uniforms<'a, E>) -> Launch<'a, E, WithScalars<'a, E>> {
        Launch {
            rt: self.rt,
            stream: self.stream,
            scalars: WithScalars(uniforms),
            entry: PhantomData,
        }
    }
}

impl<'a, E: OptimizerEntry> Launch<'a, E, WithScalars<'a, E>> {
    /// Enqueues the single-buffer entry over `buffers` (the kernel's generated `Buffers`
    /// struct, so a kernel whose buffers change breaks the call at compile time), reporting
    /// what it read and wrote in `records`. The launch is asynchronous; an empty parameter
    /// buffer still runs one block, which publishes an empty record.
    ///
    /// # Errors
    ///
    /// Raised before anything is enqueued: [`Error::UnregisteredKernel`] for an entry whose
    /// descriptor is not the registered one; for a plain launch [`Error::InvalidClamp`] or
    /// [`Error::DisabledWithoutReason`] for the policy; for a stepped one
    /// [`Error::StepIndex`], [`Error::NotAdvanced`], [`Error::RecordKernel`]; then
    /// [`Error::InvalidScalar`] (or, from a hand-written `OptimizerEntry`,
    /// [`Error::ScalarCount`] / [`Error::ScalarType`]) for a scalar, [`Error::LengthMismatch`],
    /// [`Error::Overlap`], [`Error::RecordsMismatch`]; [`Error::MissingKernel`] if the loaded
    /// module lacks the entry. [`Error::Cuda`] if the driver refuses the launch. An error that
    /// does not name the entry itself (the policy's, say) comes inside an [`Error::InKernel`]
    /// naming it.
    pub fn buffers(self, buffers: &E::Buffers<Owned<'_>>, records: &Records) -> Result<LaunchInfo> {
        self.single(buffers, records)
    }

    /// Checks and assembles the single-buffer launch over `buffers` once, for a loop that
    /// enqueues it many times ([`Prepared::enqueue`]): the checks of [`Launch::buffers`] run
    /// here, not at each enqueue, so an eager step costs the driver's launch and a capture
    /// query. The prepared launch holds `buffers`, `records` (and a stepped launch's step-state
    /// records) until it is dropped.
    ///
    /// A plain launch of a kernel with `#[step]` or `#[derived]` scalars is refused
    /// ([`Error::FrozenScalar`]): every enqueue would pass the values it was prepared with.
    /// Prepare the stepped launch, after a first [`StepStates::advance`], and advance before
    /// each enqueue.
    ///
    /// ```
    /// use adamant_kernels::optimizers::iqn_adam_kernel;
    /// use adamant_runtime::{
    ///     AdamHyper, DeviceArray, ParamBuffer, QAbsRef, Records, StepBound, StepSpec, StepStates,
    /// };
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let rt = match adamant_runtime::Adamant::new() {
    /// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
    /// #     other => other?,
    /// # };
    /// let n = 1024;
    /// let mut p = ParamBuffer::filled(n, 0.5)?;
    /// let (g, mut m, mut v) = (DeviceArray::filled(n, 1e-3)?, DeviceArray::zeroed(n)?, DeviceArray::zeroed(n)?);
    /// let records = Records::single::<iqn_adam_kernel::Entry>()?;
    /// let spec = StepSpec::adam(&AdamHyper::pytorch_defaults(1)?, StepBound::FromQAbsRef)?
    ///     .with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper { eps: 1e-8, weight_decay: 0.0 })?;
    /// let states = StepStates::new(&[spec], QAbsRef::Owned { initial: 0.001 })?;
    /// let scalars = iqn_adam_kernel::StepScalars {};
    /// states.advance(&rt, rt.stream())?; // a stepped launch is checked after an advance
    /// let b = iqn_adam_kernel::Buffers { p: &mut p, g: g.input(), m: &mut m, v: &mut v };
    /// let mut step = rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
    ///     .stepped(&scalars, &states, 0)
    ///     .prepare(b, &records)?;
    /// step.enqueue()?;
    /// for _ in 1..3 {
    ///     states.advance(&rt, rt.stream())?;
    ///     step.enqueue()?;
    /// }
    /// drop(step); // gives the buffers back
    /// rt.synchronize()?;
    /// assert_eq!(records.read().sequence, 3);
    /// let host = p.download()?;
    /// assert!((host[0] - (0.5 - 3.0 * 1e-3)).abs() < 1e-5); // three Adam steps of ~lr each
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// Those of [`Launch::buffers`] before anything is enqueued, and [`Error::FrozenScalar`].
    pub fn prepare(
        self,
        buffers: E::Buffers<Owned<'a>>,
        records: &'a Records,
    ) -> Result<Prepared<'a, E>> {
        let kernel = self.scalars.0.descriptor(false).name;
        Prepared::new(self.rt, self.stream, self.scalars.0, buffers, records)
            .map_err(|e| e.in_kernel(kernel))
    }

    /// Enqueues the multi-tensor entry (`<kernel>_multi`, `<kernel>_multi_stepped`) over
    /// `tensors`, one launch for a whole model's separately allocated tensors, with the same
    /// per-element code and clamp as the single-buffer entry. `set` keeps the device tables;
    /// they are rebuilt (synchronously) only when `tensors` differs from the last call, which
    /// is refused while the stream is being captured into a graph: sync the set before
    /// capturing. The launch's records are the set's ([`TensorSet::records`]). An empty set
    /// enqueues nothing.
    ///
    /// ```
    /// use adamant_kernels::optimizers::attn_adam_kernel;
    /// use adamant_runtime::{adam_scalars, AdamHyper, ClampPolicy, DeviceArray, ParamBuffer, TensorSet};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let rt = match adamant_runtime::Adamant::new() {
    /// #     Err(adamant_runtime::Error::NoDevice { .. }) => return Ok(()), // no GPU here
    /// #     other => other?,
    /// # };
    /// // An attention block's tensors, each allocated on its own: p, then [g, m, v] per tensor.
    /// let mut tensors = Vec::new();
    /// for len in [256 * 256, 256, 1024 * 256, 1024] {
    ///     let state = |x: f32| DeviceArray::from_host(&vec![x; len]);
    ///     let p = ParamBuffer::from_host(&vec![0.02; len])?;
    ///     tensors.push((p, [state(1e-3)?, state(0.0)?, state(0.0)?]));
    /// }
    /// let policy = ClampPolicy::from_isv(1.0);
    /// let mut set = TensorSet::new(); // kept across steps
    /// for step in 1..=3 {
    ///     let hyper = AdamHyper::new(3e-4, 0.9, 0.999, 1e-8, 0.01, step)?;
    ///     let scalars = adam_scalars!(attn_adam_kernel, hyper, weight_decay: hyper.weight_decay)?;
    ///     let buffers: Vec<_> = tensors
    ///         .iter_mut()
    ///         .map(|(p, [g, m, v])| attn_adam_kernel::Buffers { p, g: g.input(), m, v })
    ///         .collect();
    ///     let info = rt
    ///         .launch::<attn_adam_kernel::Entry>(rt.stream())
    ///         .plain(&scalars, policy)
    ///         .set(&mut set, &buffers)?;
    ///     assert_eq!(info.kernel, "attn_adam_kernel_multi");
    /// }
    /// assert_eq!(set.elements(), 256 * 256 + 256 + 1024 * 256 + 1024);
    /// assert_eq!(set.rebuilds(), 1); // the same tensors every step: tables built once
    /// rt.synchronize()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Launch::buffers`] (a tensor's length error inside an [`Error::InTensor`] naming
    /// it) and as [`TensorSet::sync`]; [`Error::Capture`] if the set changed while the stream
    /// is being captured.
    pub fn set(self, set: &mut TensorSet, tensors: &[E::Buffers<Owned<'_>>]) -> Result<LaunchInfo> {
        self.multi(set, tensors)
    }

    /// [`Launch::buffers`] over memory other code owns ([`DeviceRegion`](crate::DeviceRegion)s):
    /// the same checks, and first each region must lie inside one device allocation the driver
    /// knows. The stream may be a [`ForeignStream`](crate::ForeignStream).
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
    /// let launch = || rt.launch::<iqn_adam_kernel::Entry>(rt.stream()).plain(&scalars, policy);
    /// // SAFETY: the four buffers outlive the launch (synchronised below) and nothing else
    /// // touches them meanwhile.
    /// unsafe { launch().raw_buffers(&buffers, &records)? };
    /// rt.synchronize()?;
    /// assert_eq!(records.read().sequence, 1);
    ///
    /// // One element past the end of its allocation: refused by the driver's tables.
    /// let past = iqn_adam_kernel::Buffers {
    ///     p: DeviceRegion::new(owned[0].as_device_ptr().as_raw() + 4, n)?, ..buffers
    /// };
    /// let refused = unsafe { launch().raw_buffers(&past, &records) };
    /// assert!(matches!(refused, Err(Error::ForeignBuffer { buffer: "p", .. })));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Safety
    ///
    /// Every region is device memory of the runtime's context that stays allocated until the
    /// launch has run on the stream (for a recorded graph, until its last replay: a graph keeps
    /// the runtime's own memory alive, never a region), and no other work reads or writes the
    /// regions the entry writes while it runs (the checks see addresses, not other code's work).
    ///
    /// # Errors
    ///
    /// Those of [`Launch::buffers`], and [`Error::ForeignBuffer`] for a region outside the
    /// driver's device allocations. Nothing is enqueued on error.
    pub unsafe fn raw_buffers(
        self,
        buffers: &E::Buffers<Raw>,
        records: &Records,
    ) -> Result<LaunchInfo> {
        check_regions::<E>(self.scalars.0.descriptor(false).name, buffers)?;
        self.single(buffers, records)
    }

    /// [`Launch::set`] over memory other code owns: every region of every tensor is checked
    /// against the driver's allocations (an error inside an [`Error::InTensor`] naming the
    /// tensor, in a set of more than one), then the checks of [`Launch::set`] run. `set` keeps
    /// the device tables as for the safe launch.
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
    ///     rt.launch::<attn_adam_kernel::Entry>(rt.stream())
    ///         .plain(&scalars, ClampPolicy::Fixed { bound: 1.0 })
    ///         .raw_set(&mut set, &tensors)?
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
    /// As [`Launch::raw_buffers`], for every region of every tensor.
    ///
    /// # Errors
    ///
    /// Those of [`Launch::set`], and [`Error::ForeignBuffer`] (inside an [`Error::InTensor`]
    /// in a set of more than one). Nothing is enqueued on error.
    pub unsafe fn raw_set(
        self,
        set: &mut TensorSet,
        tensors: &[E::Buffers<Raw>],
    ) -> Result<LaunchInfo> {
        check_set_regions::<E>(self.scalars.0.descriptor(true).name, tensors)?;
        self.multi(set, tensors)
    }

    /// The single-buffer path (`Adamant::launch_single_unnamed`), every error naming the entry
    /// (`Error::in_kernel`: inside an [`Error::InKernel`] unless it names it already), so a clamp
    /// policy's, a step-state index's, a capture's or the driver's error says which kernel's
    /// launch it stopped.
    fn single<K: LaunchKinds>(
        self,
        buffers: &E::Buffers<K>,
        records: &Records,
    ) -> Result<LaunchInfo> {
        let kernel = self.scalars.0.descriptor(false).name;
        self.rt
            .launch_single_unnamed::<E, K>(self.stream, buffers, self.scalars.0, records)
            .map_err(|e| e.in_kernel(kernel))
    }

    /// The multi-tensor path (`Adamant::launch_set_unnamed`), its errors named as
    /// [`Launch::single`]'s.
    fn multi<K: LaunchKinds>(
        self,
        set: &mut TensorSet,
        tensors: &[E::Buffers<K>],
    ) -> Result<LaunchInfo> {
        let kernel = self.scalars.0.descriptor(true).name;
        self.rt
            .launch_set_unnamed::<E, K>(self.stream, set, tensors, self.scalars.0)
            .map_err(|e| e.in_kernel(kernel))
    }
}
