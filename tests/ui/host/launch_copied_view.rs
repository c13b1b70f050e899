// cust's `DeviceSlice` is `Copy`: a view copied out of a buffer borrows nothing, so it can outlive
// its allocation (a graph replaying into freed memory) or be a parameter buffer passed as a
// state. The safe launches take only the runtime's own buffers, so such a view does not compile.
use adamant_kernels::optimizers::iqn_adam_kernel;
use adamant_runtime::cust::memory::{DeviceBuffer, DeviceSlice};
use adamant_runtime::{adam_scalars, AdamHyper, Adamant, ClampPolicy, DeviceArray, Records};

fn launch(rt: &Adamant, foreign: &DeviceBuffer<f32>) {
    let mut copied: DeviceSlice<f32> = **foreign;
    let (g, mut m, mut v) = (
        DeviceArray::zeroed(4).unwrap(),
        DeviceArray::zeroed(4).unwrap(),
        DeviceArray::zeroed(4).unwrap(),
    );
    let hyper = AdamHyper::pytorch_defaults(1).unwrap();
    let scalars = adam_scalars!(iqn_adam_kernel, hyper, weight_decay: 0.0).unwrap();
    let records = Records::single::<iqn_adam_kernel::Entry>().unwrap();
    let buffers = iqn_adam_kernel::Buffers {
        p: &mut copied,
        g: g.input(),
        m: &mut m,
        v: &mut v,
    };
    let _ = rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
        .plain(&scalars, ClampPolicy::Fixed { bound: 1.0 })
        .buffers(&buffers, &records);
}

fn main() {}
