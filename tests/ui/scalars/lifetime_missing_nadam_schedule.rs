// NAdam's momentum schedule μ_t changes every step. Declared as a scalar without a lifetime, a
// stepped entry would have had to take it as a launch argument, and a captured graph would
// replay step 1's μ_t forever: every scalar must say how long its value lives.
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
pub fn nadam_like(
    #[param] p: f32,
    #[input] g: f32,
    #[state] m: &mut f32,
    #[step] lr: f32,
    mu_t: f32,
) -> f32 {
    *m = mu_t * *m + (1.0 - mu_t) * g;
    p - lr * *m
}

fn main() {}
