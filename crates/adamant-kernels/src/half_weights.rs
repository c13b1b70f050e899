//! AdamW on 16-bit weights (issue 26): the parameters and the gradients stored in bf16 or f16,
//! the moments in f32. The update computes in f32; `#[param(bf16)]` makes the macro store the
//! new weight clamped, rounded to nearest even and held within the bound in bf16 itself, so
//! `|stored| <= bound` holds of the stored bits (the PTX audit proves it), also where the bound
//! lies between two bf16 values and, in f16, past 65,504 (where rounding to nearest would store
//! infinity).
//!
//! 12 bytes per element read and 10 written (a 2-byte weight read and written, a 2-byte
//! gradient, two 4-byte moments read and written): 22 B, against 28 for the f32 kernels.
use adamant_device::adam::{adam_step, decoupled_decay};
use adamant_device::optimizer_kernel;
use adamant_device::scalar_groups::{Adam, BiasCorrections, StochasticRounding, WeightDecay};

/// AdamW (decoupled decay `p *= 1 - lr·wd` before the step) on bf16 weights and gradients.
#[optimizer_kernel]
pub fn adamw_bf16(
    #[param(bf16)] p: f32,
    #[grad(bf16)] g: f32,
    #[state] m: &mut f32,
    #[state] v: &mut f32,
    #[group] adam: Adam,
    #[group] decay: WeightDecay,
    #[group] bc: BiasCorrections,
) -> f32 {
    adam_step(
        decoupled_decay(p, adam.lr, decay.weight_decay),
        g,
        m,
        v,
        adam.with(bc),
    )
}

/// AdamW on f16 weights and gradients: an update past 65,504 is clamped like any other value and
/// never stored as infinity while the clamp is on (the hold takes a rounding to infinity back to
/// 65,504).
#[optimizer_kernel]
pub fn adamw_f16(
    #[param(f16)] p: f32,
    #[grad(f16)] g: f32,
    #[state] m: &mut f32,
    #[state] v: &mut f32,
    #[group] adam: Adam,
    #[group] decay: WeightDecay,
    #[group] bc: BiasCorrections,
) -> f32 {
    adam_step(
        decoupled_decay(p, adam.lr, decay.weight_decay),
        g,
        m,
        v,
        adam.with(bc),
    )
}

/// AdamW on bf16 weights and gradients, the weights rounded stochastically (issue 26's 22 B
/// path with stochastic rounding): a small update survives in expectation instead of being
/// rounded away every step. Each element's random word is a hash of the record's
/// `rounding_seed`, the step number, the tensor and the element
/// (`adamant_device::storage::stochastic_word`), so an eager step and its replay round alike and
/// a resumed run as the uninterrupted one. The clamp holds of the stored bits whatever the word:
/// a rounding past the bound is taken back to the largest bf16 value within it.
#[optimizer_kernel]
pub fn adamw_bf16_sr(
    #[param(bf16, stochastic)] p: f32,
    #[grad(bf16)] g: f32,
    #[state] m: &mut f32,
    #[state] v: &mut f32,
    #[group] adam: Adam,
    #[group] decay: WeightDecay,
    #[group] bc: BiasCorrections,
    #[group] _rounding: StochasticRounding,
) -> f32 {
    adam_step(
        decoupled_decay(p, adam.lr, decay.weight_decay),
        g,
        m,
        v,
        adam.with(bc),
    )
}

/// AdamW with bf16 weights, gradients and moments, all three stored stochastically (issue 26's
/// 14 B path: 2 + 2 bytes of weight, 2 of gradient, 4 + 4 of moments, read and written): half
/// the f32 kernels' traffic. Rounded to nearest, bf16 moments would lose every update smaller
/// than half their step (late in training, most of `v`'s); stochastically each survives in
/// expectation. Each buffer of an element draws its own word (`storage::stochastic_word`).
#[optimizer_kernel]
pub fn adamw_bf16_sr_moments(
    #[param(bf16, stochastic)] p: f32,
    #[grad(bf16)] g: f32,
    #[state(bf16, stochastic)] m: &mut f32,
    #[state(bf16, stochastic)] v: &mut f32,
    #[group] adam: Adam,
    #[group] decay: WeightDecay,
    #[group] bc: BiasCorrections,
    #[group] _rounding: StochasticRounding,
) -> f32 {
    adam_step(
        decoupled_decay(p, adam.lr, decay.weight_decay),
        g,
        m,
        v,
        adam.with(bc),
    )
}

/// AdamW on bf16 weights with an f32 master (issue 26's 28 B path: 4 + 4 bytes of master, 2 of
/// bf16 copy written, 2 of bf16 gradient, 16 of f32 moments). The update reads and writes the
/// master (`p_master`, a buffer the macro adds) and writes the bf16 copy the model reads in the
/// same launch, rounded to nearest and held within the bound; the master is clamped like an
/// f32 parameter. Both stores are proven (the PTX audit), each on its own stored bits.
#[optimizer_kernel]
pub fn adamw_bf16_master(
    #[param(bf16, master)] p: f32,
    #[grad(bf16)] g: f32,
    #[state] m: &mut f32,
    #[state] v: &mut f32,
    #[group] adam: Adam,
    #[group] decay: WeightDecay,
    #[group] bc: BiasCorrections,
) -> f32 {
    adam_step(
        decoupled_decay(p, adam.lr, decay.weight_decay),
        g,
        m,
        v,
        adam.with(bc),
    )
}

/// AdamW on bf16 weights made exact by a 16-bit remainder (issue 26's 26 B path: 2 + 2 bytes
/// of weight, 2 + 2 of remainder, 2 of gradient, 16 of f32 moments). The update reads the exact
/// f32 that the weight and its remainder (`p_remainder`, a buffer the macro adds) hold, and
/// stores the clamped new value split back into the two (`storage::split_store`): the weight
/// is the value rounded to nearest, ties away, within the bound, so the model reads bf16 weights
/// no further from the master than half a step.
#[optimizer_kernel]
pub fn adamw_bf16_remainder(
    #[param(bf16, remainder)] p: f32,
    #[grad(bf16)] g: f32,
    #[state] m: &mut f32,
    #[state] v: &mut f32,
    #[group] adam: Adam,
    #[group] decay: WeightDecay,
    #[group] bc: BiasCorrections,
) -> f32 {
    adam_step(
        decoupled_decay(p, adam.lr, decay.weight_decay),
        g,
        m,
        v,
        adam.with(bc),
    )
}
