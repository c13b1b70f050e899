// Entry arguments are plain names (the descriptor records them).
use adamant_device::kernel_entry;

#[kernel_entry]
pub unsafe extern "gpu-kernel" fn count((out, n): (*mut u32, usize)) {
    *out = n as u32;
}

fn main() {}
