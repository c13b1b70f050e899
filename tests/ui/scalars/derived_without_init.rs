// A `#[derived]` scalar states its value before the first step, from which the schedule
// computes step 1's.
use adamant_device::optimizer_kernel;

fn schedule(_t: u32, _h: &decayed::Hyper, d: &decayed::Derived) -> decayed::Derived {
    decayed::Derived { decay: d.decay * 0.5 }
}

#[optimizer_kernel(schedule = schedule)]
pub fn decayed(#[param] p: f32, #[input] g: f32, #[derived] decay: f32) -> f32 {
    p - decay * g
}

fn main() {}
