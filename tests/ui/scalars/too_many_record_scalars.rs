// A step-state record holds 16 words of a kernel's own scalars: a kernel with more does not
// compile (a record that silently dropped one would hand the entry another scalar's value).
use adamant_device::optimizer_kernel;

#[optimizer_kernel]
#[allow(clippy::too_many_arguments)]
pub fn wide(
    #[param] p: f32,
    #[input] g: f32,
    #[hyper] a0: f32,
    #[hyper] a1: f32,
    #[hyper] a2: f32,
    #[hyper] a3: f32,
    #[hyper] a4: f32,
    #[hyper] a5: f32,
    #[hyper] a6: f32,
    #[hyper] a7: f32,
    #[hyper] a8: f32,
    #[hyper] a9: f32,
    #[hyper] a10: f32,
    #[hyper] a11: f32,
    #[hyper] a12: f32,
    #[hyper] a13: f32,
    #[hyper] a14: f32,
    #[hyper] a15: f32,
    #[hyper] a16: f32,
) -> f32 {
    p - g * (a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15 + a16)
}

fn main() {}
