//! The GPU multi-tensor tests' shared helpers: random host tensors of awkward sizes with the
//! clamp's edge cases in them, their device copies, one multi-tensor step of any of the five
//! kernels through the typed entry, and its f64 reference.

use adamant::device::abi::UniformPtr;
use adamant::device::diagnostics::{BufferFacts, TensorRecord};
use adamant::kernels::optimizers::{
    attn_adam_kernel, curiosity_adam_step, dqn_adam_update_kernel, iql_adam_kernel, iqn_adam_kernel,
};
use adamant::reference::{self as r, KernelRef, RefState};
use adamant::runtime::FusedSet;
use adamant::runtime::{
    adam_scalars, AdamHyper, Adamant, ClampPolicy, DeviceArray, ParamBuffer, QAbsRef, StepBound,
    StepSpec, StepStates, TensorSet,
};
use cust::stream::Stream;
use rand::rngs::SmallRng;
use rand::Rng;

/// Sizes around the vector width and the chunk size (2048), plus a multi-chunk tensor.
pub const SIZES: [usize; 10] = [1, 3, 4, 5, 2047, 2048, 2049, 4099, 10_000, 70_001];

pub struct HostTensor {
    pub p: Vec<f32>,
    pub g: Vec<f32>,
    pub m: Vec<f32>,
    pub v: Vec<f32>,
    pub v_max: Vec<f32>,
}

pub struct DevTensor {
    pub p: ParamBuffer,
    pub g: DeviceArray,
    pub m: DeviceArray,
    pub v: DeviceArray,
    pub v_max: DeviceArray,
}

pub fn random(rng: &mut SmallRng, n: usize, bound: f32) -> HostTensor {
    let mut gen = |lo: f32, hi: f32| (0..n).map(|_| rng.gen_range(lo..hi)).collect::<Vec<_>>();
    let mut p = gen(-2.0, 2.0);
    // A few weights past the bound and non-finite ones, so the clamp acts in every tensor.
    for (i, x) in p.iter_mut().enumerate() {
        match i % 97 {
            0 => *x = bound * 3.0,
            1 => *x = f32::NAN,
            2 => *x = f32::NEG_INFINITY,
            _ => {}
        }
    }
    HostTensor {
        p,
        g: gen(-1.0, 1.0),
        m: gen(-0.1, 0.1),
        v: gen(0.0, 0.05),
        v_max: gen(0.0, 0.06),
    }
}

pub fn upload(t: &HostTensor) -> DevTensor {
    let up = |x: &[f32]| DeviceArray::from_host(x).unwrap();
    DevTensor {
        p: ParamBuffer::from_host(&t.p).unwrap(),
        g: up(&t.g),
        m: up(&t.m),
        v: up(&t.v),
        v_max: up(&t.v_max),
    }
}

pub fn download(t: &DevTensor) -> HostTensor {
    let down = |b: &DeviceArray| b.download().unwrap();
    HostTensor {
        p: t.p.download().unwrap(),
        g: down(&t.g),
        m: down(&t.m),
        v: down(&t.v),
        v_max: down(&t.v_max),
    }
}

pub fn hyper(kernel: KernelRef) -> AdamHyper {
    let wd = if kernel == KernelRef::Curiosity {
        0.0
    } else {
        0.01
    };
    AdamHyper::new(2e-3, 0.9, 0.999, 1e-8, wd, 3).unwrap()
}

pub const GRAD_CLIP: f32 = 0.5;

/// `tensors` as kernel `$k`'s `Buffers`: p, g, m, v, and v_max for a kernel that has it.
macro_rules! buffers {
    ($k:ident, $tensors:expr $(, $extra:ident)?) => {
        $tensors
            .iter_mut()
            .map(|t| $k::Buffers {
                p: &mut t.p,
                g: t.g.input(),
                m: &mut t.m,
                v: &mut t.v,
                $($extra: &mut t.$extra,)?
            })
            .collect::<Vec<_>>()
    };
}
#[allow(unused_imports)] // gpu_multi_tensor only steps
pub(crate) use buffers;

