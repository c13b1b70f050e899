// A kernel that writes parameters is an optimizer kernel, with the clamp: not a #[kernel_entry].
use adamant_device::kernel_entry;

#[kernel_entry]
pub unsafe extern "gpu-kernel" fn soft_update(#[param] target: *mut f32, #[input] online: *const f32) {
    *target = *online;
}

fn main() {}
