//! A [`TensorSet`]'s per-tensor clamp scales in a checkpoint. They are the application's
//! configuration, set by its code before the first launch (and so before a restore): a restore
//! does not replace them (a new table would not be the one a captured graph reads), it checks
//! that the set resuming the run has the scales the saved run had, since other scales would
//! clamp to other bounds and the run would silently diverge from the one saved.
use super::state::Restore;
use super::{Checkpoint, CheckpointError, TensorKind};
use crate::error::Result;
use crate::multi::TensorSet;

/// The tensor holding set `set`'s clamp scales.
pub fn clamp_scales_name(set: &str) -> String {
    format!("{set}.clamp_scales")
}

impl Checkpoint {
    /// Adds the clamp scales of `tensors` (a set named `set`), if it has any
    /// ([`TensorSet::set_clamp_scales`]), as [`clamp_scales_name`]. A set whose tensors all
    /// clamp at the launch's bound adds nothing.
    ///
    /// # Errors
    ///
    /// [`CheckpointError::BadTensor`] for a name already in the checkpoint.
    pub fn save_clamp_scales(
        &mut self,
        set: &str,
        tensors: &TensorSet,
    ) -> Result<(), CheckpointError> {
        match tensors.clamp_scales() {
            Some(scales) => self.insert_f32(&clamp_scales_name(set), scales),
            None => Ok(()),
        }
    }
}

impl Restore<'_, '_> {
    /// Checks that `tensors` (set `set`) clamps with the scales the saved run had: the same
    /// values bit for bit, or none on both sides. Writes nothing.
    ///
    /// # Errors
    ///
    /// [`CheckpointError::Metadata`] naming [`clamp_scales_name`] and both sides' scales.
    pub fn clamp_scales(&mut self, set: &str, tensors: &TensorSet) -> Result<()> {
        let name = clamp_scales_name(set);
        let saved: Option<Vec<f32>> = match self.checkpoint().get(&name) {
            Some(t) if t.kind == TensorKind::F32 && t.shape.len() == 1 => {
                Some(self.checkpoint().f32s(&name, t.shape[0], false)?)
            }
            Some(t) => {
                return Err(CheckpointError::Dtype {
                    path: self.checkpoint().path.clone(),
                    name,
                    expected: "F32, one dimension",
                    found: format!("{} {:?}", t.kind.name(), t.shape),
                }
                .into())
            }
            None => None,
        };
        let bits = |s: &[f32]| s.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        let ours = tensors.clamp_scales();
        if saved.as_deref().map(bits) == ours.map(bits) {
            return Ok(());
        }
        let describe = |s: Option<&[f32]>| {
            s.map_or(
                "none (every tensor at the launch's bound)".to_string(),
                |s| format!("{s:?}"),
            )
        };
        Err(CheckpointError::Metadata {
            path: self.checkpoint().path.clone(),
            key: name,
            expected: describe(ours),
            found: Some(describe(saved.as_deref())),
        }
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A set without scales resumes a run saved without them, and refuses one saved with
    /// some (a set with scales needs a device: `tests/gpu/resume.rs` has the other cases).
    #[test]
    fn scales_must_be_those_of_the_saved_run() {
        let set = TensorSet::new();
        let mut saved = Checkpoint::new();
        saved.save_clamp_scales("body", &set).unwrap();
        assert_eq!(saved.names().count(), 0, "no scales, nothing saved");
        saved.restore().clamp_scales("body", &set).unwrap();

        saved.insert_f32("body.clamp_scales", &[1.0, 0.5]).unwrap();
        match saved.restore().clamp_scales("body", &set) {
            Err(crate::Error::Checkpoint(CheckpointError::Metadata {
                key,
                expected,
                found,
                ..
            })) => {
                assert_eq!(key, "body.clamp_scales");
                assert!(expected.starts_with("none"), "{expected}");
                assert_eq!(found.as_deref(), Some("[1.0, 0.5]"));
            }
            other => panic!("{other:?}"),
        }
        let mut odd = Checkpoint::new();
        odd.insert_u16("body.clamp_scales", TensorKind::Bf16, &[0x3f80])
            .unwrap();
        assert!(matches!(
            odd.restore().clamp_scales("body", &set),
            Err(crate::Error::Checkpoint(CheckpointError::Dtype { .. }))
        ));
    }
}
