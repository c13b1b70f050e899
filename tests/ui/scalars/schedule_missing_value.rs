// A schedule returns every `#[derived]` scalar of its step: one it forgets is a compile error
// (the struct literal is missing a field), never a value left over from step 1.
use adamant_device::optimizer_kernel;

fn schedule(t: u32, h: &decayed::Hyper, d: &decayed::Derived) -> decayed::Derived {
    decayed::Derived {
        decay: d.decay * h.rate,
    }
}

#[optimizer_kernel(schedule = schedule)]
pub fn decayed(
    #[param] p: f32,
    #[input] g: f32,
    #[hyper] rate: f32,
    #[derived(init = 1.0)] decay: f32,
    #[derived(init = 0)] steps: u32,
) -> f32 {
    p - decay * g * (steps as f32)
}

fn main() {}
