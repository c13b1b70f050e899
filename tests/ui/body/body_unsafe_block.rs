use adamant_device::optimizer_kernel;

// An unsafe block could write memory through a made-up address, past the clamp.
#[optimizer_kernel]
pub fn sneaky(#[param] p: f32, #[input] g: f32) -> f32 {
    unsafe {
        core::ptr::write_volatile(0x1000 as *mut f32, p);
    }
    p - g
}

fn main() {}
