//! Every optimizer launch path ends in one of two functions, and both name the entry in every
//! error they return (`Error::in_kernel`: inside an [`Error::InKernel`] unless the error names
//! it already): a clamp policy's, a step-state index's, a capture's or the driver's error says
//! which kernel's launch it stopped.
use adamant_kernels::abi::OptimizerEntry;
use cust::stream::Stream;

use crate::buffers::LaunchKinds;
use crate::device::Adamant;
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::launch::LaunchInfo;
use crate::launch_check::Uniforms;
use crate::multi::TensorSet;
use crate::records::Records;

impl Adamant {
    /// The single-buffer launch path (`launch_single_unnamed`), its errors naming the entry.
    pub(crate) fn launch_single<E: OptimizerEntry, K: LaunchKinds>(
        &self,
        stream: &Stream,
        buffers: &E::Buffers<K>,
        uniforms: Uniforms<'_, E>,
        records: &Records,
    ) -> Result<LaunchInfo> {
        let kernel = uniforms.descriptor(false).name;
        self.launch_single_unnamed::<E, K>(stream, buffers, uniforms, records)
            .map_err(|e| e.in_kernel(kernel))
    }

    /// The multi-tensor launch path (`launch_set_unnamed`), its errors naming the entry.
    pub(crate) fn launch_set<E: OptimizerEntry, K: LaunchKinds>(
        &self,
        stream: &Stream,
        set: &mut TensorSet,
        tensors: &[E::Buffers<K>],
        uniforms: Uniforms<'_, E>,
    ) -> Result<LaunchInfo> {
        let kernel = uniforms.descriptor(true).name;
        self.launch_set_unnamed::<E, K>(stream, set, tensors, uniforms)
            .map_err(|e| e.in_kernel(kernel))
    }
}
