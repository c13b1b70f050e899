// An #[input] is read only: a `*mut` would let the entry write the buffer it scans.
use adamant_device::kernel_entry;

#[kernel_entry]
pub unsafe extern "gpu-kernel" fn count(#[input] data: *mut f32, #[output] out: *mut u32) {
    *out = *data as u32;
}

fn main() {}
