//! Checkpoints of an optimizer state (issue 27), in the safetensors format: named tensors (the
//! user's tensor names, PyTorch's state names: [`state_name`]), and string metadata holding the
//! format version, what the state needs to be resumed (kernels, hyperparameters, storage types,
//! the rounding seed: the caller's keys) and a checksum of everything else.
//!
//! The file layer is here, on the host and independent of a device: [`Checkpoint::save`] writes
//! a temporary file in the destination's folder, syncs it and renames it over the destination
//! (a crash or a failed rename leaves the previous checkpoint whole); [`Checkpoint::load`]
//! reads and checks the whole file (its structure, its format version, its checksum) before it
//! returns anything, and the typed accessors check each tensor's element type and shape against
//! what the state expects, so a bad file is a [`CheckpointError`] naming the file and the tensor
//! or key, never a partly loaded state.
mod digest;
mod error;
mod groups;
mod read;
mod scales;
mod scan;
mod snapshot;
mod state;
mod transfer;

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use adamant_device::abi::{KernelDescriptor, ParamRole};
use safetensors::tensor::{Dtype, TensorView};

pub use digest::PIECE_BYTES;
use digest::{DataHash, PieceDigest};
pub use error::CheckpointError;

pub use scales::clamp_scales_name;
pub use snapshot::{PendingSnapshot, Snapshot};
pub use state::{kernel_key, step_key, Restore, Q_ABS_REF_TENSOR, RECORDS_TENSOR};

/// The format this build writes (`adamant.format` in the metadata). It reads this one and
/// [`FORMAT_1`].
pub const FORMAT: &str = "adamant-checkpoint/2";
/// The first format, which differs only in how the checksum covers the tensors' bytes (all of
/// them in one hash, where format 2 hashes pieces of [`PIECE_BYTES`] on their own and then their
/// digests: docs/checkpoints.md). Still read.
pub const FORMAT_1: &str = "adamant-checkpoint/1";

/// The metadata key of the format version.
pub const FORMAT_KEY: &str = "adamant.format";
/// The metadata key of the checksum (SHA-256, hex) of every tensor (name, element type, shape,
/// bytes, in name order) and every other metadata entry (in key order): docs/checkpoints.md.
pub const CHECKSUM_KEY: &str = "adamant.checksum";

/// The element type of a checkpoint tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorKind {
    /// IEEE binary32.
    F32,
    /// bfloat16.
    Bf16,
    /// IEEE binary16.
    F16,
    /// 16-bit words that are no float by themselves (a bf16 master's remainder).
    U16,
    /// 32-bit words (a step record's raw words).
    U32,
}

impl TensorKind {
    /// Bytes per element.
    pub const fn bytes(self) -> usize {
        match self {
            TensorKind::F32 | TensorKind::U32 => 4,
            TensorKind::Bf16 | TensorKind::F16 | TensorKind::U16 => 2,
        }
    }

    /// The safetensors element type.
    fn dtype(self) -> Dtype {
        match self {
            TensorKind::F32 => Dtype::F32,
            TensorKind::Bf16 => Dtype::BF16,
            TensorKind::F16 => Dtype::F16,
            TensorKind::U16 => Dtype::U16,
            TensorKind::U32 => Dtype::U32,
        }
    }

    pub(crate) fn of(dtype: Dtype) -> Option<TensorKind> {
        match dtype {
            Dtype::F32 => Some(TensorKind::F32),
            Dtype::BF16 => Some(TensorKind::Bf16),
            Dtype::F16 => Some(TensorKind::F16),
            Dtype::U16 => Some(TensorKind::U16),
            Dtype::U32 => Some(TensorKind::U32),
            _ => None,
        }
    }

    /// As safetensors names it.
    pub const fn name(self) -> &'static str {
        match self {
            TensorKind::F32 => "F32",
            TensorKind::Bf16 => "BF16",
            TensorKind::F16 => "F16",
            TensorKind::U16 => "U16",
            TensorKind::U32 => "U32",
        }
    }

    /// The element type a buffer of `storage` is saved as.
    pub const fn of_storage(storage: adamant_device::abi::Storage) -> TensorKind {
        use adamant_device::abi::Storage;
        match storage {
            Storage::F32 => TensorKind::F32,
            Storage::Bf16 => TensorKind::Bf16,
            Storage::F16 => TensorKind::F16,
            Storage::Bf16Remainder => TensorKind::U16,
        }
    }
}

