// `OptimizerEntry` is sealed by the `unsafe trait GeneratedEntry`, which only #[optimizer_kernel]
// implements (with `unsafe impl`). A hand-written entry that reuses a generated descriptor, to
// launch the real kernel with arguments of its own, does not compile without the seal...
use adamant_device::abi::{ArgValue, BufferKinds, BufferRef, KernelDescriptor, OptimizerEntry};
use adamant_kernels::optimizers::iqn_adam_kernel;

struct Forged;

impl OptimizerEntry for Forged {
    const DESCRIPTOR: &'static KernelDescriptor = &iqn_adam_kernel::DESCRIPTOR;
    const MULTI_DESCRIPTOR: &'static KernelDescriptor = &iqn_adam_kernel::MULTI_DESCRIPTOR;
    type Buffers<K: BufferKinds> = iqn_adam_kernel::Buffers<K>;
    type Scalars = ();
    fn visit_buffers<'b, K: BufferKinds>(
        _: &'b Self::Buffers<K>,
        _: &mut dyn FnMut(&'static str, BufferRef<'b, K>),
    ) {
    }
    fn scalar_values(_: &()) -> Vec<ArgValue> {
        vec![ArgValue::F32(f32::NAN)]
    }
}

fn main() {}
