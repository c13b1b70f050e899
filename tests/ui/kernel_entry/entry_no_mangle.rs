// #[kernel_entry] exports the entry itself.
use adamant_device::kernel_entry;

#[kernel_entry]
#[no_mangle]
pub unsafe extern "gpu-kernel" fn count(#[output] out: *mut u32, n: usize) {
    *out = n as u32;
}

fn main() {}
