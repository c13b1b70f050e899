//! [`AuditedModule`]: a PTX module with the audit certificate its build wrote, and the check that
//! lets safe code load it ([`AuditedModule::verify`]), run before any driver call.
//!
//! A launch builds its arguments from the host's registered descriptor and finds its entry in
//! the module by name, so loading a module is only safe if the module is the one the audit
//! passed (its certificate's digest) and the audit ran against the descriptors this program
//! launches with (its certificate's kernel list, entry by entry). A build-dependency's features
//! are resolved apart from the normal dependency's, so the second is not given: the same kernel
//! crate can register another parameter order in the host than in the build script that
//! audited it.
use std::sync::OnceLock;

use adamant_device::abi::certificate::{self, Certificate};
use adamant_device::abi::kernel_list::{ListedKernel, ListedParam, ListedRecordScalar};
use adamant_device::abi::{self, KernelDescriptor, KernelKind, Lifetime, ParamRole};

use crate::error::{Error, Result};

/// A PTX module and its audit certificate, as `adamant_build::KernelCrate` wrote them
/// (`<lib>.ptx`, `<lib>.certificate.json`). Made by [`include_module!`](crate::include_module)
/// from the calling crate's build output; [`Adamant::add_module`](crate::Adamant::add_module)
/// loads it once [`AuditedModule::verify`] passes.
#[derive(Clone, Copy)]
pub struct AuditedModule {
    ptx: &'static str,
    certificate: &'static str,
}

impl std::fmt::Debug for AuditedModule {
    // The texts are hundreds of kilobytes: their sizes say which module it is well enough.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditedModule")
            .field("ptx_bytes", &self.ptx.len())
            .field("certificate_bytes", &self.certificate.len())
            .finish()
    }
}

/// The module `adamant_build::KernelCrate` built for kernel crate `lib` (its library name, an
/// identifier, e.g. `my_kernels`) in this crate's build script, with its certificate, both
/// embedded from `OUT_DIR`:
///
/// ```text
/// static MODULE: adamant_runtime::AuditedModule = adamant_runtime::include_module!(my_kernels);
/// rt.add_module(&MODULE)?;
/// ```
///
/// It takes an identifier, not a path, so it only ever names the two files of one build in
/// `OUT_DIR`. Here, in this crate's doctests, the module this crate's build script wrote for
/// adamant's own kernel crate:
///
/// ```
/// static MODULE: adamant_runtime::AuditedModule =
///     adamant_runtime::include_module!(adamant_kernels);
///
/// // What `add_module` checks first, without a GPU: the PTX is the text the audit passed, for
/// // the descriptors this program registers.
/// assert_eq!(MODULE.verify().unwrap(), adamant_device::abi::kernels());
/// ```
#[macro_export]
macro_rules! include_module {
    ($lib:ident) => {
        // SAFETY: the two files the audited build (`adamant_build::KernelCrate`) wrote for `$lib`
        // in this crate's OUT_DIR; a build script that writes its own there is trusted like any
        // build script (README, "What it cannot prove").
        unsafe {
            $crate::AuditedModule::from_build_output(
                ::core::include_str!(::core::concat!(
                    ::core::env!("OUT_DIR"),
                    "/",
                    ::core::stringify!($lib),
                    ".ptx"
                )),
                ::core::include_str!(::core::concat!(
                    ::core::env!("OUT_DIR"),
                    "/",
                    ::core::stringify!($lib),
                    ".certificate.json"
                )),
            )
        }
    };
}

impl AuditedModule {
    /// The module `ptx` with its certificate `certificate`.
    ///
    /// # Safety
    ///
    /// `ptx` and `certificate` are the two files `adamant_build::KernelCrate` wrote for one build
    /// (`<lib>.ptx` and `<lib>.certificate.json`), unedited. [`AuditedModule::verify`] checks that
    /// they agree and that the certified descriptors are the registered ones, but it cannot tell
    /// a certificate the audit wrote from one written by hand; use
    /// [`include_module!`](crate::include_module).
    pub const unsafe fn from_build_output(
        ptx: &'static str,
        certificate: &'static str,
    ) -> AuditedModule {
        AuditedModule { ptx, certificate }
    }

    /// The PTX text.
    pub const fn ptx(&self) -> &'static str {
        self.ptx
    }

    /// The certificate's text (`adamant_device::abi::certificate`).
    pub const fn certificate(&self) -> &'static str {
        self.certificate
    }

    /// Checks, without a GPU, that this module may be loaded: its certificate is one this
    /// runtime reads, the PTX is the text it certifies (SHA-256), and the kernel set it names is
    /// registered in this program exactly as it was audited: the same entries, each of the same
    /// kind with the same parameters in the same order (name, type and role, domain included;
    /// where an entry was defined is not compared). Returns the registered descriptors, the
    /// ones launches build their arguments from.
    ///
    /// # Errors
    ///
    /// - [`Error::UnauditedModule`]: a malformed certificate or one of an unknown format, or a
    ///   PTX whose digest is not the certified one;
    /// - [`Error::UnknownKernelSet`]: no kernel of the certificate's set is registered here (its
    ///   kernel crate is not linked into the binary), naming the set and listing those that are;
    /// - [`Error::DescriptorMismatch`]: an entry registered twice, missing from the registry or
    ///   from the certificate, or whose kind or parameters differ.
    pub fn verify(&self) -> Result<Vec<&'static KernelDescriptor>> {
        check(self.ptx, self.certificate).map_err(Error::from)
    }
}

