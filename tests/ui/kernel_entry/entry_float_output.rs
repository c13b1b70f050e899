// The target network's soft update written as a plain entry: `target` is a parameter buffer, and
// an entry that writes floats could write one with no clamp. Entries write integer report words
// only; the soft update is `soft_update_kernel`, an optimizer kernel.
use adamant_device::kernel_entry;

#[kernel_entry]
pub unsafe extern "gpu-kernel" fn soft_update(
    #[output] target: *mut f32,
    #[input] online: *const f32,
    tau: f32,
    len: usize,
) {
    let _ = (target, online, tau, len);
}

fn main() {}
