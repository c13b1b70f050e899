//! The step record: the device-resident per-step state of one set of tensors, as every stepped
//! entry reads it, the advance writes it, the runtime builds it and the PTX audit finds the
//! clamp bound in it ([`BOUND_OFFSET`]). Layouts only: what the device does with a record is in
//! `adamant-device`'s `step` and `guard` modules.
//!
//! A CUDA graph replays its launches with the arguments they were recorded with, so a value that
//! changes from step to step cannot be a launch argument of a replayed step; it lives here.

/// `advance` raised this: the device `Q_ABS_REF` was NaN, infinite or negative (or gave a
/// bound above [`BOUND_CEILING`](crate::BOUND_CEILING)) at some step, and the clamp kept the
/// previous step's bound. Sticky: cleared only by the host.
pub const FLAG_BAD_Q_ABS_REF: u32 = 1 << 0;

/// [`StepState::bound_mode`]: the bound is the one the host validated and wrote (a fixed bound,
/// or 0.0 for a clamp disabled with a reason); the device's `step::advance` leaves it alone.
pub const BOUND_FIXED: u32 = 0;
/// [`StepState::bound_mode`]: every advance (the device's `step::advance`) sets `bound = bound_factor × max(Q_ABS_REF, 1)`
/// from the `f32` at [`StepState::q_abs_ref`].
pub const BOUND_FROM_Q_ABS_REF: u32 = 1;

/// The bound a [`BOUND_FROM_Q_ABS_REF`] record starts from, and keeps until the device
/// `Q_ABS_REF` first gives a valid one: `100 × max(Q_ABS_REF, 1)` at its smallest (the clamp's
/// tightest value under the ISV rule), so an invalid reference from the first step on leaves the
/// tightest clamp in force, never no clamp.
pub const INITIAL_Q_ABS_REF_EFF: f32 = 1.0;

/// Byte offset of [`StepState::bound`] in the record: the PTX audit proves that a stepped entry's
/// clamp uses the `f32` loaded from exactly this offset of its last parameter.
pub const BOUND_OFFSET: usize = core::mem::offset_of!(StepState, bound);

/// One set of tensors' per-step state, as the stepped entries read it (the first 16 bytes: `lr`,
/// the bias corrections and the bound) and the advance entry (`step_advance_kernel`) writes it. 64 bytes, 16-byte
/// aligned, so records packed in an array never share a 16-byte group.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepState {
    /// The learning rate of the next step; written by the host (a schedule), between steps.
    pub lr: f32,
    /// `1 − β1^t` for the current `t` (`step::bias_correction`).
    pub bias_correction1: f32,
    /// `1 − β2^t` for the current `t`.
    pub bias_correction2: f32,
    /// The clamp bound of the current step (`weight_clamp_max_abs`; 0.0 = disabled).
    pub bound: f32,
    /// β1 (read by the stepped entries and by the device's `step::advance`, so both use one value).
    pub beta1: f32,
    /// β2.
    pub beta2: f32,
    /// The step number `t` of the current step: 0 until the first advance.
    pub step: u32,
    /// [`BOUND_FIXED`] or [`BOUND_FROM_Q_ABS_REF`].
    pub bound_mode: u32,
    /// Device address of the ISV's `Q_ABS_REF` (one `f32`), read by every advance (the device's `step::advance`) of a
    /// [`BOUND_FROM_Q_ABS_REF`] record; 0 in [`BOUND_FIXED`] mode.
    pub q_abs_ref: u64,
    /// `bound = bound_factor × q_abs_ref_eff` (100 for the ISV rule).
    pub bound_factor: f32,
    /// `max(Q_ABS_REF, 1)` of the last valid reference: the NaN checker's thresholds read it.
    pub q_abs_ref_eff: f32,
    /// Sticky flags ([`FLAG_BAD_Q_ABS_REF`]).
    pub flags: u32,
    /// How many advances found an invalid `Q_ABS_REF`.
    pub bad_q_abs_ref_steps: u32,
    /// The bits of the last invalid `Q_ABS_REF` read (to report it as it was).
    pub last_bad_q_abs_ref_bits: u32,
    /// The step at which the last invalid `Q_ABS_REF` was read.
    pub last_bad_q_abs_ref_step: u32,
}

/// [`StepGuard::mode`]: skip the step if any gradient is NaN or infinite.
pub const GUARD_SKIP_NON_FINITE: u32 = 1 << 0;
/// [`StepGuard::mode`]: scale the gradients by the global-norm clip coefficient.
pub const GUARD_CLIP: u32 = 1 << 1;

/// [`StepGuard::mode`]: dynamic loss scaling (for fp16 training): the gradients the guard judges
/// are those of the loss multiplied by [`StepGuard::loss_scale`]. The guard divides them back
/// (the `#[grad]` multiplier is `clip / loss_scale`, the norm it reports is unscaled), skips the
/// step when any is NaN or infinite (an overflow) and halves the scale, and doubles it after
/// [`StepGuard::growth_interval`] clean steps in a row (PyTorch's `GradScaler` rule, with its
/// factors [`LOSS_SCALE_BACKOFF`] and [`LOSS_SCALE_GROWTH`]). Implies the skip of
/// [`GUARD_SKIP_NON_FINITE`].
pub const GUARD_LOSS_SCALE: u32 = 1 << 2;
/// The loss scale's factor after [`StepGuard::growth_interval`] clean steps.
pub const LOSS_SCALE_GROWTH: f32 = 2.0;
/// The loss scale's factor after an overflow.
pub const LOSS_SCALE_BACKOFF: f32 = 0.5;

