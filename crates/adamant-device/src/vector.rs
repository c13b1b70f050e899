//! The 16-byte element group the generated loops load and store: with `align(16)` a load of an
//! `F4` is one `ld.global.v4.f32`; a plain `[f32; 4]` (align 4) would be four scalar loads.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct F4(pub [f32; 4]);

/// Elements per [`F4`].
pub const LANES: usize = 4;

/// A group of four 16-bit elements (bf16 or f16 bits): with `align(8)` one `ld.global.v4.u16`
/// or `st.global.v4.u16`.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct H4(pub [u16; 4]);

/// A group of eight 16-bit elements (bf16 or f16 bits): with `align(16)` one
/// `ld.global.v4.u32`, as many bytes per load as an [`F4`] (a pure stream of 16-bit values
/// read four at a time moves half the bytes per request).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct H8(pub [u16; 8]);

/// A group of four 16-bit elements loaded as two 32-bit words (`align(8)`: one
/// `ld.global.v2.u32`), lanes 0 and 1 in the first word (low half, high half), 2 and 3 in the
/// second. Widened to f32 from the words, a bf16 lane costs one instruction (the even lane is
/// its word shifted up, the odd lane its word with the low half cleared) where a lane taken out
/// as 16 bits first costs two.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct W2(pub [u32; 2]);

impl W2 {
    /// The four lanes as bf16 values widened to f32 (exact, NaN included).
    #[inline(always)]
    pub fn bf16_lanes(self) -> F4 {
        let [a, b] = self.0;
        F4([
            f32::from_bits(a << 16),
            f32::from_bits(a & 0xFFFF_0000),
            f32::from_bits(b << 16),
            f32::from_bits(b & 0xFFFF_0000),
        ])
    }

    /// The four lanes' bits.
    #[inline(always)]
    pub fn lanes(self) -> [u16; 4] {
        let [a, b] = self.0;
        [a as u16, (a >> 16) as u16, b as u16, (b >> 16) as u16]
    }
}
