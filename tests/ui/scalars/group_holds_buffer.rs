// A group holds scalars only: buffers are each kernel's own arguments (a kernel declares the
// buffers it reads and writes, and the audit holds it to them).
use adamant_device::scalar_group;

#[scalar_group]
pub struct WithMoments {
    #[hyper]
    lr: f32,
    #[state]
    m: &'static mut f32,
    #[input]
    g: f32,
    #[uniform_ptr(default = 1.0)]
    scale: f32,
}

fn main() {}