/// [`StepState::flags`]: a step was skipped for a non-finite gradient (sticky).
pub const FLAG_SKIPPED_STEP: u32 = 1 << 1;
/// [`StepState::flags`]: a guarded record found no guard run for its step, and skipped it
/// (sticky).
pub const FLAG_UNGUARDED_STEP: u32 = 1 << 2;

/// The guard part of a step-state record: the host's settings and the last guard run's verdict.
/// 64 bytes.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepGuard {
    /// [`GUARD_SKIP_NON_FINITE`] | [`GUARD_CLIP`], or 0 for an unguarded record (whose entries
    /// and advance ignore everything below).
    pub mode: u32,
    /// The coefficient this step's `#[grad]` inputs are multiplied by (1 without clipping).
    pub clip_coef: f32,
    /// 1 if this step is skipped (a non-finite gradient under [`GUARD_SKIP_NON_FINITE`]).
    pub skip: u32,
    /// The step the last guard run was for: the record's `step` plus one when it ran, which is
    /// the record's `step` once the advance has taken it.
    pub epoch: u32,
    // The four words above are everything a stepped entry reads of the guard (the device's `guard::verdict`):
    // they share one 16-byte group, so the entry fetches them in one vector load.
    /// The clipping threshold (finite and `> 0` when [`GUARD_CLIP`] is set): set by the host.
    pub max_norm: f32,
    /// This step's global gradient norm (NaN or inf when a gradient is non-finite).
    pub norm: f32,
    /// How many steps were skipped (non-finite or unguarded).
    pub skipped_steps: u32,
    /// The step number the last skipped step would have had.
    pub last_skipped_step: u32,
    /// The first non-finite gradient of the last guarded step: its element index counting the
    /// guard's tensors one after another (the index in the tensor, for one tensor);
    /// [`NO_NON_FINITE`] if every gradient was finite.
    pub first_non_finite: u64,
    /// Under [`GUARD_LOSS_SCALE`]: the scale the next backward multiplies its loss by (the
    /// host sets the first; each guard run updates it; the user's backward reads it from the
    /// device, `StepStates::loss_scale_address`, so a replayed graph scales with the current
    /// value). Unused otherwise.
    pub loss_scale: f32,
    /// Under [`GUARD_LOSS_SCALE`]: clean steps in a row after which the scale doubles (`>= 1`).
    pub growth_interval: u32,
    /// Clean steps since the scale last changed.
    pub clean_steps: u32,
    /// How many times an overflow halved the scale.
    pub scale_backoffs: u32,
    /// Zero. The words the 16-byte alignment would otherwise leave as padding: named, so every
    /// byte of a record is a field some writer set (a padding byte is undefined, and a saved
    /// record carried whatever it held into its checkpoint, different in every process).
    pub reserved: [u32; 2],
}

/// [`StepGuard::first_non_finite`] of a step whose gradients were all finite.
pub const NO_NON_FINITE: u64 = u64::MAX;

/// How many 32-bit words a record holds for its kernel's own scalars ([`StepRecord::scalars`]):
/// the `#[hyper]` and `#[derived]` scalars of the kernel the record was made for, in declared
/// order. `#[optimizer_kernel]` refuses a kernel with more (a compile error).
pub const RECORD_SCALARS: usize = 16;

// No record type has padding: each one's size is the sum of its fields' sizes, so every byte
// of a record (as the device holds it and a checkpoint saves it) belongs to a field. A field
// added to one without updating its sum here fails to compile.
const _: () = {
    use core::mem::size_of;
    const W: usize = size_of::<u32>();
    assert!(size_of::<StepState>() == 14 * W + size_of::<u64>());
    assert!(size_of::<StepGuard>() == 12 * W + size_of::<u64>() + size_of::<[u32; 2]>());
    assert!(
        size_of::<StepRecord>()
            == size_of::<StepState>() + size_of::<StepGuard>() + RECORD_SCALARS * W
    );
};

/// Byte offset of [`StepRecord::scalars`] in a record.
pub const SCALARS_OFFSET: usize = core::mem::offset_of!(StepRecord, scalars);

/// The record a stepped entry's `step_state` points at: the [`StepState`] shared by every kernel
/// (the bound at [`BOUND_OFFSET`], the step number, the `#[step]` fields), then the words of the
/// kernel's own scalars. Every scalar a stepped entry uses comes from here, none from a launch
/// argument, so a replayed graph never replays a value frozen at capture: the host changes a
/// `#[hyper]` word between steps (a stream-ordered write), and the kernel's schedule, run on the
/// device after every advance, writes its `#[derived]` words from the new `t`. 192 bytes,
/// 16-byte aligned.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepRecord {
    /// The shared part: step number, bound, `#[step]` fields, flags.
    pub state: StepState,
    /// The step's own protection: skip on a non-finite gradient, global-norm clipping
    /// (the device's `guard` module).
    pub guard: StepGuard,
    /// The kernel's `#[hyper]` and `#[derived]` scalars, one word each (an `f32`'s bits or a
    /// `u32`), at the slot its descriptor gives ([`RecordScalar`](crate::RecordScalar)).
    pub scalars: [u32; RECORD_SCALARS],
}