/// adamant's own module ([`crate::MODULE`]) verified, once per process: the outcome cannot
/// change while the program runs, and each `Adamant::new` would otherwise hash the whole
/// module (over 500 KB) again.
pub(crate) fn own_kernels() -> Result<Vec<&'static KernelDescriptor>> {
    static VERIFIED: OnceLock<Result<Vec<&'static KernelDescriptor>, Refusal>> = OnceLock::new();
    VERIFIED
        .get_or_init(|| check(crate::MODULE.ptx, crate::MODULE.certificate))
        .clone()
        .map_err(Error::from)
}

/// Why a module is refused: [`Error`]'s two variants for it, in a form that can be cached.
#[derive(Clone, Debug)]
enum Refusal {
    Unaudited {
        set: String,
        reason: String,
    },
    Mismatch {
        set: String,
        entry: String,
        detail: String,
    },
    UnknownSet {
        set: String,
        registered: Vec<&'static str>,
    },
}

impl From<Refusal> for Error {
    fn from(refusal: Refusal) -> Error {
        match refusal {
            Refusal::Unaudited { set, reason } => Error::UnauditedModule { set, reason },
            Refusal::Mismatch { set, entry, detail } => {
                Error::DescriptorMismatch { set, entry, detail }
            }
            Refusal::UnknownSet { set, registered } => Error::UnknownKernelSet { set, registered },
        }
    }
}

fn check(ptx: &str, certificate: &str) -> Result<Vec<&'static KernelDescriptor>, Refusal> {
    let cert = Certificate::from_json(certificate).map_err(|e| Refusal::Unaudited {
        set: e.set.unwrap_or_else(|| "(unreadable)".to_string()),
        reason: e.reason,
    })?;
    let set = cert.set();
    let unaudited = |reason: String| Refusal::Unaudited {
        set: set.to_string(),
        reason,
    };
    let digest = certificate::ptx_sha256(ptx);
    if digest != cert.ptx_sha256() {
        return Err(unaudited(format!(
            "the PTX's SHA-256 is {digest}, but the certificate is for {}: this is not the text \
             the audit passed",
            cert.ptx_sha256()
        )));
    }
    let host = abi::kernel_set(set).map_err(|e| Refusal::UnknownSet {
        set: e.set,
        registered: e.registered,
    })?;
    compare(set, &host, cert.kernels())?;
    Ok(host)
}

/// The first difference between the host's registry of set `set` and the certified list, entry
/// by entry.
fn compare(
    set: &str,
    host: &[&'static KernelDescriptor],
    audited: &[ListedKernel],
) -> Result<(), Refusal> {
    let mismatch = |entry: &str, detail: String| Refusal::Mismatch {
        set: set.to_string(),
        entry: entry.to_string(),
        detail,
    };
    // Launches look entries up by (set, name): with two descriptors of one name, which one a
    // launch gets is link order, and only one of them can be the audited one.
    if let Some((first, second)) = abi::duplicate(host) {
        return Err(mismatch(
            first.name,
            format!(
                "registered twice in the host, at {} and at {}",
                first.defined_at, second.defined_at
            ),
        ));
    }
    for listed in audited {
        match host.iter().find(|k| k.name == listed.name) {
            None => {
                return Err(mismatch(
                    &listed.name,
                    "entry missing from the host's registry".to_string(),
                ))
            }
            Some(kernel) => {
                if let Some(detail) = difference(kernel, listed) {
                    return Err(mismatch(kernel.name, detail));
                }
            }
        }
    }
    match host
        .iter()
        .find(|k| !audited.iter().any(|l| l.name == k.name))
    {
        Some(extra) => Err(mismatch(
            extra.name,
            "entry not in the audited module".to_string(),
        )),
        None => Ok(()),
    }
}

/// How `host` differs from the audited `listed` entry of the same name, in words. The host's
/// descriptor is compared in the certificate's own form ([`ListedKernel::of`]), so whatever the
/// list records of a kernel is what is compared (where it was defined aside: informational).
fn difference(host: &KernelDescriptor, listed: &ListedKernel) -> Option<String> {
    let ours = ListedKernel::of(host);
    if ours.kind != listed.kind {
        return Some(format!(
            "it is {} in the host's descriptor but {} in the audited one",
            kind(ours.kind),
            kind(listed.kind)
        ));
    }
    let count = ours.params.len().max(listed.params.len());
    let params = (0..count).find_map(|i| {
        let (h, a) = (ours.params.get(i), listed.params.get(i));
        (h != a).then(|| {
            format!(
                "parameter {i} is {} in the host's descriptor but {} in the audited one",
                h.map_or_else(|| absent(ours.params.len()), param),
                a.map_or_else(|| absent(listed.params.len()), param),
            )
        })
    });
    // The record's words are read by the device at the slots the audited build gave them and
    // written by the host at the slots the host's descriptor gives: they must agree too.
    let count = ours.record.len().max(listed.record.len());
    params.or_else(|| {
        (0..count).find_map(|i| {
            let (h, a) = (ours.record.get(i), listed.record.get(i));
            (h != a).then(|| {
                format!(
                    "record scalar {i} is {} in the host's descriptor but {} in the audited one",
                    h.map_or_else(|| absent(ours.record.len()), record_scalar),
                    a.map_or_else(|| absent(listed.record.len()), record_scalar),
                )
            })
        })
    })
}

fn record_scalar(r: &ListedRecordScalar) -> String {
    let lifetime = match r.lifetime {
        Lifetime::Step => "#[step]".to_string(),
        Lifetime::Hyper { slot, domain } => {
            format!("#[hyper] in word {slot}, {}", domain.describe())
        }
        Lifetime::Derived { slot, initial_bits } => {
            format!("#[derived] in word {slot}, initially bits {initial_bits:#x}")
        }
    };
    format!("`{}` ({lifetime}, {})", r.name, r.ty.ptx())
}

fn param(p: &ListedParam) -> String {
    format!("`{}` ({}, {})", p.name, describe_role(p.role), p.ty.ptx())
}

fn absent(len: usize) -> String {
    format!("absent (it has {len} parameters)")
}

fn kind(kind: KernelKind) -> &'static str {
    match kind {
        KernelKind::Optimizer => "an optimizer entry",
        KernelKind::Other => "a non-optimizer entry",
    }
}

