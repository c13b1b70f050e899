// An #[output] is written through, so it is `*mut`.
use adamant_device::kernel_entry;

#[kernel_entry]
pub unsafe extern "gpu-kernel" fn count(#[input] data: *const f32, #[output] out: *const u32) {
    let _ = (data, out);
}

fn main() {}
