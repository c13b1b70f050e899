// Scalar groups as a downstream crate uses them: adamant's own (`Adam`, `BiasCorrections`
// through the prelude, `WeightDecay` by its path), one declared in this crate's root and one in
// a module, named by a path. Each kernel is the kernel with the fields written out in place of
// the group: its twin below declares them so, and every entry's descriptor (names, types,
// domains, lifetimes, record layout) is the twin's.
#![deny(warnings)]
use adamant_device::abi::{KernelDescriptor, OptimizerEntry};
use adamant_device::prelude::*;
use adamant_device::scalar_groups::ScalarGroup;

/// A group of this crate: a learning-rate schedule's two knobs.
#[scalar_group]
#[derive(Clone, Copy, Debug)]
pub struct Warmup {
    /// Steps of the linear warmup.
    #[hyper]
    warmup_steps: u32,
    #[hyper]
    #[domain(ge = 0.0, le = 1.0)]
    warmup_floor: f32,
}

mod clip {
    use adamant_device::scalar_group;

    /// A group declared in a module, named by its path.
    #[scalar_group]
    pub struct Clip {
        #[hyper]
        #[domain(ge = 0.0)]
        grad_clip: f32,
    }
}

#[optimizer_kernel]
pub fn grouped(
    #[param] p: f32,
    #[grad] g: f32,
    #[state] m: &mut f32,
    #[state] v: &mut f32,
    #[group] adam: Adam,
    #[group] decay: adamant_device::scalar_groups::WeightDecay,
    #[group] warmup: Warmup,
    #[group] clip: clip::Clip,
    #[group] mut bc: BiasCorrections,
) -> f32 {
    bc.bias_correction1 = max(bc.bias_correction1, warmup.warmup_floor);
    let g = clip_gradient(g, clip.grad_clip) * min(warmup.warmup_steps as f32, 1.0);
    adam_step(p, l2_decay(g, p, decay.weight_decay), m, v, adam.with(bc))
}

/// `grouped` with every field written out.
#[optimizer_kernel]
#[allow(clippy::too_many_arguments)]
pub fn written_out(
    #[param] p: f32,
    #[grad] g: f32,
    #[state] m: &mut f32,
    #[state] v: &mut f32,
    #[step] #[domain(ge = 0.0)] lr: f32,
    #[step] #[domain(ge = 0.0, lt = 1.0)] beta1: f32,
    #[step] #[domain(ge = 0.0, lt = 1.0)] beta2: f32,
    #[hyper] #[domain(gt = 0.0)] eps: f32,
    #[hyper] #[domain(ge = 0.0)] weight_decay: f32,
    #[hyper] warmup_steps: u32,
    #[hyper] #[domain(ge = 0.0, le = 1.0)] warmup_floor: f32,
    #[hyper] #[domain(ge = 0.0)] grad_clip: f32,
    #[step] #[domain(gt = 0.0, le = 1.0)] bias_correction1: f32,
    #[step] #[domain(ge = 1.1754944e-38, le = 1.0)] bias_correction2: f32,
) -> f32 {
    let bias_correction1 = max(bias_correction1, warmup_floor);
    let g = clip_gradient(g, grad_clip) * min(warmup_steps as f32, 1.0);
    let s = AdamScalars { lr, beta1, beta2, eps, bias_correction1, bias_correction2 };
    adam_step(p, l2_decay(g, p, weight_decay), m, v, s)
}

/// Everything but the entry's name and where it is defined.
fn shape(d: &KernelDescriptor) -> String {
    format!("{:?} {:?} {:?}", d.kind, d.params, d.record)
}

fn main() {
    use grouped::Entry as G;
    use written_out::Entry as W;
    for (g, w) in [
        (G::DESCRIPTOR, W::DESCRIPTOR),
        (G::MULTI_DESCRIPTOR, W::MULTI_DESCRIPTOR),
        (G::STEPPED_DESCRIPTOR, W::STEPPED_DESCRIPTOR),
        (G::MULTI_STEPPED_DESCRIPTOR, W::MULTI_STEPPED_DESCRIPTOR),
    ] {
        assert_eq!(shape(g), shape(w));
    }
    assert_eq!(Warmup::FIELDS, ["warmup_steps", "warmup_floor"]);
    assert_eq!(Adam::FIELDS, ["lr", "beta1", "beta2", "eps"]);

    // The host's types and the math take the fields one by one, as the twin's do.
    let hyper = grouped::Hyper {
        eps: 1e-8,
        weight_decay: 0.0,
        warmup_steps: 1,
        warmup_floor: 0.0,
        grad_clip: 0.0,
    };
    assert_eq!(hyper.warmup_steps, 1);
    let args = (0.5, 0.25, 0.9, 0.999, 1e-8, 0.01, 3, 0.5, 0.1, 0.1, 0.001);
    let (mut m1, mut v1, mut m2, mut v2) = (0.0, 0.0, 0.0, 0.0);
    let a = grouped::element(
        1.0, args.0, &mut m1, &mut v1, args.1, args.2, args.3, args.4, args.5, args.6, args.7,
        args.8, args.9, args.10, 4.0,
    );
    let b = written_out::element(
        1.0, args.0, &mut m2, &mut v2, args.1, args.2, args.3, args.4, args.5, args.6, args.7,
        args.8, args.9, args.10, 4.0,
    );
    assert_eq!((a.to_bits(), m1, v1), (b.to_bits(), m2, v2));
}
