//! A kernel set written next to its PTX (`<lib>.kernels.json`), so that a tool that does not link
//! the kernel crate, such as `adamant audit --ptx X.ptx --kernels X.kernels.json`, audits the
//! module against the same descriptors its build did. The JSON mirrors the descriptor types
//! field for field; reading it back gives descriptors equal to the ones written.
use adamant_kernels::abi::{KernelDescriptor, KernelKind, KernelParam, ParamRole, ParamType};
use serde::{Deserialize, Serialize};

use crate::error::BuildError;

// The descriptor's string-free parts (kind, type, role with its domain) are the abi's own types,
// serialised as they are; only the names need owned mirrors here.

#[derive(Serialize, Deserialize)]
struct List {
    set: String,
    kernels: Vec<Kernel>,
}

#[derive(Serialize, Deserialize)]
struct Kernel {
    name: String,
    defined_at: String,
    kind: KernelKind,
    params: Vec<Param>,
}

#[derive(Serialize, Deserialize)]
struct Param {
    name: String,
    #[serde(rename = "type")]
    ty: ParamType,
    role: ParamRole,
}

/// `kernels` (one set) as JSON.
///
/// # Errors
///
/// A [`BuildError`] if the kernels are not all of one set.
pub fn to_json(kernels: &[&KernelDescriptor]) -> Result<String, BuildError> {
    let set = kernels.first().map_or("", |k| k.set);
    if let Some(other) = kernels.iter().find(|k| k.set != set) {
        return Err(BuildError::new(format!(
            "a kernel list holds one set: `{}` is of `{}`, not `{set}`",
            other.name, other.set
        )));
    }
    let list = List {
        set: set.to_string(),
        kernels: kernels
            .iter()
            .map(|k| Kernel {
                name: k.name.to_string(),
                defined_at: k.defined_at.to_string(),
                kind: k.kind,
                params: k
                    .params
                    .iter()
                    .map(|p| Param {
                        name: p.name.to_string(),
                        ty: p.ty,
                        role: p.role,
                    })
                    .collect(),
            })
            .collect(),
    };
    serde_json::to_string_pretty(&list)
        .map_err(|e| BuildError::new(format!("writing the kernel list: {e}")))
}

/// The descriptors of a list written by [`to_json`]. They are leaked (`'static`, as registered
/// descriptors are): read a list once per process.
///
/// # Errors
///
/// A [`BuildError`] naming what is malformed.
pub fn from_json(json: &str) -> Result<Vec<&'static KernelDescriptor>, BuildError> {
    let list: List = serde_json::from_str(json)
        .map_err(|e| BuildError::new(format!("reading the kernel list: {e}")))?;
    let set = leak(list.set);
    Ok(list
        .kernels
        .into_iter()
        .map(|k| {
            let params: Vec<KernelParam> = k
                .params
                .into_iter()
                .map(|p| KernelParam {
                    name: leak(p.name),
                    ty: p.ty,
                    role: p.role,
                })
                .collect();
            &*Box::leak(Box::new(KernelDescriptor {
                set,
                defined_at: leak(k.defined_at),
                name: leak(k.name),
                kind: k.kind,
                params: Box::leak(params.into_boxed_slice()),
            }))
        })
        .collect())
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adamants_set_round_trips_field_for_field() {
        let ours = adamant_kernels::abi::kernels();
        let json = to_json(&ours).unwrap();
        let back = from_json(&json).unwrap();
        assert_eq!(back.len(), ours.len());
        for (a, b) in ours.iter().zip(&back) {
            assert_eq!(*a, *b, "{}", a.name);
        }
        // Every role the abi has appears in adamant's set but the ones only a test kernel uses;
        // a changed domain must change the JSON.
        assert!(json.contains("\"exclusive\": 1.0"), "{json}");
    }

    #[test]
    fn a_list_of_two_sets_or_bad_json_is_refused() {
        let mut mixed = adamant_kernels::abi::kernels();
        let other: &'static KernelDescriptor = Box::leak(Box::new(KernelDescriptor {
            set: "other",
            ..*mixed[0]
        }));
        mixed.push(other);
        assert!(to_json(&mixed).unwrap_err().to_string().contains("one set"));
        assert!(from_json("{\"set\": 3}").is_err());
    }
}
