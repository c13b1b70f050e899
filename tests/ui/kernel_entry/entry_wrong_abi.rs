// #[kernel_entry] is for an `unsafe extern "gpu-kernel" fn`.
use adamant_device::kernel_entry;

#[kernel_entry]
pub unsafe extern "C" fn count(#[output] out: *mut u32, n: usize) {
    *out = n as u32;
}

fn main() {}