/// The name buffer `buffer` of a kernel (its `descriptor`) has in a checkpoint of tensor
/// `tensor`, derived from the descriptor: `<tensor>` for the parameter buffer; for the
/// parameter's companion (`#[param(bf16, master)]`, `remainder`: the macro names it
/// `<param>_<kind>`) `<tensor>.<kind>`, as `fc.weight.master`; for a state, PyTorch's name
/// where PyTorch keeps the same state (`m`, `v`, `v_max` are `torch.optim.Adam`'s `exp_avg`,
/// `exp_avg_sq`, `max_exp_avg_sq`: `fc.weight.exp_avg`), the buffer's own name otherwise. None
/// for a buffer the kernel does not have or does not keep (an input, a gradient).
pub fn state_name(tensor: &str, descriptor: &KernelDescriptor, buffer: &str) -> Option<String> {
    let param = descriptor.params[descriptor.param_buffer_index()?].name;
    let declared = descriptor.params.iter().find(|p| p.name == buffer)?;
    if buffer == param {
        return Some(tensor.to_string());
    }
    let state = match declared.role {
        ParamRole::ParamBuffer | ParamRole::ParamTable => {
            buffer.strip_prefix(param)?.strip_prefix('_')?
        }
        ParamRole::State | ParamRole::StateTable => match buffer {
            "m" => "exp_avg",
            "v" => "exp_avg_sq",
            "v_max" => "max_exp_avg_sq",
            other => other,
        },
        _ => return None,
    };
    Some(format!("{tensor}.{state}"))
}

/// One tensor of a checkpoint: its element type, shape and bytes (little-endian).
#[derive(Clone, Debug)]
pub struct CheckpointTensor {
    /// The element type.
    pub kind: TensorKind,
    /// The shape (a buffer of `n` elements: `[n]`).
    pub shape: Vec<usize>,
    data: TensorBytes,
    /// The digests of the bytes' checksum pieces (format 2), once known: hashed as a download
    /// or a read brought the bytes in, or at the first checksum. The bytes never change.
    digests: OnceLock<Vec<PieceDigest>>,
    /// Its non-finite elements (count, first index) once scanned ([`scan`]); the bytes never
    /// change.
    scanned: OnceLock<scan::Found>,
}

/// A tensor's bytes: its own (built by a save), or a range of the file read whole (a load
/// copies nothing more: a state is gigabytes).
#[derive(Clone, Debug)]
enum TensorBytes {
    Own(Vec<u8>),
    InFile(Arc<Vec<u8>>, Range<usize>),
}

impl CheckpointTensor {
    /// The elements, little-endian.
    pub fn data(&self) -> &[u8] {
        match &self.data {
            TensorBytes::Own(v) => v,
            TensorBytes::InFile(file, range) => &file[range.clone()],
        }
    }
}

/// The NaN and infinite values of a tensor ([`CheckpointTensor::non_finite`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NonFiniteValues {
    /// How many.
    pub count: usize,
    /// The first one's element index.
    pub first: usize,
    /// Its value.
    pub value: f32,
}

impl CheckpointTensor {
    /// Element `i` as a value, for the float types (None for words that are no values by
    /// themselves: a remainder, a record).
    fn value(&self, i: usize) -> Option<f32> {
        let b = &self.data()[i * self.kind.bytes()..];
        let half_bits = || u16::from_le_bytes([b[0], b[1]]);
        match self.kind {
            TensorKind::F32 => Some(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            TensorKind::Bf16 => Some(half::bf16::from_bits(half_bits()).to_f32()),
            TensorKind::F16 => Some(half::f16::from_bits(half_bits()).to_f32()),
            TensorKind::U16 | TensorKind::U32 => None,
        }
    }

    /// The NaN and infinite elements of a float tensor; None when every element is finite, or
    /// for a tensor of words (`U16`, `U32`). Scanned once: as a load read the tensor, or here
    /// on every core (a moment is a gigabyte).
    pub fn non_finite(&self) -> Option<NonFiniteValues> {
        let found = *self
            .scanned
            .get_or_init(|| scan::scan(self.kind, self.data()).flatten());
        let (count, first) = found?;
        Some(NonFiniteValues {
            count,
            first,
            value: self.value(first)?,
        })
    }
}

impl PartialEq for CheckpointTensor {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.shape == other.shape && self.data() == other.data()
    }
}

