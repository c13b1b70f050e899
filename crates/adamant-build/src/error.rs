//! The one error of the PTX build: a message that names what went wrong and the fix. A build
//! script prints it and stops ([`KernelCrate::build`](crate::KernelCrate::build)); there is
//! nothing to recover, only something to read.
use std::fmt;

/// Why the PTX build stopped. Its `Display` is the whole message (several lines when there are
/// several problems).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError {
    message: String,
}

impl BuildError {
    pub(crate) fn new(message: impl Into<String>) -> BuildError {
        BuildError {
            message: message.into(),
        }
    }

    /// The message, as the build prints it after `error: adamant PTX build: `.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for BuildError {}
