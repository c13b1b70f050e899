//! One entry's clamp prover: the proof of one stored value, on the register lattice's facts.

use super::contract::{cases, contract, scaled_cases, tensor_contract};
use super::program::Src;
use super::{ClampFailure, Unprovable};
use crate::audit::eval;
use crate::audit::located::At;
use crate::audit::provenance::Provenance;
use crate::ptx::{Instruction, Operand};

/// One entry's clamp prover.
pub(in crate::audit) struct ClampProver<'a> {
    pub(super) flow: &'a Provenance<'a>,
    pub(super) instructions: &'a [Instruction],
    /// A multi-tensor entry's `weight_clamp_scales` parameter.
    pub(super) scales: Option<usize>,
}

impl<'a> ClampProver<'a> {
    pub(in crate::audit) fn new(
        flow: &'a Provenance<'a>,
        instructions: &'a [Instruction],
        scales: Option<usize>,
    ) -> Self {
        ClampProver {
            flow,
            instructions,
            scales,
        }
    }

    /// Proves that the value in `value`, stored at `address` through a pointer of parameter
    /// `target` (a table, in a multi-tensor entry), is the clamp of one value with the
    /// bound (times its tensor's scale, in a multi-tensor entry), on every case of [`cases`]
    /// (of [`scaled_cases`]). Returns the number of cases evaluated.
    pub(in crate::audit) fn prove(
        &self,
        value: &'a Operand,
        address: Option<&'a Operand>,
        target: usize,
    ) -> Result<usize, ClampFailure> {
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
        let one = 1f32.to_bits();
        let mut cases: Vec<(u32, u32, u32)> = if self.scales.is_some() {
            static SCALED: std::sync::OnceLock<Vec<(u32, u32, u32)>> = std::sync::OnceLock::new();
            SCALED.get_or_init(scaled_cases).clone()
        } else {
            static CASES: std::sync::OnceLock<Vec<(u32, u32)>> = std::sync::OnceLock::new();
            let pairs = CASES.get_or_init(cases);
            pairs.iter().map(|&(x, b)| (x, b, one)).collect()
        };
        for (x, b) in self.constant_cases(&program) {
            cases.push((x, b, one));
            if self.scales.is_some() {
                cases.push((x, one, b));
            }
        }
        let mut slots = vec![0u32; program.len()];
        for &(x, bound, scale) in &cases {
            let value_of = |a: Src, slots: &[u32]| match a {
                Src::X => x,
                Src::Bound => bound,
                Src::Scale => scale,
                Src::Imm(v) => v,
                Src::Slot(j) => slots[j],
            };
            for (k, step) in program.iter().enumerate() {
                let args: Vec<u32> = step.args.iter().map(|a| value_of(*a, &slots)).collect();
                let inst = &self.instructions[step.inst];
                slots[k] = eval::apply(inst, &args).map_err(|message| {
                    let at = At::of(inst);
                    let reason = Unprovable::Evaluation { at, message };
                    ClampFailure::Unprovable { reason }
                })?;
            }
            let got = value_of(result, &slots);
            let (b, s) = (f32::from_bits(bound), f32::from_bits(scale));
            let expected = match self.scales {
                Some(_) => contract(f32::from_bits(x), tensor_contract(b, s)),
                None => contract(f32::from_bits(x), b),
            }
            .to_bits();
            if got != expected {
                return Err(ClampFailure::Wrong {
                    x,
                    bound,
                    scale: self.scales.map(|_| scale),
                    got,
                    expected,
                });
            }
        }
        Ok(cases.len())
    }
}
