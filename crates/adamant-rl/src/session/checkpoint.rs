//! A training session to and from a checkpoint file: every group (its parameters and Adam
//! state, for the kernel its rule steps it with), every step-state record (step numbers, lr,
//! hyperparameters, guards, bounds), the owned `Q_ABS_REF` and the device `grad_scale`. A
//! restore checks the whole file against the session before anything on the device is
//! written, and writes in place: a captured graph replays the restored state with no recapture.
use std::path::Path;

use adamant_runtime::checkpoint::{Checkpoint, CheckpointError, PendingSnapshot, Snapshot};
use adamant_runtime::{Error, Result};

use super::TrainingSession;
use crate::optimizer_launch::GroupRule;

/// The metadata key of the device `grad_scale`'s value.
const GRAD_SCALE_KEY: &str = "adamant_rl.grad_scale";

impl TrainingSession<'_> {
    /// Saves the session's state after the steps enqueued so far to `path` (atomically: a
    /// failed save leaves the previous file whole): each group under its name
    /// (`<group>`, `<group>.exp_avg`, `<group>.exp_avg_sq`, `<group>.max_exp_avg_sq`) with its
    /// kernel and step count, the records, and `grad_scale`. The NaN checker's activations are
    /// the application's, not saved.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] for the copies; [`Error::Checkpoint`] if the file cannot be written.
    pub fn save(&self, path: &Path) -> Result<()> {
        let stream = self.rt.stream();
        let mut ck = Checkpoint::new();
        ck.save_steps(&self.states, stream)?;
        for (record, group) in self.groups.every().into_iter().enumerate() {
            let rule = GroupRule::of(record, group.has_amsgrad());
            ck.save_group(
                group,
                rule.descriptor(),
                Some((&self.states, record)),
                stream,
            )?;
        }
        ck.set_metadata(GRAD_SCALE_KEY, &format!("{:?}", self.grad_scale_value))?;
        ck.save(path)?;
        Ok(())
    }

    /// Restores the state [`TrainingSession::save`] wrote into this session, whose groups
    /// (names, sizes, rules) and records (kernels, guards, bound modes) must be those of the
    /// session that saved it. Everything is checked before anything is written; the writes are
    /// in place, so a captured graph goes on from the restored state.
    ///
    /// # Errors
    ///
    /// [`Error::Checkpoint`] naming the file and the tensor or key (a missing or damaged file,
    /// a group of another size or kernel, a NaN in a moment); [`Error::RecordRestore`] naming
    /// the record; [`Error::Cuda`] for the copies. Nothing is written on any error but the last.
    pub fn load(&mut self, path: &Path) -> Result<()> {
        let ck = Checkpoint::load(path)?;
        let grad_scale = ck.metadata(GRAD_SCALE_KEY)?;
        let grad_scale: f32 = grad_scale
            .parse()
            .ok()
            .filter(|v: &f32| v.is_finite())
            .ok_or_else(|| {
                Error::Checkpoint(CheckpointError::Metadata {
                    path: path.to_path_buf(),
                    key: GRAD_SCALE_KEY.into(),
                    expected: "a finite f32".into(),
                    found: Some(grad_scale.to_string()),
                })
            })?;
        let mut restore = ck.restore();
        for (record, group) in self.groups.every_mut().into_iter().enumerate() {
            let rule = GroupRule::of(record, group.has_amsgrad());
            restore.group(group, rule.descriptor())?;
        }
        restore.steps(&self.states)?;
        restore.commit(self.rt.stream())?;
        self.set_grad_scale(grad_scale)
    }

    /// [`TrainingSession::save`]'s state, copied on the device after the steps enqueued so far
    /// (a [`Snapshot`]): the next steps can be enqueued at once, and the copies read (on
    /// another stream, or another thread) and saved meanwhile:
    /// `session.snapshot()?.read(&side)?.save(path)`. A file written so is one
    /// [`TrainingSession::load`] reads.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfMemory`] for the copies (the saved state's size again);
    /// [`Error::Cuda`].
    pub fn snapshot(&self) -> Result<PendingSnapshot> {
        let stream = self.rt.stream();
        let mut snapshot = Snapshot::new();
        snapshot.steps(&self.states, stream)?;
        for (record, group) in self.groups.every().into_iter().enumerate() {
            let rule = GroupRule::of(record, group.has_amsgrad());
            snapshot.group(group, rule.descriptor(), Some(record), stream)?;
        }
        snapshot.set_metadata(GRAD_SCALE_KEY, &format!("{:?}", self.grad_scale_value))?;
        snapshot.finish(stream)
    }
}
