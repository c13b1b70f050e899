// One role per pointer.
use adamant_device::kernel_entry;

#[kernel_entry]
pub unsafe extern "gpu-kernel" fn count(#[input] #[index] data: *const u32, #[output] out: *mut u32) {
    *out = *data;
}

fn main() {}
