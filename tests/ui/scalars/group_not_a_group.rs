// A plain struct is no scalar group: its fields carry no lifetime or domain, and no macro hands
// them to the kernel. The error says so at the type.
use adamant_device::optimizer_kernel;

pub struct Plain {
    pub lr: f32,
}

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[group] s: Plain) -> f32 {
    p - s.lr * g
}

fn main() {}
