//! A kernel set as JSON: the wire form of the descriptors, shared by what writes it and what
//! reads it back. `adamant-build` writes one next to every module it builds
//! (`<lib>.kernels.json`), so that a tool that does not link the kernel crate, such as
//! `adamant audit --ptx X.ptx --kernels X.kernels.json`, audits the module against the same
//! descriptors its build did; the audit certificate ([`crate::certificate`]) carries the same
//! list. The JSON mirrors the descriptor types field for field; reading it back gives
//! descriptors equal to the ones written.
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{
    KernelDescriptor, KernelKind, KernelParam, Lifetime, ParamRole, ParamType, RecordScalar,
    Rounding, Storage,
};

// The descriptor's string-free parts (kind, type, role with its domain) are the abi's own types,
// serialised as they are; only the names need owned mirrors here.

/// `<lib>.kernels.json`: one kernel set.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct List {
    set: String,
    kernels: Vec<ListedKernel>,
}

/// One kernel of a written set, with owned names (a descriptor's are `&'static`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListedKernel {
    /// The PTX entry name.
    pub name: String,
    /// Where the kernel was defined ([`KernelDescriptor::defined_at`]): informational.
    pub defined_at: String,
    /// Optimizer or other entry.
    pub kind: KernelKind,
    /// The entry's parameters in PTX order.
    pub params: Vec<ListedParam>,
    /// A stepped entry's scalars, read from its record ([`KernelDescriptor::record`]): the
    /// record layout the module was audited with, compared like the parameters (a host that
    /// writes `eps` where the device reads `weight_decay` is refused at load).
    pub record: Vec<ListedRecordScalar>,
}

/// One record scalar of a [`ListedKernel`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListedRecordScalar {
    /// The scalar's name in the kernel's signature.
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub ty: ParamType,
    /// Where it lives and how long.
    pub lifetime: Lifetime,
}

/// One parameter of a [`ListedKernel`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListedParam {
    /// The parameter's name in the kernel's signature.
    pub name: String,
    /// Its PTX-level type.
    #[serde(rename = "type")]
    pub ty: ParamType,
    /// Its role, with the domain of a scalar.
    pub role: ParamRole,
    /// The storage type of a buffer's elements (`f32` for every other parameter).
    pub storage: Storage,
    /// How a value stored to it is rounded (`nearest` unless the kernel declares otherwise).
    #[serde(default)]
    pub rounding: Rounding,
}

impl ListedKernel {
    /// The owned mirror of `kernel` (its set is the list's).
    pub fn of(kernel: &KernelDescriptor) -> ListedKernel {
        ListedKernel {
            name: kernel.name.to_string(),
            defined_at: kernel.defined_at.to_string(),
            kind: kernel.kind,
            params: kernel
                .params
                .iter()
                .map(|p| ListedParam {
                    name: p.name.to_string(),
                    ty: p.ty,
                    role: p.role,
                    storage: p.storage,
                    rounding: p.rounding,
                })
                .collect(),
            record: kernel
                .record
                .iter()
                .map(|r| ListedRecordScalar {
                    name: r.name.to_string(),
                    ty: r.ty,
                    lifetime: r.lifetime,
                })
                .collect(),
        }
    }

    /// A descriptor of set `set` equal to the one this was written from, leaked (`'static`, as
    /// registered descriptors are).
    fn leak(self, set: &'static str) -> &'static KernelDescriptor {
        let params: Vec<KernelParam> = self
            .params
            .into_iter()
            .map(|p| KernelParam {
                name: leak(p.name),
                ty: p.ty,
                role: p.role,
                storage: p.storage,
                rounding: p.rounding,
            })
            .collect();
        let record: Vec<RecordScalar> = self
            .record
            .into_iter()
            .map(|r| RecordScalar {
                name: leak(r.name),
                ty: r.ty,
                lifetime: r.lifetime,
            })
            .collect();
        Box::leak(Box::new(KernelDescriptor {
            set,
            defined_at: leak(self.defined_at),
            name: leak(self.name),
            kind: self.kind,
            params: Box::leak(params.into_boxed_slice()),
            record: Box::leak(record.into_boxed_slice()),
        }))
    }
}

/// A kernel list or certificate that cannot be written or read: what is wrong with it, in
/// words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError(pub String);

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FormatError {}

/// The one set `kernels` belong to, and their mirrors: a list (and a certificate) describes one
/// module, which holds one set.
///
/// # Errors
///
/// A [`FormatError`] naming a kernel of another set than the first's.
pub fn listed(kernels: &[&KernelDescriptor]) -> Result<(String, Vec<ListedKernel>), FormatError> {
    let set = kernels.first().map_or("", |k| k.set);
    if let Some(other) = kernels.iter().find(|k| k.set != set) {
        return Err(FormatError(format!(
            "a kernel list holds one set: `{}` is of `{}`, not `{set}`",
            other.name, other.set
        )));
    }
    Ok((
        set.to_string(),
        kernels.iter().map(|k| ListedKernel::of(k)).collect(),
    ))
}

/// `kernels` (one set) as JSON.
///
/// # Errors
///
/// A [`FormatError`] if the kernels are not all of one set.
pub fn to_json(kernels: &[&KernelDescriptor]) -> Result<String, FormatError> {
    let (set, kernels) = listed(kernels)?;
    serde_json::to_string_pretty(&List { set, kernels })
        .map_err(|e| FormatError(format!("writing the kernel list: {e}")))
}

/// The descriptors of a list written by [`to_json`]. They are leaked (`'static`, as registered
/// descriptors are): read a list once per process.
///
/// # Errors
///
/// A [`FormatError`] naming what is malformed.
pub fn from_json(json: &str) -> Result<Vec<&'static KernelDescriptor>, FormatError> {
    let list: List = serde_json::from_str(json)
        .map_err(|e| FormatError(format!("reading the kernel list: {e}")))?;
    Ok(descriptors(list.set, list.kernels))
}

/// `kernels` of set `set` as leaked descriptors.
pub fn descriptors(set: String, kernels: Vec<ListedKernel>) -> Vec<&'static KernelDescriptor> {
    let set = leak(set);
    kernels.into_iter().map(|k| k.leak(set)).collect()
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}
