//! adamant's build side: what reads, checks and audits a PTX module, apart from the runtime that
//! loads and launches it, so that build scripts and tools use it without linking `cust`.
//!
//! - [`ptx`]: a reader for PTX that sees what ptxas sees, and the module check;
//! - [`audit`]: the PTX audit against the kernel descriptors (writes attributed, clamp proven);
//! - [`ptxas`]: NVIDIA's `ptxas`, found and run offline, and its `-v` report;
//! - [`source_check`]: no assembly macros in a device crate's sources.
pub mod audit;
pub mod ptx;
pub mod ptxas;
pub mod source_check;
