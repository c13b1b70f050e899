// `#[domain]` promises a launch-time check; a `#[derived]` value is computed on the device,
// where no launch check reads it.
use adamant_device::optimizer_kernel;

fn schedule(_t: u32, _h: &decayed::Hyper, d: &decayed::Derived) -> decayed::Derived {
    decayed::Derived { decay: d.decay * 0.5 }
}

#[optimizer_kernel(schedule = schedule)]
pub fn decayed(
    #[param] p: f32,
    #[input] g: f32,
    #[derived(init = 1.0)]
    #[domain(gt = 0.0)]
    decay: f32,
) -> f32 {
    p - decay * g
}

fn main() {}
