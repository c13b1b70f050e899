// Entry arguments have a PTX parameter type.
use adamant_device::kernel_entry;

#[kernel_entry]
pub unsafe extern "gpu-kernel" fn count(#[output] out: *mut u32, n: f64) {
    *out = n as u32;
}

fn main() {}
