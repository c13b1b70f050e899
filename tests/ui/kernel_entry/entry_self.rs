// An entry is a free fn.
use adamant_device::kernel_entry;

#[kernel_entry]
pub unsafe extern "gpu-kernel" fn count(self, n: usize) {
    let _ = n;
}

fn main() {}
