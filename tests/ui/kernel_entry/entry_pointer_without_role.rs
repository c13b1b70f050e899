// Every pointer of a #[kernel_entry] declares what the entry does with it.
use adamant_device::kernel_entry;

#[kernel_entry]
pub unsafe extern "gpu-kernel" fn count(#[input] data: *const f32, out: *mut u32, n: usize) {
    *out = (*data) as u32 + n as u32;
}

fn main() {}
