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
