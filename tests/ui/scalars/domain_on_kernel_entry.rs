// #[kernel_entry] scalars take any value; a #[domain] there would promise a check no launch makes.
use adamant_device::kernel_entry;

#[kernel_entry]
pub unsafe extern "gpu-kernel" fn count(#[output] out: *mut u32, #[domain(ge = 0.0)] x: f32) {
    *out = x as u32;
}

fn main() {}
