// A launch borrows the buffers it writes mutably: the same parameter buffer as the launch's
// `#[param]` and one of its `#[input]`s (a written buffer aliasing a read one) does not compile.
use adamant_kernels::soft_update::soft_update_kernel;
use adamant_runtime::{Adamant, ClampPolicy, ParamBuffer, Records};

fn launch(rt: &Adamant, target: &mut ParamBuffer) {
    let records = Records::single::<soft_update_kernel::Entry>().unwrap();
    let buffers = soft_update_kernel::Buffers {
        target: &mut *target,
        online: target.input(),
    };
    let _ = rt.launch::<soft_update_kernel::Entry>(rt.stream())
        .plain(&soft_update_kernel::Scalars { tau: 0.5 }, ClampPolicy::Fixed { bound: 1.0 })
        .buffers(&buffers, &records);
}

fn main() {}
