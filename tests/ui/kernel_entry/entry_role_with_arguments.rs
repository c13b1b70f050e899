// Roles take no arguments.
use adamant_device::kernel_entry;

#[kernel_entry]
pub unsafe extern "gpu-kernel" fn count(#[input(len = 4)] data: *const u32, #[output] out: *mut u32) {
    *out = *data;
}

fn main() {}
