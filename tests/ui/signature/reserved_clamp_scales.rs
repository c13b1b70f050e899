// `weight_clamp_scales` is the multi-tensor entry's per-tensor clamp scale table: a kernel that
// declared it would shadow the scales the generated entry clamps with.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn sgd(#[param] p: f32, #[input] g: f32, #[uniform_ptr] weight_clamp_scales: f32) -> f32 {
    p - g * weight_clamp_scales
}

fn main() {}