/// One multi-tensor step of `kernel` over `tensors` on `stream`, through the typed entry.
pub fn step(
    rt: &Adamant,
    stream: &Stream,
    kernel: KernelRef,
    set: &mut TensorSet,
    tensors: &mut [DevTensor],
    policy: ClampPolicy,
) -> adamant::runtime::Result<()> {
    let h = hyper(kernel);
    macro_rules! run {
        ($k:ident, $scalars:expr) => {{
            let buffers = buffers!($k, tensors);
            rt.launch::<$k::Entry>(stream)
                .plain(&$scalars, policy)
                .set(set, &buffers)
                .map(|_| ())
        }};
    }
    let wd = h.weight_decay;
    match kernel {
        KernelRef::Dqn => run!(
            dqn_adam_update_kernel,
            adam_scalars!(dqn_adam_update_kernel, h, weight_decay: wd, grad_scale: UniformPtr::NULL).unwrap()
        ),
        KernelRef::Iqn => run!(
            iqn_adam_kernel,
            adam_scalars!(iqn_adam_kernel, h, weight_decay: wd).unwrap()
        ),
        KernelRef::Iql => run!(
            iql_adam_kernel,
            adam_scalars!(iql_adam_kernel, h, weight_decay: wd, grad_clip: GRAD_CLIP).unwrap()
        ),
        KernelRef::Attn => run!(
            attn_adam_kernel,
            adam_scalars!(attn_adam_kernel, h, weight_decay: wd).unwrap()
        ),
        KernelRef::Curiosity => {
            let scalars = adam_scalars!(curiosity_adam_step, h).unwrap();
            let buffers = buffers!(curiosity_adam_step, tensors, v_max);
            rt.launch::<curiosity_adam_step::Entry>(stream)
                .plain(&scalars, policy)
                .set(set, &buffers)
                .map(|_| ())
        }
    }
}

/// One step-state record made for `kernel` ([`hyper`]'s values, the bound from `policy`), whose
/// first advance gives step `hyper(kernel).step`.
pub fn states_for(kernel: KernelRef, policy: ClampPolicy) -> StepStates {
    let h = hyper(kernel);
    let spec = StepSpec::adam(&h, StepBound::Policy(policy)).unwrap();
    let (eps, weight_decay) = (h.eps, h.weight_decay);
    let spec = match kernel {
        KernelRef::Dqn => {
            spec.with_kernel::<dqn_adam_update_kernel::Entry>(dqn_adam_update_kernel::Hyper {
                eps,
                weight_decay,
            })
        }
        KernelRef::Iqn => {
            spec.with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper { eps, weight_decay })
        }
        KernelRef::Iql => spec.with_kernel::<iql_adam_kernel::Entry>(iql_adam_kernel::Hyper {
            eps,
            weight_decay,
            grad_clip: GRAD_CLIP,
        }),
        KernelRef::Attn => spec
            .with_kernel::<attn_adam_kernel::Entry>(attn_adam_kernel::Hyper { eps, weight_decay }),
        KernelRef::Curiosity => {
            spec.with_kernel::<curiosity_adam_step::Entry>(curiosity_adam_step::Hyper { eps })
        }
    };
    StepStates::new(&[spec.unwrap()], QAbsRef::Owned { initial: 1.0 }).unwrap()
}

/// One stepped multi-tensor step of `kernel` over `tensors` on `stream` with record 0 of
/// `states` (made by [`states_for`]): the advance, then the update.
pub fn step_stepped(
    rt: &Adamant,
    stream: &Stream,
    kernel: KernelRef,
    set: &mut TensorSet,
    tensors: &mut [DevTensor],
    states: &StepStates,
) -> adamant::runtime::Result<()> {
    states.advance(rt, stream)?;
    macro_rules! run {
        ($k:ident, $scalars:expr $(, $v_max:ident)?) => {{
            let buffers = buffers!($k, tensors $(, $v_max)?);
            rt.launch::<$k::Entry>(stream)
                .stepped(&$scalars, states, 0)
                .set(set, &buffers)
                .map(|_| ())
        }};
    }
    match kernel {
        KernelRef::Dqn => run!(
            dqn_adam_update_kernel,
            dqn_adam_update_kernel::StepScalars {
                grad_scale: UniformPtr::NULL
            }
        ),
        KernelRef::Iqn => run!(iqn_adam_kernel, iqn_adam_kernel::StepScalars {}),
        KernelRef::Iql => run!(iql_adam_kernel, iql_adam_kernel::StepScalars {}),
        KernelRef::Attn => run!(attn_adam_kernel, attn_adam_kernel::StepScalars {}),
        KernelRef::Curiosity => run!(
            curiosity_adam_step,
            curiosity_adam_step::StepScalars {},
            v_max
        ),
    }
}

