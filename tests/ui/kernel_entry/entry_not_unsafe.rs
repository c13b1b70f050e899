// #[kernel_entry] is for an `unsafe extern "gpu-kernel" fn`.
use adamant_device::kernel_entry;

#[kernel_entry]
pub extern "gpu-kernel" fn count(#[output] out: *mut u32, n: usize) {
    let _ = (out, n);
}

fn main() {}