/// A role as the kernel's author wrote it (`#[state]` is `state`), with a scalar's domain.
/// Every role is listed, so a new one cannot go undescribed.
fn describe_role(role: ParamRole) -> String {
    let word = match role {
        ParamRole::Scalar { domain } => return format!("scalar, {}", domain.describe()),
        ParamRole::UniformPtr { default } => return format!("uniform_ptr, default {default}"),
        ParamRole::ParamBuffer => "param",
        ParamRole::Input => "input",
        ParamRole::State => "state",
        ParamRole::Len => "len",
        ParamRole::ClampBound => "clamp bound",
        ParamRole::StepState => "step state",
        ParamRole::ParamTable => "param table",
        ParamRole::InputTable => "input table",
        ParamRole::StateTable => "state table",
        ParamRole::ChunkTable => "chunk table",
        ParamRole::ChunkCount => "chunk count",
        ParamRole::ClampScales => "clamp scales",
        ParamRole::Records => "records",
        ParamRole::Output => "output",
        ParamRole::IndexTable => "index",
        ParamRole::UniformTable => "uniform_ptr table",
        ParamRole::RuleTable => "rule table",
        ParamRole::StepStateTable => "step-state table",
    };
    word.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(kernels: &[&'static KernelDescriptor]) -> Vec<ListedKernel> {
        kernels.iter().map(|k| ListedKernel::of(k)).collect()
    }

    #[test]
    fn adamants_embedded_module_verifies_to_its_registered_set() {
        let verified = crate::MODULE.verify().unwrap();
        assert_eq!(verified, abi::kernels());
        assert_eq!(own_kernels().unwrap(), verified);
    }

    #[test]
    fn a_kind_or_a_parameter_that_differs_is_named_by_position() {
        let host = abi::kernels();
        let soft = abi::kernel("soft_update_kernel").unwrap();
        let mut audited = listed(&host);
        let at = audited.iter().position(|k| k.name == soft.name).unwrap();
        audited[at].params.swap(0, 1);
        let Err(Refusal::Mismatch { entry, detail, .. }) = compare("s", &host, &audited) else {
            panic!("a swap passed")
        };
        assert_eq!(entry, "soft_update_kernel");
        assert_eq!(
            detail,
            format!(
                "parameter 0 is `{}` (param, .u64) in the host's descriptor but `{}` (input, \
                 .u64) in the audited one",
                soft.params[0].name, soft.params[1].name
            )
        );
        audited[at].params.swap(0, 1);
        audited[at].params.pop();
        let Err(Refusal::Mismatch { detail, .. }) = compare("s", &host, &audited) else {
            panic!("a dropped parameter passed")
        };
        let last = soft.params.len() - 1;
        assert!(
            detail.starts_with(&format!("parameter {last} is `")),
            "{detail}"
        );
        assert!(
            detail.ends_with(&format!(
                "but absent (it has {last} parameters) in the audited one"
            )),
            "{detail}"
        );
        audited[at].params = listed(&[soft])[0].params.clone();
        audited[at].kind = KernelKind::Other;
        let Err(Refusal::Mismatch { detail, .. }) = compare("s", &host, &audited) else {
            panic!("another kind passed")
        };
        assert!(
            detail.contains("an optimizer entry in the host's descriptor but a non-optimizer"),
            "{detail}"
        );
    }
}
