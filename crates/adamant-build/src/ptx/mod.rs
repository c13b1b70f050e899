//! A reader for PTX that sees what ptxas sees: entries, functions and variables with their
//! lines, the instructions of a body, and the checks a module must pass. Shared by the PTX build
//! ([`crate::KernelCrate`], in build scripts) and the audit, so it depends on `std` only.
//!
//! Everything is built on one lexer ([`lexer`]) that follows the PTX ISA's syntax rules and
//! ptxas's behaviour (tests/audit/ptx_vs_ptxas.rs feeds both the same tricky modules): an `.entry`
//! in a comment or a string is not an entry, one whose name is on the next line is.
//!
//! The reader never panics: text it does not understand is skipped, kept as an operand it
//! cannot classify ([`Operand::Symbol`]), or ends an entry early (`complete: false`).
//!
//! - [`lexer`]: tokens, comments, lexical errors;
//! - `module`: [`parse`], [`entries`], [`functions`], [`variables`];
//! - `variable`: declarations and their [`StateSpace`];
//! - `instruction` and `operand`: [`instructions`] of a body;
//! - `check`: [`module_problems`], what the PTX build and the audit refuse.
mod check;
mod instruction;
pub mod lexer;
mod module;
mod operand;
mod variable;

pub use check::{
    check_module, extern_functions, inline_asm_markers, module_problems, ModuleProblem,
    INLINE_ASM_MARKER,
};
pub use instruction::{instructions, Instruction};
pub use module::{
    entries, functions, parse, variables, PtxAlias, PtxEntry, PtxFunction, PtxModule, PtxParam,
};
pub use operand::{parse_integer, Operand};
pub use variable::{Linkage, PtxVariable, StateSpace};

#[cfg(test)]
mod tests;
