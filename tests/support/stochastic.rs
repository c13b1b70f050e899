//! Stochastic rounding written again from its definition (`adamant_abi::Rounding::Stochastic`),
//! apart from the device's source (`adamant_device::storage`): the tests hold the kernels' words
//! and stores to these.
use half::bf16;

/// The counter hash: the key is MurmurHash3's 64-bit finalizer of `seed·2^32 + step` (xor the
/// golden-ratio constant), then of that xor the tensor times `0xc2b2ae3d27d4eb4f`. Elements go
/// in pairs (`element / 2`); a pair's words, one per stochastic buffer, form a chain of
/// `lowbias32`: the first over the pair's low half xor the key's low half xor the pair's high
/// half times `0x9e3779b9`, each next over the one before xor the key's high half. The draw of
/// stochastic buffer `ordinal` (its place among the kernel's stochastically stored buffers) is
/// half `element mod 2` (low, then high) of word `ordinal`. Each mixer is written as the table
/// of its steps.
pub fn reference_word(seed: u32, step: u32, tensor: u32, ordinal: u32, element: u64) -> u32 {
    fn finalize64(mut k: u64) -> u64 {
        for multiplier in [0xff51afd7ed558ccdu64, 0xc4ceb9fe1a85ec53] {
            k = (k ^ (k >> 33)).wrapping_mul(multiplier);
        }
        k ^ (k >> 33)
    }
    fn lowbias32(mut x: u32) -> u32 {
        for (shift, multiplier) in [(16, 0x7feb352du32), (15, 0x846ca68b)] {
            x = (x ^ (x >> shift)).wrapping_mul(multiplier);
        }
        x ^ (x >> 16)
    }
    let counter = u64::from(seed) * (1u64 << 32) + u64::from(step);
    let key = finalize64(
        finalize64(counter ^ 0x9e3779b97f4a7c15)
            ^ u64::from(tensor).wrapping_mul(0xc2b2ae3d27d4eb4f),
    );
    let (key_low, key_high) = ((key & 0xffff_ffff) as u32, (key >> 32) as u32);
    let pair = element / 2;
    let (p_low, p_high) = ((pair & 0xffff_ffff) as u32, (pair >> 32) as u32);
    let first = lowbias32(p_low ^ key_low ^ p_high.wrapping_mul(0x9e3779b9));
    let words: Vec<u32> = std::iter::successors(Some(first), |w| Some(lowbias32(w ^ key_high)))
        .take(ordinal as usize + 1)
        .collect();
    let word = words[ordinal as usize];
    let halves = [word & 0xffff, word >> 16];
    halves[(element % 2) as usize]
}

/// The bf16 store of `x` (already clamped) with word `w`: up in magnitude when the 16 dropped
/// bits plus the word's low 16 reach 2^16, then, past `bound` (when it is on), the neighbour
/// toward zero.
pub fn reference_store(x: f32, w: u32, bound: f32) -> u16 {
    let bits = x.to_bits();
    let (sign, magnitude) = ((bits >> 16) as u16 & 0x8000, bits & 0x7fff_ffff);
    let up = (magnitude & 0xffff) + (w & 0xffff) >= 0x1_0000;
    let rounded = sign | ((magnitude >> 16) + up as u32) as u16;
    if bound > 0.0 && bf16::from_bits(rounded).to_f32().abs() > bound {
        rounded - 1
    } else {
        rounded
    }
}