/// An optimizer state as a file holds it: named tensors and string metadata. Build one with
/// [`Checkpoint::insert`] and [`Checkpoint::set_metadata`], write it with
/// [`Checkpoint::save`]; read one with [`Checkpoint::load`] and take its parts with the typed
/// accessors.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Checkpoint {
    tensors: BTreeMap<String, CheckpointTensor>,
    metadata: BTreeMap<String, String>,
    /// The file it was read from (for errors), if any.
    path: PathBuf,
}

impl Checkpoint {
    /// An empty checkpoint.
    pub fn new() -> Checkpoint {
        Checkpoint::default()
    }

    /// Adds tensor `name`.
    ///
    /// # Errors
    ///
    /// [`CheckpointError::BadTensor`] for bytes that are not the shape's element count times
    /// the element size, or a name already used.
    pub fn insert(
        &mut self,
        name: &str,
        kind: TensorKind,
        shape: &[usize],
        data: Vec<u8>,
    ) -> Result<(), CheckpointError> {
        let bad = |problem: String| CheckpointError::BadTensor {
            name: name.to_string(),
            problem,
        };
        let elements: usize = shape.iter().product();
        if data.len() != elements * kind.bytes() {
            return Err(bad(format!(
                "{} bytes for shape {shape:?} of {} ({} expected)",
                data.len(),
                kind.name(),
                elements * kind.bytes()
            )));
        }
        if self.tensors.contains_key(name) {
            return Err(bad("the name is used twice".into()));
        }
        self.tensors.insert(
            name.to_string(),
            CheckpointTensor {
                kind,
                shape: shape.to_vec(),
                data: TensorBytes::Own(data),
                digests: OnceLock::new(),
                scanned: OnceLock::new(),
            },
        );
        Ok(())
    }

    /// [`Checkpoint::insert`] with the digests of `data`'s checksum pieces, hashed as it was
    /// downloaded (`digests` of another count than `data`'s pieces are dropped: hashed again
    /// at the save).
    pub(crate) fn insert_hashed(
        &mut self,
        name: &str,
        kind: TensorKind,
        shape: &[usize],
        data: Vec<u8>,
        digests: Vec<PieceDigest>,
    ) -> Result<(), CheckpointError> {
        let pieces = digest::piece_count(data.len());
        self.insert(name, kind, shape, data)?;
        if digests.len() == pieces {
            let _ = self.tensors[name].digests.set(digests);
        }
        Ok(())
    }

    /// Adds `f32` tensor `name` of shape `[values.len()]`.
    ///
    /// # Errors
    ///
    /// As [`Checkpoint::insert`].
    pub fn insert_f32(&mut self, name: &str, values: &[f32]) -> Result<(), CheckpointError> {
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.insert(name, TensorKind::F32, &[values.len()], data)
    }

    /// Adds 16-bit tensor `name` (`kind` a 16-bit type) of shape `[bits.len()]`.
    ///
    /// # Errors
    ///
    /// As [`Checkpoint::insert`]; a `kind` that is not 16 bits wide.
    pub fn insert_u16(
        &mut self,
        name: &str,
        kind: TensorKind,
        bits: &[u16],
    ) -> Result<(), CheckpointError> {
        let data = bits.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.insert(name, kind, &[bits.len()], data)
    }

    /// Tensor `name`, if the checkpoint has it (any element type and shape).
    pub fn get(&self, name: &str) -> Option<&CheckpointTensor> {
        self.tensors.get(name)
    }

