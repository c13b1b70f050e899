// The schedule is `fn(t: u32, &Hyper, &Derived) -> Derived`: one of another type is refused by
// the compiler at the path the kernel names.
use adamant_device::optimizer_kernel;

fn schedule(t: f32) -> f32 {
    t
}

#[optimizer_kernel(schedule = schedule)]
pub fn decayed(
    #[param] p: f32,
    #[input] g: f32,
    #[hyper] rate: f32,
    #[derived(init = 1.0)] decay: f32,
) -> f32 {
    p - rate * decay * g
}

fn main() {}
