// A kernel whose bf16 weights are rounded stochastically: it takes StochasticRounding (the step
// number and the run's seed, from the record), its descriptor says so, and `element` takes the
// element's random word: up or down by the word, and never past the bound whatever the word.
#![deny(warnings)]
use adamant_device::abi::{Lifetime, Rounding, Storage};
use adamant_device::optimizer_kernel;
use adamant_device::scalar_groups::StochasticRounding;

/// Plain SGD on bf16 weights, rounded stochastically.
#[optimizer_kernel]
pub fn sgd_sr(
    #[param(bf16, stochastic)] p: f32,
    #[grad(bf16)] g: f32,
    #[hyper] lr: f32,
    #[group] _rounding: StochasticRounding,
) -> f32 {
    p - lr * g
}

/// Momentum SGD with bf16 weights and a bf16 momentum, both rounded stochastically.
#[optimizer_kernel]
pub fn momentum_sr(
    #[param(bf16, stochastic)] p: f32,
    #[grad(bf16)] g: f32,
    #[state(bf16, stochastic)] buf: &mut f32,
    #[hyper] lr: f32,
    #[group] _rounding: StochasticRounding,
) -> f32 {
    *buf = 0.9 * *buf + g;
    p - lr * *buf
}

fn main() {
    let buf = momentum_sr::DESCRIPTOR.params[2];
    assert_eq!((buf.name, buf.storage, buf.rounding), ("buf", Storage::Bf16, Rounding::Stochastic));
    assert!(momentum_sr::FUSABLE, "a 16-bit state is read through a fused state table");

    let p = sgd_sr::DESCRIPTOR.params[0];
    assert_eq!((p.storage, p.rounding), (Storage::Bf16, Rounding::Stochastic));
    assert_eq!(sgd_sr::DESCRIPTOR.params[1].rounding, Rounding::Nearest);
    // The step number comes from the record's shared part, the seed from its own words.
    let layout = sgd_sr::STEPPED_DESCRIPTOR.record;
    let lifetime = |name: &str| layout.iter().find(|r| r.name == name).map(|r| r.lifetime);
    assert_eq!(lifetime("step"), Some(Lifetime::Step));
    assert!(matches!(lifetime("rounding_seed"), Some(Lifetime::Hyper { .. })));

    // 1 + 2^-8 lies halfway between two bf16 values: the word decides.
    let x = 1.0 + 2f32.powi(-8);
    let (step, seed) = (3u32, 9u32);
    assert_eq!(sgd_sr::element(x, 0.0, 0.0, step, seed, 2.0, 0), 1.0);
    assert_eq!(sgd_sr::element(x, 0.0, 0.0, step, seed, 2.0, 0x8000), 1.0 + 2f32.powi(-7));
    // 0.08 is no bf16 value: up would pass it, so every word stores the largest bf16 within it.
    for word in [0, 0x7fff, 0x8000, 0xffff, u32::MAX] {
        assert_eq!(sgd_sr::element(1.0, 0.0, 0.0, step, seed, 0.08, word), 0.079589844);
    }
}
