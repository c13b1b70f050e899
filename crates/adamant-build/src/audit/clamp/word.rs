//! A stochastic store's random word, as the proof takes it: a free input. Whatever computed it
//! (a hash of the seed, the step, the tensor and the element, in adamant's kernels), the stored
//! value must satisfy the contract for every value the word's register can hold, so the proof
//! does not rest on the hash. It runs every case with each word of a table: the extremes of the
//! rounding's 16-bit draw (0, 1, the midpoint and its neighbour, the largest), and values with
//! high bits set, kept to the word's width.
//!
//! The width is what the register's definition allows at most, from its known zero high bits:
//! a compiler that has folded the draw's mask into the hash (`(y & 0xffff) ^ (y >> 16)`) leaves a
//! register below `2^16`, and running it with a wider value would test a program no input can
//! reach. Only masks, right shifts, 16-bit sources and the bitwise operations of values so
//! bounded narrow it; anything else is taken as all 32 bits.
//!
//! A program could special-case one word value (a compare with a constant): every integer
//! constant of the program, and its neighbours, is also run as the word, with a set of anchor
//! pairs ([`word_anchors`]), as the contract's table adds cases around every constant for `x`.
use super::ClampProver;
use crate::audit::eval;
use crate::audit::opcodes::sources;
use crate::ptx::Operand;

/// The words every case of a stochastic store is run with (those that fit the register).
const WORDS: [u32; 12] = [
    0,
    1,
    0x7fff,
    0x8000,
    0xfffe,
    0xffff,
    0x1_0000,
    0x2468_ace1,
    0x8000_0000,
    0xdead_7fff,
    0xffff_0000,
    0xffff_ffff,
];

/// The words of [`WORDS`] that a register of `bits` significant bits can hold.
pub(super) fn words(bits: u32) -> Vec<u32> {
    WORDS
        .iter()
        .copied()
        .filter(|&w| bits >= 32 || w < 1u32 << bits)
        .collect()
}

/// The `(x, bound)` pairs (bits) run with every constant of a stochastic store's program as its
/// word: values between two bf16 neighbours and at them, within and past bounds that bf16 holds
/// and does not, both signs, and the clamp off.
pub(super) fn word_anchors() -> impl Iterator<Item = (u32, u32)> {
    let xs = [
        1.0f32,
        1.0 + 2f32.powi(-8),
        0.08,
        0.0799,
        0.1,
        3.0e-3,
        0.0,
        1.0e30,
    ];
    let bounds = [0.08f32, 1.0, 100.0, 0.0];
    xs.into_iter().flat_map(move |x| {
        bounds
            .into_iter()
            .flat_map(move |b| [(x.to_bits(), b.to_bits()), ((-x).to_bits(), b.to_bits())])
    })
}

impl<'a> ClampProver<'a> {
    /// How many low bits of `reg` can be set, at most (32 when its definition does not say).
    pub(super) fn word_bits(&self, reg: &'a str) -> u32 {
        self.bits_of(reg, 0)
    }

    fn bits_of(&self, reg: &'a str, depth: usize) -> u32 {
        let Ok(i) = self.flow.single_def(reg) else {
            return 32;
        };
        let inst = &self.instructions[i];
        if inst.guard.is_some() {
            return 32;
        }
        if inst.opcode.starts_with("cvt.u32.u16") {
            return 16;
        }
        if depth > 16 || !inst.opcode.ends_with("32") {
            return 32;
        }
        let operand = |o: &'a Operand| match o {
            Operand::Register(r) => self.bits_of(r, depth + 1),
            Operand::Immediate(text) => {
                eval::immediate(text, false).map_or(32, |v| 32 - v.leading_zeros())
            }
            _ => 32,
        };
        let srcs = sources(inst);
        match (inst.op(), srcs) {
            ("and", [a, b]) => operand(a).min(operand(b)),
            ("or" | "xor", [a, b]) => operand(a).max(operand(b)),
            ("shr", [a, Operand::Immediate(k)]) if inst.has_modifier("u32") => {
                let k = eval::immediate(k, false).unwrap_or(0).min(32);
                operand(a).saturating_sub(k)
            }
            ("mov", [a]) => operand(a),
            _ => 32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_fit_the_width() {
        assert_eq!(words(16), vec![0, 1, 0x7fff, 0x8000, 0xfffe, 0xffff]);
        assert_eq!(words(32).len(), WORDS.len());
        assert_eq!(words(0), vec![0]);
    }
}
