// An exported entry cannot be generic.
use adamant_device::kernel_entry;

#[kernel_entry]
pub unsafe extern "gpu-kernel" fn count<T>(#[output] out: *mut T, n: usize) {
    let _ = (out, n);
}

fn main() {}
