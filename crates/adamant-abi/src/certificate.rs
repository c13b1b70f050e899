//! The audit certificate: what `adamant-build`'s audited build writes beside a module it built
//! (`<lib>.certificate.json`), and what the runtime reads before it loads that module from safe
//! code (`adamant_runtime::AuditedModule::verify`). The format lives here, in one place, for the
//! writer and the reader.
//!
//! A certificate names the kernel set, the SHA-256 of the PTX text's bytes, the `adamant-build`
//! version that audited it, and the full kernel list the module was checked and audited against
//! (the descriptors as [`crate::kernel_list`] writes them). It says "this text passed the module
//! check and the whole PTX audit against these descriptors", so only the audited build may make
//! one: [`Certificate::issue`] is `unsafe`, and nothing else builds a [`Certificate`] but reading
//! one back ([`Certificate::from_json`]).
use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::kernel_list::{self, ListedKernel};
use crate::KernelDescriptor;

/// The format tag of the certificates this crate writes and reads. A change to what a
/// certificate means or holds gets a new tag, so an old reader refuses a new certificate (and a
/// new reader an old one) by name instead of misreading it.
pub const FORMAT: &str = "adamant-audit-certificate/1";

/// The certificate as written, field for field.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    format: String,
    set: String,
    ptx_sha256: String,
    adamant_build_version: String,
    kernels: Vec<ListedKernel>,
}

/// A module's audit certificate: made by the audited build ([`Certificate::issue`]) or read back
/// ([`Certificate::from_json`]). Its fields are private so that safe code cannot make one up.
#[derive(Clone, Debug, PartialEq)]
pub struct Certificate {
    set: String,
    ptx_sha256: String,
    adamant_build_version: String,
    kernels: Vec<ListedKernel>,
}

/// A certificate that cannot be read: the set it claims to be for, where that much could be
/// read, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateError {
    /// The `set` field, if the text is JSON with one.
    pub set: Option<String>,
    /// What is wrong with it, in words.
    pub reason: String,
}

impl fmt::Display for CertificateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.set {
            Some(set) => write!(f, "the certificate of kernel set `{set}`: {}", self.reason),
            None => write!(f, "the certificate: {}", self.reason),
        }
    }
}

impl std::error::Error for CertificateError {}

impl Certificate {
    /// The certificate of `ptx`, audited by `adamant-build` `adamant_build_version` against
    /// `kernels` (one set).
    ///
    /// # Safety
    ///
    /// Only adamant's audited build (`adamant_build::KernelCrate`) may call this, and only after
    /// the module check and the whole PTX audit of exactly `ptx` against exactly `kernels`
    /// passed. The runtime loads a certified module from safe code, and launches its entries
    /// with arguments built from these descriptors: a certificate for PTX that did not pass the
    /// audit lets safe code store unclamped values to a parameter buffer.
    ///
    /// # Errors
    ///
    /// A [`CertificateError`] if `kernels` are not all of one set.
    #[doc(hidden)]
    pub unsafe fn issue(
        ptx: &str,
        kernels: &[&KernelDescriptor],
        adamant_build_version: &str,
    ) -> Result<Certificate, CertificateError> {
        let (set, kernels) = kernel_list::listed(kernels).map_err(|e| CertificateError {
            set: None,
            reason: e.to_string(),
        })?;
        Ok(Certificate {
            set,
            ptx_sha256: ptx_sha256(ptx),
            adamant_build_version: adamant_build_version.to_string(),
            kernels,
        })
    }

    /// The certificate as the JSON file the build writes.
    pub fn to_json(&self) -> String {
        let wire = Wire {
            format: FORMAT.to_string(),
            set: self.set.clone(),
            ptx_sha256: self.ptx_sha256.clone(),
            adamant_build_version: self.adamant_build_version.clone(),
            kernels: self.kernels.clone(),
        };
        serde_json::to_string_pretty(&wire).expect("a certificate is plain JSON data")
    }

    /// Reads a certificate written by [`Certificate::to_json`].
    ///
    /// # Errors
    ///
    /// A [`CertificateError`] for text that is not JSON, has no `format` tag or another one
    /// than [`FORMAT`], lacks a field or has one more, has a digest that is not 64 lowercase
    /// hex digits, or lists an entry twice.
    pub fn from_json(json: &str) -> Result<Certificate, CertificateError> {
        // The tag first, on the loosest reading: a certificate of another format is refused as
        // that, not as whatever field of ours it happens to lack.
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| CertificateError {
                set: None,
                reason: format!("not JSON ({e})"),
            })?;
        let set = value.get("set").and_then(|s| s.as_str()).map(String::from);
        let refuse = |reason: String| CertificateError {
            set: set.clone(),
            reason,
        };
        match value.get("format").and_then(|f| f.as_str()) {
            Some(FORMAT) => {}
            Some(other) => {
                return Err(refuse(format!(
                    "unknown certificate format `{other}` (this build reads `{FORMAT}`)"
                )))
            }
            None => {
                return Err(refuse(format!(
                    "no `format` tag: not an adamant audit certificate (`{FORMAT}`)"
                )))
            }
        }
        let wire: Wire = serde_json::from_value(value)
            .map_err(|e| refuse(format!("malformed certificate: {e}")))?;
        let hex_digit = |c: char| c.is_ascii_digit() || ('a'..='f').contains(&c);
        if wire.ptx_sha256.len() != 64 || !wire.ptx_sha256.chars().all(hex_digit) {
            return Err(refuse(format!(
                "malformed certificate: `ptx_sha256` is `{}`, not 64 lowercase hex digits",
                wire.ptx_sha256
            )));
        }
        let mut names = BTreeSet::new();
        if let Some(twice) = wire.kernels.iter().find(|k| !names.insert(&k.name)) {
            return Err(refuse(format!(
                "malformed certificate: it lists entry `{}` twice",
                twice.name
            )));
        }
        Ok(Certificate {
            set: wire.set,
            ptx_sha256: wire.ptx_sha256,
            adamant_build_version: wire.adamant_build_version,
            kernels: wire.kernels,
        })
    }

    /// The kernel set the module holds.
    pub fn set(&self) -> &str {
        &self.set
    }

    /// The SHA-256 of the audited PTX text, in lowercase hex ([`ptx_sha256`]).
    pub fn ptx_sha256(&self) -> &str {
        &self.ptx_sha256
    }

    /// The version of `adamant-build` whose audit passed.
    pub fn adamant_build_version(&self) -> &str {
        &self.adamant_build_version
    }

    /// The kernels the module was checked and audited against, in the order the build had them.
    pub fn kernels(&self) -> &[ListedKernel] {
        &self.kernels
    }

    /// [`Certificate::kernels`] as descriptors of [`Certificate::set`], leaked (for a tool that
    /// audits the module again without linking its kernel crate): read once per process.
    pub fn descriptors(&self) -> Vec<&'static KernelDescriptor> {
        kernel_list::descriptors(self.set.clone(), self.kernels.clone())
    }
}

/// The SHA-256 of `ptx`'s UTF-8 bytes, in lowercase hex: the digest a certificate names.
pub fn ptx_sha256(ptx: &str) -> String {
    Sha256::digest(ptx.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
