// A parameter buffer is its own type, and only a kernel's `#[param]` slot takes it mutably: as
// another launch's `#[state]` (which the kernel writes without the clamp) it does not compile.
use adamant_kernels::optimizers::iqn_adam_kernel;
use adamant_runtime::{
    adam_scalars, AdamHyper, Adamant, ClampPolicy, DeviceArray, ParamBuffer, Records,
};

fn launch(rt: &Adamant, params: &mut ParamBuffer, others: &mut ParamBuffer) {
    let (g, mut v) = (DeviceArray::zeroed(4).unwrap(), DeviceArray::zeroed(4).unwrap());
    let hyper = AdamHyper::pytorch_defaults(1).unwrap();
    let scalars = adam_scalars!(iqn_adam_kernel, hyper, weight_decay: 0.0).unwrap();
    let records = Records::single::<iqn_adam_kernel::Entry>().unwrap();
    let buffers = iqn_adam_kernel::Buffers {
        p: params,
        g: g.input(),
        m: others,
        v: &mut v,
    };
    let _ = rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
        .plain(&scalars, ClampPolicy::Fixed { bound: 1.0 })
        .buffers(&buffers, &records);
}

fn main() {}
