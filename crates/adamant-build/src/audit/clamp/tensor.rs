//! A multi-tensor entry's clamp: the scale it uses is its own tensor's.
use super::slice::Slice;
use super::{BoundSource, ClampFailure, ClampProver, Unprovable};
use crate::audit::tensor_index::TensorIndex;
use crate::ptx::Operand;

impl<'a> ClampProver<'a> {
    /// A multi-tensor entry: the value must be clamped with a scale, and every scale it depends
    /// on must have been loaded at the index the stored pointer was loaded at.
    pub(super) fn check_tensor(
        &self,
        slice: &Slice<'a>,
        scales: usize,
        address: Option<&'a Operand>,
        table: usize,
    ) -> Result<(), ClampFailure> {
        let unprovable = |reason: Unprovable| ClampFailure::Unprovable { reason };
        if slice.scale_regs.is_empty() {
            return Err(ClampFailure::NoTensorScale);
        }
        let index = TensorIndex {
            flow: self.flow,
            instructions: self.instructions,
        };
        let address = address.ok_or_else(|| unprovable(Unprovable::NoStoreAddress))?;
        let stored = index
            .stored_index(address, table)
            .map_err(|e| unprovable(Unprovable::StoredTensor(e)))?;
        for &load in slice.scale_regs.values() {
            let inst = &self.instructions[load];
            let scale = index
                .load_index(inst, scales, 4)
                .map_err(|e| unprovable(Unprovable::ScaleTensor(e)))?;
            if scale != stored {
                return Err(ClampFailure::OtherTensor {
                    scale_line: inst.line,
                    scale_index: scale.to_string(),
                    pointer_index: stored.to_string(),
                });
            }
        }
        // A fused entry: each bound must be read from the record of the stored tensor, its
        // pointer loaded from the step-state table at the same index.
        if let Some(BoundSource::RecordTable(states)) = self.flow.clamp.map(|c| c.bound) {
            for &reg in &slice.bound_regs {
                let load = self
                    .flow
                    .single_def(reg)
                    .map_err(|e| unprovable(Unprovable::Definition(e)))?;
                let inst = &self.instructions[load];
                let record = self.flow.record_word(inst, states);
                let Some((pointer_load, _)) = record else {
                    return Err(unprovable(Unprovable::BoundRecord { line: inst.line }));
                };
                let at = index
                    .load_index(&self.instructions[pointer_load], states, 8)
                    .map_err(|e| unprovable(Unprovable::BoundTensor(e)))?;
                if at != stored {
                    return Err(ClampFailure::OtherTensorBound {
                        bound_line: inst.line,
                        bound_index: at.to_string(),
                        pointer_index: stored.to_string(),
                    });
                }
            }
        }
        Ok(())
    }
}
