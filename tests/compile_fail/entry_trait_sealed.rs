// `OptimizerEntry` is sealed by the `unsafe trait GeneratedEntry`, which only #[optimizer_kernel]
// implements (with `unsafe impl`). A hand-written entry that reuses a generated descriptor, to
// launch the real kernel with arguments of its own, does not compile without the seal...
use adamant_kernels::abi::{ArgValue, KernelDescriptor, OptimizerEntry};
use adamant_kernels::optimizers::iqn_adam_kernel;

struct Forged;

impl OptimizerEntry for Forged {
    const DESCRIPTOR: &'static KernelDescriptor = &iqn_adam_kernel::DESCRIPTOR;
    const MULTI_DESCRIPTOR: &'static KernelDescriptor = &iqn_adam_kernel::MULTI_DESCRIPTOR;
    type Buffers<T> = iqn_adam_kernel::Buffers<T>;
    type Scalars = ();
    fn named_buffers<T>(_: &Self::Buffers<T>) -> Vec<(&'static str, &T)> {
        Vec::new()
    }
    fn named_buffers_mut<T>(_: &mut Self::Buffers<T>) -> Vec<(&'static str, &mut T)> {
        Vec::new()
    }
    fn map_buffers<T, U>(
        _: &Self::Buffers<T>,
        _: impl FnMut(&'static str, &T) -> U,
    ) -> Self::Buffers<U> {
        unimplemented!()
    }
    fn scalar_values(_: &()) -> Vec<ArgValue> {
        vec![ArgValue::F32(f32::NAN)]
    }
}

fn main() {}
