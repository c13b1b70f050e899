//! One entry's clamp prover: the proof of one stored value, on the register lattice's facts.

use adamant_abi::{Rounding, Storage};

use super::ClampFailure;
use crate::audit::provenance::Provenance;
use crate::ptx::{Instruction, Operand};

/// One entry's clamp prover.
#[derive(Clone, Copy)]
pub(in crate::audit) struct ClampProver<'a> {
    pub(super) flow: &'a Provenance<'a>,
    pub(super) instructions: &'a [Instruction],
    /// A multi-tensor entry's `weight_clamp_scales` parameter.
    pub(super) scales: Option<usize>,
    /// How the parameter buffer stores its elements (the descriptor's): the contract is held
    /// on the stored bits of this type.
    pub(super) storage: Storage,
    /// How the stores round to `storage` (the descriptor's): a stochastic store's value also
    /// depends on a random word, which the proof takes as a free input (`word.rs`).
    pub(super) rounding: Rounding,
}

impl<'a> ClampProver<'a> {
    pub(in crate::audit) fn new(
        flow: &'a Provenance<'a>,
        instructions: &'a [Instruction],
        scales: Option<usize>,
        storage: Storage,
        rounding: Rounding,
    ) -> Self {
        ClampProver {
            flow,
            instructions,
            scales,
            storage,
            rounding,
        }
    }

    /// This prover for a store to a buffer of `storage`, rounded as `rounding` (the stored
    /// buffer's descriptor: a kernel with a companion buffer stores two kinds).
    pub(in crate::audit) fn storing(self, storage: Storage, rounding: Rounding) -> Self {
        ClampProver {
            storage,
            rounding,
            ..self
        }
    }

    /// Proves that the value in `value`, stored at `address` through a pointer of parameter
    /// `target` (a table, in a multi-tensor entry), is the clamp of one value with the bound
    /// (times its tensor's scale, in a multi-tensor entry), on every case of
    /// [`cases`](super::cases) (of [`scaled_cases`](super::scaled_cases)). Returns the number of
    /// cases evaluated and the register of the value clamped (`x`, if the slice has one).
    pub(in crate::audit) fn prove(
        &self,
        value: &'a Operand,
        address: Option<&'a Operand>,
        target: usize,
    ) -> Result<(usize, Option<&'a str>), ClampFailure> {
        let Operand::Register(value) = value else {
            return Err(ClampFailure::NoBound);
        };
        if !self.flow.depends_on_bound(value) {
            return Err(ClampFailure::NoBound);
        }
        let slice = self.slice(value)?;
        if let Some(scales) = self.scales {
            self.check_tensor(&slice, scales, address, target)?;
        }
        let (program, result) = self
            .compile(value, &slice)
            .map_err(|reason| ClampFailure::Unprovable { reason })?;
        // A stochastic store runs every case with each word of the table, also one whose value
        // reads no word (which then must still round as the word says: a store that never
        // rounds up is no stochastic rounding).
        let word_bits = match (self.rounding, slice.word) {
            (adamant_abi::Rounding::Stochastic, Some(_)) => Some(slice.word_bits),
            (adamant_abi::Rounding::Stochastic, None) => Some(32),
            (adamant_abi::Rounding::Nearest | adamant_abi::Rounding::TiesAway, _) => None,
        };
        self.evaluate(&program, result, word_bits)
            .map(|cases| (cases, slice.x))
    }
}
