// An #[index] table is read only, like an input.
use adamant_device::kernel_entry;

#[kernel_entry]
pub unsafe extern "gpu-kernel" fn count(#[index] ranges: *mut u32, #[output] out: *mut u32) {
    *out = *ranges;
}

fn main() {}
