// A stochastic store hashes the step number and the run's seed into its random words: a kernel
// that declares one without taking them (StochasticRounding) would have nothing to hash.
use adamant_device::optimizer_kernel;
use adamant_device::scalar_groups::{Adam, BiasCorrections};
use adamant_device::adam::{adam_step, AdamScalars};

#[optimizer_kernel]
pub fn adam_sr(
    #[param(bf16, stochastic)] p: f32,
    #[grad(bf16)] g: f32,
    #[state] m: &mut f32,
    #[state] v: &mut f32,
    #[group] adam: Adam,
    #[group] bc: BiasCorrections,
) -> f32 {
    let s: AdamScalars = adam.with(bc);
    adam_step(p, g, m, v, s)
}

fn main() {}
