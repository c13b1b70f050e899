// An exported entry cannot be generic.
use adamant_device::kernel_entry;

#[kernel_entry]
pub unsafe extern "gpu-kernel" fn count(#[output] out: *mut u32, n: usize)
where
    u32: Copy,
{
    *out = n as u32;
}

fn main() {}
