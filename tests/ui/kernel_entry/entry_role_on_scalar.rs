// Roles describe pointers; a scalar has none.
use adamant_device::kernel_entry;

#[kernel_entry]
pub unsafe extern "gpu-kernel" fn count(#[output] out: *mut u32, #[input] n: u32) {
    *out = n;
}

fn main() {}
