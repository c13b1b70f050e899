// #[kernel_entry] takes no arguments.
use adamant_device::kernel_entry;

#[kernel_entry(optimizer)]
pub unsafe extern "gpu-kernel" fn count(#[output] out: *mut u32, n: usize) {
    *out = n as u32;
}

fn main() {}
