// #[kernel_entry] exports the entry itself, under its own name.
use adamant_device::kernel_entry;

#[kernel_entry]
#[unsafe(export_name = "adam_step")]
pub unsafe extern "gpu-kernel" fn count(#[output] out: *mut u32, n: usize) {
    *out = n as u32;
}

fn main() {}
