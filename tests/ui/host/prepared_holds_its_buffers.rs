// A prepared launch holds the buffers it was checked over until it is dropped: its arguments are
// their addresses, enqueued again and again without a check. Freeing the parameter buffer (or
// the records) while it may still be enqueued does not compile.
use adamant_kernels::soft_update::soft_update_kernel;
use adamant_runtime::{Adamant, ClampPolicy, DeviceArray, ParamBuffer, Records};

fn run(rt: &Adamant) {
    let records = Records::single::<soft_update_kernel::Entry>().unwrap();
    let mut target = ParamBuffer::filled(8, 0.5).unwrap();
    let online = DeviceArray::filled(8, 0.25).unwrap();
    let tau = soft_update_kernel::Scalars { tau: 0.5 };
    let mut prepared = rt
        .launch::<soft_update_kernel::Entry>(rt.stream())
        .plain(&tau, ClampPolicy::Fixed { bound: 1.0 })
        .prepare(
            soft_update_kernel::Buffers {
                target: &mut target,
                online: online.input(),
            },
            &records,
        )
        .unwrap();
    drop(target);
    drop(records);
    let _ = prepared.enqueue();
}

fn main() {}
