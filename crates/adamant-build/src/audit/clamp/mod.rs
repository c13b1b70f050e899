//! The clamp's semantics, proven from the PTX: for a value stored to a parameter buffer, the
//! audit extracts the instructions between the bound and the stored register (`slice.rs`), finds
//! the one value `x` they clamp, compiles them (`program.rs`) and runs them (`evaluate.rs`) on a
//! table of `(x, bound)` pairs (`contract.rs`) against the contract:
//!
//! `stored = bound > 0 && |x| > bound ? copysign(bound, x) : x`, bit for bit,
//!
//! so NaN stays NaN (same bits), ±inf becomes ±bound, `|x| == bound` is unchanged, and a bound
//! that is 0, negative or NaN leaves `x` unchanged. The table has NaNs, infinities, signed zeros,
//! subnormals, the largest finite values and `bound` ± 1 ulp. Everything else is a violation:
//! a stored value that does not depend on the bound, one that depends on anything besides `x`
//! and the bound, a register with several definitions or a guarded definition on the way, an
//! instruction the interpreter does not know.
//!
//! The bound is one of three loads, all through the entry's last parameter ([`BoundSource`]):
//! - plain entries: the `ld.param` of `weight_clamp_max_abs`;
//! - stepped entries: the 32-bit element at byte [`BOUND_OFFSET`] of the record the `step_state`
//!   pointer points at, loaded through a pointer computed from that parameter by `cvta`, `mov`
//!   and the addition of constants only (a vector load counts for the element at that offset);
//! - fused entries: the same element of a record whose pointer is loaded from the `step_states`
//!   table, at the index the stored parameter pointer was loaded at (`tensor.rs`).
//!
//! Any other load, an offset that is not a constant, or a pointer from anywhere else is not the
//! bound, so a value clamped with it is not proven.
//!
//! A parameter buffer stored in bf16 (the descriptor's `Storage`) holds the contract's value
//! rounded to nearest even and held within the bound in bf16 (`stored.rs`), checked on the
//! stored 16-bit pattern, with cases around each bound's bf16 neighbours added; every store to
//! it must be 16 bits wide per element (a wider one would write a neighbour too).
//!
//! A multi-tensor entry clamps tensor `t` with `tensor_bound(bound, scale)`, `scale` being the
//! `f32` at index `t` of its `weight_clamp_scales` table: the contract is
//! `stored = contract(x, tensor_contract(bound, scale))`, run on triples `(x, bound, scale)`. Each
//! scale the stored value depends on must be a 32-bit load from that table at the index its
//! parameter-buffer pointer was loaded at (`tensor_index.rs`): a scale of another tensor, or a
//! value clamped with the launch's bound alone, is not proven.
mod chain;
mod contract;
mod evaluate;
mod failure;
mod origin;
mod program;
mod prover;
mod slice;
mod stored;
mod tensor;
mod unpack;
mod unprovable;
mod word;

pub use chain::{Link, LinkRole};
pub use contract::{cases, contract, scaled_cases, tensor_contract};
pub use failure::ClampFailure;
pub(super) use origin::{BoundSource, ClampSources};
pub(super) use prover::ClampProver;
pub use stored::{storage_cases, stored_contract};
pub use unprovable::Unprovable;
