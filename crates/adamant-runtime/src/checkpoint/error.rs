//! What can be wrong with a checkpoint file, each naming the file and, where there is one, the
//! tensor or metadata key.
use std::path::PathBuf;

/// A checkpoint that cannot be written, read or used. Nothing the caller holds is changed when
/// one is returned: a failed save leaves the previous file as it was, a failed load returns no
/// state.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The file system refused (create, write, sync, rename, read).
    #[error("checkpoint {path}: {action} failed: {source}")]
    Io {
        /// The checkpoint file.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The file system's error.
        #[source]
        source: std::io::Error,
    },
    /// Not a safetensors file, or cut short (its header or a tensor's bytes run past its end).
    #[error("checkpoint {path} is not a readable safetensors file ({reason}): truncated or not a checkpoint")]
    Unreadable {
        /// The checkpoint file.
        path: PathBuf,
        /// What the reader found.
        reason: String,
    },
    /// A safetensors file that is no adamant checkpoint, or of another format version.
    #[error("checkpoint {path}: format `{found}`, this build reads `{expected}`")]
    Version {
        /// The checkpoint file.
        path: PathBuf,
        /// What this build (or the state) needs.
        expected: String,
        /// What the file holds.
        found: String,
    },
    /// The checksum in the metadata is not the one of the tensors and metadata read: the file
    /// was changed or damaged after it was written.
    #[error("checkpoint {path}: checksum mismatch (recorded {recorded}, computed {computed}): the file was changed or damaged after it was written")]
    Checksum {
        /// The checkpoint file.
        path: PathBuf,
        /// The checksum in the file.
        recorded: String,
        /// The checksum of what was read.
        computed: String,
    },
    /// A tensor the state needs is not in the file.
    #[error("checkpoint {path}: tensor `{name}` is missing")]
    MissingTensor {
        /// The checkpoint file.
        path: PathBuf,
        /// The tensor.
        name: String,
    },
    /// A tensor of another element type than the state's.
    #[error("checkpoint {path}: tensor `{name}` is {found}, the state holds {expected}")]
    Dtype {
        /// The checkpoint file.
        path: PathBuf,
        /// The tensor.
        name: String,
        /// The element type the state holds.
        expected: &'static str,
        /// What the file holds.
        found: String,
    },
    /// A tensor of another shape than the state's.
    #[error("checkpoint {path}: tensor `{name}` has shape {found:?}, the state has {expected:?}")]
    Shape {
        /// The checkpoint file.
        path: PathBuf,
        /// The tensor.
        name: String,
        /// The state's shape.
        expected: Vec<usize>,
        /// The file's shape.
        found: Vec<usize>,
    },
    /// A metadata entry the state needs is missing, or says something else than the state
    /// (another kernel or rule for a tensor, other hyperparameters).
    #[error("checkpoint {path}: metadata `{key}` is {found:?}, the state needs {expected:?}")]
    Metadata {
        /// The checkpoint file.
        path: PathBuf,
        /// The metadata key.
        key: String,
        /// What this build (or the state) needs.
        expected: String,
        /// What the file says (None: the key is missing).
        found: Option<String>,
    },
    /// A NaN or infinity in a tensor that must be finite (a moment): reported, and loaded only
    /// when the caller asks for it.
    #[error(
        "checkpoint {path}: tensor `{name}` holds a non-finite value ({value}) at element {index}"
    )]
    NonFinite {
        /// The checkpoint file.
        path: PathBuf,
        /// The tensor.
        name: String,
        /// The first non-finite element.
        index: usize,
        /// Its value.
        value: f32,
    },
    /// A tensor given to a checkpoint whose bytes are not its shape times its element size, or
    /// a name used twice.
    #[error("checkpoint tensor `{name}`: {problem}")]
    BadTensor {
        /// The tensor.
        name: String,
        /// What is wrong.
        problem: String,
    },
}