pub fn reference_of(kernel: KernelRef, t: &HostTensor, bound: f32) -> RefState {
    reference_at(kernel, t, bound, hyper(kernel).step)
}

/// [`reference_of`] at step `step` (the bias corrections of `step`).
pub fn reference_at(kernel: KernelRef, t: &HostTensor, bound: f32, step: u64) -> RefState {
    let h = hyper(kernel);
    let mut hp = r::Hyper::new(h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, step);
    if kernel == KernelRef::Iql {
        hp = hp.with_grad_clip(GRAD_CLIP);
    }
    let v_max = kernel.amsgrad().then_some(&t.v_max[..]);
    let mut state = RefState::from_f32(&t.p, &t.m, &t.v, v_max);
    r::step_slices(kernel, &mut state, &t.g, &hp, bound);
    state
}

pub fn assert_matches(
    kernel: KernelRef,
    what: &str,
    reference: &[RefState],
    tensors: &[DevTensor],
) {
    for (i, (want, dev)) in reference.iter().zip(tensors).enumerate() {
        let got = download(dev);
        let v_max = kernel.amsgrad().then_some(&got.v_max[..]);
        let errors = want.max_errors(&got.p, &got.m, &got.v, v_max);
        assert!(
            errors.passes(),
            "{} {what}: tensor {i} ({} elements): {errors:?}",
            kernel.name(),
            got.p.len()
        );
    }
}

/// Builds `set`'s tables for `kernel`'s buffers over `tensors` ([`TensorSet::sync`]) without
/// launching anything.
pub fn sync_set(
    kernel: KernelRef,
    set: &mut TensorSet,
    tensors: &mut [DevTensor],
) -> adamant::runtime::Result<bool> {
    macro_rules! sync {
        ($k:ident $(, $v_max:ident)?) => {
            set.sync::<$k::Entry>(&buffers!($k, tensors $(, $v_max)?))
        };
    }
    match kernel {
        KernelRef::Dqn => sync!(dqn_adam_update_kernel),
        KernelRef::Iqn => sync!(iqn_adam_kernel),
        KernelRef::Iql => sync!(iql_adam_kernel),
        KernelRef::Attn => sync!(attn_adam_kernel),
        KernelRef::Curiosity => sync!(curiosity_adam_step, v_max),
    }
}

/// Every tensor's record: the per-rule launch's equals the fused launch's, whose buffers past
/// the rule's are empty.
pub fn assert_same_records(per: &[TensorSet], fused: &FusedSet) {
    let fused = fused.records().expect("fused records").tensors;
    let per: Vec<TensorRecord> = per
        .iter()
        .flat_map(|s| s.records().expect("per-rule records").tensors)
        .collect();
    assert_eq!(per.len(), fused.len());
    for (t, (a, b)) in per.iter().zip(&fused).enumerate() {
        let n = a.n_buffers;
        let head = |r: &TensorRecord| {
            (
                r.clamped,
                r.max_raw_bits,
                r.raw_non_finite,
                r.max_stored_bits,
                r.first_clamped,
                r.first_raw_non_finite,
            )
        };
        assert_eq!(head(a), head(b), "tensor {t}: record header");
        assert_eq!(a.buffers(), &b.buffers[..n], "tensor {t}: buffer facts");
        let empty = TensorRecord::empty(b.n_buffers);
        assert!(
            b.buffers[n..b.n_buffers]
                .iter()
                .zip(&empty.buffers[n..b.n_buffers])
                .all(|(x, e): (&BufferFacts, &BufferFacts)| x == e),
            "tensor {t}: buffers past the rule's are not empty: {:?}",
            &b.buffers[n..b.n_buffers]
        );
    }
}
