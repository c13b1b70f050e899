// Optimizer state belongs to optimizer kernels too.
use adamant_device::kernel_entry;

#[kernel_entry]
pub unsafe extern "gpu-kernel" fn reset(#[state] m: *mut f32, n: usize) {
    *m.add(n) = 0.0;
}

fn main() {}
