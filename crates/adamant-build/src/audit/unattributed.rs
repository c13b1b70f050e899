//! Why a write could not be attributed to one writable pointer parameter
//! ([`Violation::UnattributedWrite`](super::Violation::UnattributedWrite)): one variant per
//! reason, each naming what the address derives from, so a caller matches the reason rather than
//! its wording.
use std::fmt;

/// Why the audit could not tie a write to one pointer it may write through.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unattributed {
    /// A store to the kernel's parameter space.
    ParamSpace,
    /// A store to the constant space.
    ConstSpace,
    /// The instruction has no address operand the reader understands.
    NoAddress,
    /// The address derives from scalars, indices or constants only.
    NoPointer,
    /// A `.shared`/`.local` variable written through a generic address.
    PrivateThroughGeneric {
        /// The variable.
        symbol: String,
    },
    /// The address of a module variable that is not `.shared` or `.local` memory.
    ModuleVariable {
        /// The variable.
        symbol: String,
    },
    /// The address was loaded from memory other than a pointer or index table.
    Loaded,
    /// The address may derive from more than one place, each described as in the message
    /// (`parameter `p``, `a pointer loaded from table `params``, `variable `x``, ...).
    Several {
        /// The places.
        places: Vec<String>,
    },
}

impl fmt::Display for Unattributed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unattributed::ParamSpace => write!(f, "it writes the kernel's parameter space"),
            Unattributed::ConstSpace => write!(f, "it writes the constant space"),
            Unattributed::NoAddress => write!(f, "it has no address operand"),
            Unattributed::NoPointer => write!(
                f,
                "its address derives from no pointer parameter (only from scalars, indices or \
                 constants), so it could be any address"
            ),
            Unattributed::PrivateThroughGeneric { symbol } => write!(
                f,
                "it writes .shared/.local variable `{symbol}` through a generic address, which \
                 an offset could take out of that window into global memory (write it with \
                 st.shared or st.local)"
            ),
            Unattributed::ModuleVariable { symbol } => write!(
                f,
                "its address is that of variable `{symbol}`, which is not .shared or .local \
                 memory (a module variable is not a declared buffer)"
            ),
            Unattributed::Loaded => write!(
                f,
                "its address is loaded from memory, so it could be any address (only pointer \
                 tables and index tables are followed)"
            ),
            Unattributed::Several { places } => write!(
                f,
                "its address may derive from several places: {}",
                places.join(", ")
            ),
        }
    }
}
