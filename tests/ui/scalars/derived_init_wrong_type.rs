// The initial value of a `u32` scalar is an integer literal.
use adamant_device::optimizer_kernel;

fn schedule(_t: u32, _h: &counted::Hyper, d: &counted::Derived) -> counted::Derived {
    counted::Derived { steps: d.steps + 1 }
}

#[optimizer_kernel(schedule = schedule)]
pub fn counted(#[param] p: f32, #[input] g: f32, #[derived(init = 0.5)] steps: u32) -> f32 {
    p - g * (steps as f32)
}

fn main() {}
