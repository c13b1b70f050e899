//! The 16-byte element group the generated loops load and store: with `align(16)` a load of an
//! `F4` is one `ld.global.v4.f32`; a plain `[f32; 4]` (align 4) would be four scalar loads.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct F4(pub [f32; 4]);

/// Elements per [`F4`].
pub const LANES: usize = 4;