    /// Takes tensor `name` out of the checkpoint (to replace it: [`Checkpoint::insert`]).
    pub fn remove(&mut self, name: &str) -> Option<CheckpointTensor> {
        self.tensors.remove(name)
    }

    /// Sets metadata `key` (the format's own keys, [`FORMAT_KEY`] and [`CHECKSUM_KEY`], are
    /// written by [`Checkpoint::save`] and cannot be set).
    ///
    /// # Errors
    ///
    /// [`CheckpointError::Metadata`] for a key of the format's own.
    pub fn set_metadata(&mut self, key: &str, value: &str) -> Result<(), CheckpointError> {
        if key == FORMAT_KEY || key == CHECKSUM_KEY {
            return Err(CheckpointError::Metadata {
                path: self.path.clone(),
                key: key.to_string(),
                expected: "a key of the caller's own".into(),
                found: Some(value.to_string()),
            });
        }
        self.metadata.insert(key.to_string(), value.to_string());
        Ok(())
    }

    /// Every metadata entry (the format's own included), in key order.
    pub fn metadata_entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.metadata.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The names of the tensors, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(String::as_str)
    }

    /// Metadata `key`.
    ///
    /// # Errors
    ///
    /// [`CheckpointError::Metadata`] for a key the file does not have.
    pub fn metadata(&self, key: &str) -> Result<&str, CheckpointError> {
        self.metadata
            .get(key)
            .map(String::as_str)
            .ok_or_else(|| CheckpointError::Metadata {
                path: self.path.clone(),
                key: key.to_string(),
                expected: "present".into(),
                found: None,
            })
    }

    /// That metadata `key` is `expected` (a tensor's kernel, a hyperparameter).
    ///
    /// # Errors
    ///
    /// [`CheckpointError::Metadata`] naming the key, what the state needs and what the file
    /// says.
    pub fn expect_metadata(&self, key: &str, expected: &str) -> Result<(), CheckpointError> {
        let found = self.metadata.get(key);
        if found.map(String::as_str) == Some(expected) {
            return Ok(());
        }
        Err(CheckpointError::Metadata {
            path: self.path.clone(),
            key: key.to_string(),
            expected: expected.to_string(),
            found: found.cloned(),
        })
    }

    /// Tensor `name`'s bytes, checked to be of `kind` and `shape`.
    ///
    /// # Errors
    ///
    /// [`CheckpointError::MissingTensor`], [`CheckpointError::Dtype`],
    /// [`CheckpointError::Shape`], each naming the tensor.
    pub fn tensor(
        &self,
        name: &str,
        kind: TensorKind,
        shape: &[usize],
    ) -> Result<&[u8], CheckpointError> {
        let t = self
            .tensors
            .get(name)
            .ok_or_else(|| CheckpointError::MissingTensor {
                path: self.path.clone(),
                name: name.to_string(),
            })?;
        if t.kind != kind {
            return Err(CheckpointError::Dtype {
                path: self.path.clone(),
                name: name.to_string(),
                expected: kind.name(),
                found: t.kind.name().to_string(),
            });
        }
        if t.shape != shape {
            return Err(CheckpointError::Shape {
                path: self.path.clone(),
                name: name.to_string(),
                expected: shape.to_vec(),
                found: t.shape.clone(),
            });
        }
        Ok(t.data())
    }

    /// `f32` tensor `name` of `len` elements. With `finite`, a NaN or infinity in it is
    /// [`CheckpointError::NonFinite`] (a moment must be finite; pass `false` to load one anyway).
    ///
    /// # Errors
    ///
    /// As [`Checkpoint::tensor`]; [`CheckpointError::NonFinite`].
    pub fn f32s(&self, name: &str, len: usize, finite: bool) -> Result<Vec<f32>, CheckpointError> {
        let data = self.tensor(name, TensorKind::F32, &[len])?;
        let values: Vec<f32> = data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if finite {
            self.check_finite(name)?;
        }
        Ok(values)
    }

    /// 16-bit tensor `name` (of `kind`) of `len` elements, as bits. With `finite` (a bf16 or
    /// f16 moment), a NaN or infinity in it is [`CheckpointError::NonFinite`].
    ///
    /// # Errors
    ///
    /// As [`Checkpoint::f32s`].
    pub fn u16s(
        &self,
        name: &str,
        kind: TensorKind,
        len: usize,
        finite: bool,
    ) -> Result<Vec<u16>, CheckpointError> {
        let data = self.tensor(name, kind, &[len])?;
        let bits: Vec<u16> = data
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        if finite {
            self.check_finite(name)?;
        }
        Ok(bits)
    }

    /// [`CheckpointError::NonFinite`] naming tensor `name`'s first NaN or infinite element.
    fn check_finite(&self, name: &str) -> Result<(), CheckpointError> {
        match self
            .tensors
            .get(name)
            .and_then(CheckpointTensor::non_finite)
        {
            Some(bad) => Err(CheckpointError::NonFinite {
                path: self.path.clone(),
                name: name.to_string(),
                index: bad.first,
                value: bad.value,
            }),
            None => Ok(()),
        }
    }

    /// The file's tensors (views of their bytes) and metadata, with the format and the
    /// checksum.
    #[allow(clippy::type_complexity)]
    fn file_parts(
        &self,
    ) -> Result<(Vec<(&str, TensorView<'_>)>, HashMap<String, String>), CheckpointError> {
        // The metadata with the format, without copying the tensors (a state is gigabytes).
        let mut with_format = self.metadata.clone();
        with_format.insert(FORMAT_KEY.to_string(), FORMAT.to_string());
        let checksum = digest::checksum(&self.tensors, &with_format, DataHash::Pieces);
        let mut metadata: HashMap<String, String> = with_format.into_iter().collect();
        metadata.insert(CHECKSUM_KEY.to_string(), checksum);
        let views = self
            .tensors
            .iter()
            .map(|(name, t)| {
                TensorView::new(t.kind.dtype(), t.shape.clone(), t.data())
                    .map(|v| (name.as_str(), v))
                    .map_err(|e| CheckpointError::BadTensor {
                        name: name.clone(),
                        problem: e.to_string(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((views, metadata))
    }

    /// Writes the checkpoint to `path`, atomically: the bytes go to a temporary file in the same
    /// folder, which is synced and then renamed over `path` (and the folder synced), so a crash
    /// or a failure at any point leaves whatever was at `path` before, whole.
    ///
    /// # Errors
    ///
    /// [`CheckpointError::Io`] naming the step that failed (the temporary file is removed).
    pub fn save(&self, path: &Path) -> Result<(), CheckpointError> {
        self.save_with(path, |from, to| std::fs::rename(from, to))
    }

    /// [`Checkpoint::save`] with the final rename done by `rename` (a test's failing one).
    pub(crate) fn save_with(
        &self,
        path: &Path,
        rename: impl FnOnce(&Path, &Path) -> std::io::Result<()>,
    ) -> Result<(), CheckpointError> {
        let (views, metadata) = self.file_parts()?;
        let io = |action: &'static str, source: std::io::Error| CheckpointError::Io {
            path: path.to_path_buf(),
            action,
            source,
        };
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let file_name = path
            .file_name()
            .ok_or_else(|| io("naming the file", std::io::ErrorKind::InvalidInput.into()))?;
        let temporary = folder.join(format!(
            ".{}.tmp-{}",
            file_name.to_string_lossy(),
            std::process::id()
        ));
        let written = (|| {
            // Streamed from the tensors' bytes to the file: no copy of the state in memory.
            safetensors::serialize_to_file(views, Some(metadata), &temporary)
                .map_err(|e| io("write", std::io::Error::other(format!("safetensors: {e}"))))?;
            let file = std::fs::File::open(&temporary).map_err(|e| io("open to sync", e))?;
            file.sync_all().map_err(|e| io("sync", e))?;
            rename(&temporary, path).map_err(|e| io("rename", e))
        })();
        if let Err(e) = written {
            // Best effort: the temporary file is no checkpoint of anyone's.
            let _ = std::fs::remove_file(&temporary);
            return Err(e);
        }
        // The rename itself is durable once the folder is synced (where folders can be).
        if let Ok(dir) = std::fs::File::open(&folder) {
            let _ = dir.sync_all();
        }
        Ok(())
    }

    /// Reads and checks the checkpoint at `path`: a safetensors file whole (no tensor past its
    /// end), of this format, whose checksum is the one of what was read.
    ///
    /// # Errors
    ///
    /// [`CheckpointError::Io`], [`CheckpointError::Unreadable`], [`CheckpointError::Version`],
    /// [`CheckpointError::Checksum`].
    pub fn load(path: &Path) -> Result<Checkpoint, CheckpointError> {
        let (bytes, digests) = read::read_hashing(path).map_err(|source| CheckpointError::Io {
            path: path.to_path_buf(),
            action: "read",
            source,
        })?;
        Checkpoint::from_bytes(Arc::new(bytes), path, digests)
    }

    /// The checkpoint in `file_bytes` (a whole file), checked; `digests` holds what the read
    /// found of each tensor's pieces as it went (by name: digests, non-finite elements); the
    /// rest are hashed here.
    fn from_bytes(
        file_bytes: Arc<Vec<u8>>,
        path: &Path,
        mut digests: read::ReadPieces,
    ) -> Result<Checkpoint, CheckpointError> {
        let bytes: &[u8] = &file_bytes;
        let unreadable = |reason: String| CheckpointError::Unreadable {
            path: path.to_path_buf(),
            reason,
        };
        let file = safetensors::SafeTensors::deserialize(bytes)
            .map_err(|e| unreadable(format!("{e:?}")))?;
        let (_, header) = safetensors::SafeTensors::read_metadata(bytes)
            .map_err(|e| unreadable(format!("{e:?}")))?;
        let metadata: BTreeMap<String, String> = header
            .metadata()
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect();
        let format = metadata.get(FORMAT_KEY).cloned().unwrap_or_default();
        // How this file's version hashes the tensors' bytes; any other version is refused.
        let data_hash = match format.as_str() {
            FORMAT => DataHash::Pieces,
            FORMAT_1 => DataHash::Bytes,
            _ => {
                return Err(CheckpointError::Version {
                    path: path.to_path_buf(),
                    expected: FORMAT.to_string(),
                    found: if format.is_empty() {
                        "none (no adamant checkpoint)".into()
                    } else {
                        format
                    },
                })
            }
        };
        let mut tensors = BTreeMap::new();
        for (name, view) in file.tensors() {
            let kind = TensorKind::of(view.dtype()).ok_or_else(|| {
                unreadable(format!(
                    "tensor `{name}` is {:?}, no type of a state",
                    view.dtype()
                ))
            })?;
            // The view is a slice of `bytes`: keep its range, not a copy.
            let start = view.data().as_ptr() as usize - bytes.as_ptr() as usize;
            let range = start..start + view.data().len();
            // What the read found of this tensor's pieces, if it read exactly these pieces as
            // this kind.
            let read = digests
                .remove(&name)
                .filter(|r| r.kind == kind && r.digests.len() == digest::piece_count(range.len()));
            let (hashed, scanned) = match read {
                Some(r) => (OnceLock::from(r.digests), OnceLock::from(r.non_finite)),
                None => (OnceLock::new(), OnceLock::new()),
            };
            tensors.insert(
                name,
                CheckpointTensor {
                    kind,
                    shape: view.shape().to_vec(),
                    data: TensorBytes::InFile(file_bytes.clone(), range),
                    digests: hashed,
                    scanned,
                },
            );
        }
        let checkpoint = Checkpoint {
            tensors,
            metadata,
            path: path.to_path_buf(),
        };
        let recorded = checkpoint
            .metadata
            .get(CHECKSUM_KEY)
            .cloned()
            .unwrap_or_default();
        let computed = digest::checksum(&checkpoint.tensors, &checkpoint.metadata, data_hash);
        if recorded != computed {
            return Err(CheckpointError::Checksum {
                path: path.to_path_buf(),
                recorded,
                computed,
            });
        }
        Ok(checkpoint)
    }
}

#[cfg(test)]
mod tests;
