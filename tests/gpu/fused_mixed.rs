//! A fused entry with 16-bit rules (`adamant_fused_mixed`, issue 26 on issue 25's launch): one
//! launch over seven groups, each with its own rule, storage and step record (bf16 and f16
//! weights to nearest, bf16 stochastic weights with f32 or bf16 moments, a bf16 target network's
//! soft update, f32 AdamW and the f32 soft update) must leave every buffer's stored bits and
//! every diagnostics record as the per-rule launches it replaces (each rule's stepped
//! multi-tensor entry over its group), eager and replayed from a graph. The per-rule launches are
//! checked against references of their own (`gpu_stochastic_rounding`, `gpu_half_weights`,
//! `gpu_multi_tensor`). Every test needs a CUDA GPU and is ignored without one.
#[path = "../support/mod.rs"]
mod support;

use adamant::kernels::fused::adamant_fused_mixed;
use adamant::kernels::half_weights::{adamw_bf16, adamw_bf16_sr, adamw_bf16_sr_moments, adamw_f16};
use adamant::kernels::optimizers::attn_adam_kernel;
use adamant::kernels::soft_update::{soft_update_bf16, soft_update_kernel};
use adamant::runtime::{
    AdamHyper, Adamant, Branch, ClampPolicy, DeviceArray, FusedSet, FusedTensor, ParamBuffer,
    QAbsRef, ReadBuffer, StepBound, StepSpec, StepStates, Storage, TensorSet,
};
use cust::stream::Stream;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use support::multi_step::{assert_same_records, buffers};
use support::{half_bits, half_value};

/// One element, a partial group of four, two chunks and a bit, three chunks and a bit.
const SIZES: [usize; 4] = [1, 3, 4097, 6149];
/// Below f16's largest finite value and past bf16's nearest values, so the hold within the bound
/// acts in both types.
const BOUND: f32 = 0.08;
const GROUPS: usize = 7;

/// The storages of one group's buffers (`p`, `g`, `m`, `v`), in record order.
const STORAGES: [[Storage; 4]; GROUPS] = {
    use Storage::{Bf16 as B, F16 as H, F32 as F};
    [
        [B, B, F, F], // adamw_bf16
        [H, H, F, F], // adamw_f16
        [B, B, F, F], // adamw_bf16_sr
        [B, B, B, B], // adamw_bf16_sr_moments
        [B, B, F, F], // soft_update_bf16 (target, online; m and v unused)
        [F, F, F, F], // attn_adam_kernel
        [F, F, F, F], // soft_update_kernel (m and v unused)
    ]
};

/// One tensor: its parameter, gradient (or online network) and moments, each in its storage.
struct Tensor {
    p: ParamBuffer,
    g: DeviceArray,
    m: DeviceArray,
    v: DeviceArray,
}

/// A buffer of `values` in `storage`.
fn array(values: &[f32], storage: Storage) -> DeviceArray {
    match storage {
        Storage::F32 => DeviceArray::from_host(values).unwrap(),
        s => DeviceArray::from_bits(
            &values.iter().map(|&x| half_bits(s, x)).collect::<Vec<_>>(),
            s,
        )
        .unwrap(),
    }
}

fn param(values: &[f32], storage: Storage) -> ParamBuffer {
    match storage {
        Storage::F32 => ParamBuffer::from_host(values).unwrap(),
        s => ParamBuffer::from_bits(
            &values.iter().map(|&x| half_bits(s, x)).collect::<Vec<_>>(),
            s,
        )
        .unwrap(),
    }
}

/// The host values of every tensor of every group: weights with some past the bound and some
/// non-finite, gradients, moments (`v ≥ 0`).
type HostTensor = [Vec<f32>; 4];

fn host_world(rng: &mut SmallRng) -> Vec<Vec<HostTensor>> {
    (0..GROUPS)
        .map(|_| {
            SIZES
                .iter()
                .map(|&n| {
                    let mut gen =
                        |lo: f32, hi: f32| (0..n).map(|_| rng.gen_range(lo..hi)).collect();
                    let mut p: Vec<f32> = gen(-0.1, 0.1);
                    for (i, x) in p.iter_mut().enumerate() {
                        match i % 89 {
                            0 => *x = 3.0 * BOUND,
                            1 => *x = f32::NAN,
                            2 => *x = f32::NEG_INFINITY,
                            _ => {}
                        }
                    }
                    [p, gen(-1.0, 1.0), gen(-0.01, 0.01), gen(0.0, 0.001)]
                })
                .collect()
        })
        .collect()
}

struct World {
    groups: Vec<Vec<Tensor>>,
    states: StepStates,
}

fn specs() -> Vec<StepSpec> {
    let bound = StepBound::Policy(ClampPolicy::Fixed { bound: BOUND });
    let adam = AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.01, 1).unwrap();
    let spec = || StepSpec::adam(&adam, bound).unwrap();
    vec![
        spec()
            .with_kernel::<adamw_bf16::Entry>(adamw_bf16::Hyper {
                eps: 1e-8,
                weight_decay: 0.01,
            })
            .unwrap(),
        spec()
            .with_kernel::<adamw_f16::Entry>(adamw_f16::Hyper {
                eps: 1e-8,
                weight_decay: 0.01,
            })
            .unwrap(),
        spec()
            .with_kernel::<adamw_bf16_sr::Entry>(adamw_bf16_sr::Hyper {
                eps: 1e-8,
                weight_decay: 0.01,
                rounding_seed: 11,
            })
            .unwrap(),
        spec()
            .with_kernel::<adamw_bf16_sr_moments::Entry>(adamw_bf16_sr_moments::Hyper {
                eps: 1e-8,
                weight_decay: 0.01,
                rounding_seed: 12,
            })
            .unwrap(),
        spec()
            .with_kernel::<soft_update_bf16::Entry>(soft_update_bf16::Hyper {
                tau: 0.005,
                rounding_seed: 13,
            })
            .unwrap(),
        spec()
            .with_kernel::<attn_adam_kernel::Entry>(attn_adam_kernel::Hyper {
                eps: 1e-8,
                weight_decay: 0.01,
            })
            .unwrap(),
        spec()
            .with_kernel::<soft_update_kernel::Entry>(soft_update_kernel::Hyper { tau: 0.3 })
            .unwrap(),
    ]
}

fn world(host: &[Vec<HostTensor>]) -> World {
    let groups = host
        .iter()
        .zip(STORAGES)
        .map(|(group, [sp, sg, sm, sv])| {
            group
                .iter()
                .map(|[p, g, m, v]| Tensor {
                    p: param(p, sp),
                    g: array(g, sg),
                    m: array(m, sm),
                    v: array(v, sv),
                })
                .collect()
        })
        .collect();
    World {
        groups,
        states: StepStates::new(&specs(), QAbsRef::Owned { initial: 1.0 }).unwrap(),
    }
}

/// A soft update's generated `Buffers`, from its tensors (`p` the target, `g` the online net).
macro_rules! soft_buffers {
    ($k:ident, $group:expr) => {
        $group
            .iter_mut()
            .map(|t| $k::Buffers {
                target: &mut t.p,
                online: t.g.input(),
            })
            .collect::<Vec<_>>()
    };
}

/// Every group's buffers, in record order, bound to `$body`'s names.
macro_rules! with_buffers {
    ($w:expr, |$b0:ident, $b1:ident, $b2:ident, $b3:ident, $b4:ident, $b5:ident, $b6:ident| $body:expr) => {{
        let [g0, g1, g2, g3, g4, g5, g6] = &mut $w.groups[..] else {
            unreachable!("seven groups")
        };
        let ($b0, $b1, $b2, $b3) = (
            buffers!(adamw_bf16, g0),
            buffers!(adamw_f16, g1),
            buffers!(adamw_bf16_sr, g2),
            buffers!(adamw_bf16_sr_moments, g3),
        );
        let ($b4, $b5, $b6) = (
            soft_buffers!(soft_update_bf16, g4),
            buffers!(attn_adam_kernel, g5),
            soft_buffers!(soft_update_kernel, g6),
        );
        $body
    }};
}

/// The per-rule step: each group's rule's stepped multi-tensor entry.
fn per_rule(
    rt: &Adamant,
    s: &Stream,
    w: &mut World,
    sets: &mut [TensorSet],
) -> adamant::runtime::Result<()> {
    let states = &w.states;
    let [s0, s1, s2, s3, s4, s5, s6] = sets else {
        unreachable!("seven sets")
    };
    with_buffers!(w, |b0, b1, b2, b3, b4, b5, b6| {
        macro_rules! run {
            ($k:ident, $b:expr, $set:expr, $record:expr) => {
                rt.launch::<$k::Entry>(s)
                    .stepped(&$k::StepScalars {}, states, $record)
                    .set($set, &$b)?
            };
        }
        run!(adamw_bf16, b0, s0, 0);
        run!(adamw_f16, b1, s1, 1);
        run!(adamw_bf16_sr, b2, s2, 2);
        run!(adamw_bf16_sr_moments, b3, s3, 3);
        run!(soft_update_bf16, b4, s4, 4);
        run!(attn_adam_kernel, b5, s5, 5);
        run!(soft_update_kernel, b6, s6, 6);
    });
    Ok(())
}

/// The fused step: every tensor of every group in one launch, in record order.
fn fused(
    rt: &Adamant,
    s: &Stream,
    w: &mut World,
    set: &mut FusedSet,
) -> adamant::runtime::Result<()> {
    let states = &w.states;
    with_buffers!(w, |b0, b1, b2, b3, b4, b5, b6| {
        let mut tensors = Vec::new();
        macro_rules! add {
            ($k:ident, $b:expr, $record:expr) => {
                tensors.extend(FusedTensor::group::<$k::Entry>(
                    &$b,
                    &$k::StepScalars {},
                    $record,
                )?)
            };
        }
        add!(adamw_bf16, b0, 0);
        add!(adamw_f16, b1, 1);
        add!(adamw_bf16_sr, b2, 2);
        add!(adamw_bf16_sr_moments, b3, 3);
        add!(soft_update_bf16, b4, 4);
        add!(attn_adam_kernel, b5, 5);
        add!(soft_update_kernel, b6, 6);
        rt.launch_fused::<adamant_fused_mixed::Entry>(s, set, &tensors, states)?;
    });
    Ok(())
}

/// A buffer's stored bits, whatever its storage.
trait Stored: ReadBuffer {
    fn stored(&self) -> Vec<u32>;
}

macro_rules! stored_bits {
    ($ty:ty) => {
        impl Stored for $ty {
            fn stored(&self) -> Vec<u32> {
                match self.storage() {
                    Storage::F32 => self
                        .download()
                        .unwrap()
                        .iter()
                        .map(|x| x.to_bits())
                        .collect(),
                    _ => self
                        .download_bits()
                        .unwrap()
                        .into_iter()
                        .map(u32::from)
                        .collect(),
                }
            }
        }
    };
}
stored_bits!(ParamBuffer);
stored_bits!(DeviceArray);

fn stored(b: &dyn Stored) -> Vec<u32> {
    b.stored()
}

/// Every buffer of both worlds, bit for bit; and every stored weight within the bound or NaN,
/// as its type stores it.
fn assert_same_buffers(what: &str, a: &World, b: &World) {
    for (g, (ga, gb)) in a.groups.iter().zip(&b.groups).enumerate() {
        for (t, (ta, tb)) in ga.iter().zip(gb).enumerate() {
            let pairs: [(&str, &dyn Stored, &dyn Stored); 4] = [
                ("p", &ta.p, &tb.p),
                ("g", &ta.g, &tb.g),
                ("m", &ta.m, &tb.m),
                ("v", &ta.v, &tb.v),
            ];
            for (name, x, y) in pairs {
                let (u, v) = (stored(x), stored(y));
                if let Some(i) = (0..u.len()).find(|&i| u[i] != v[i]) {
                    panic!(
                        "{what}: group {g} tensor {t} `{name}` ({:?}) differs at {i}: \
                         per-rule {:#x} vs fused {:#x}",
                        x.storage(),
                        u[i],
                        v[i]
                    );
                }
            }
            let value = |bits: u32| match STORAGES[g][0] {
                Storage::F32 => f32::from_bits(bits),
                s => half_value(s, bits as u16),
            };
            for (i, bits) in stored(&tb.p).into_iter().enumerate() {
                let x = value(bits);
                assert!(
                    x.is_nan() || x.abs() <= BOUND,
                    "{what}: group {g} tensor {t}: stored weight {i} is {x}, past {BOUND}"
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn a_mixed_precision_fused_step_is_bit_identical_to_the_per_rule_launches() {
    let rt = Adamant::new().expect("needs a CUDA GPU");
    let host = host_world(&mut SmallRng::seed_from_u64(2612));
    let (mut a, mut b) = (world(&host), world(&host));
    let mut sets: Vec<TensorSet> = (0..GROUPS).map(|_| TensorSet::new()).collect();
    // Chunks of 1024 on a grid of 3 blocks: each block takes chunks of many tensors, and of
    // every storage, in turn, flushing its record at every change of tensor.
    let mut fset = FusedSet::with_chunk_elements(1024)
        .unwrap()
        .with_max_blocks(std::num::NonZeroU32::new(3).unwrap());
    let s = rt.stream();
    let sanitized = std::env::var_os("ADAMANT_SANITIZER_RUN").is_some();
    let (eager, replays) = if sanitized { (5, 5) } else { (300, 300) };
    for _ in 0..eager {
        a.states.advance(&rt, s).unwrap();
        per_rule(&rt, s, &mut a, &mut sets).unwrap();
        b.states.advance(&rt, s).unwrap();
        fused(&rt, s, &mut b, &mut fset).unwrap();
    }
    rt.synchronize().unwrap();
    assert_eq!(fset.rebuilds(), 1, "the fused tables are built once");
    assert_same_buffers("eager", &a, &b);
    assert_same_records(&sets, &fset);
    {
        let (wa, wb) = (&mut a, &mut b);
        let (sets, fset) = (&mut sets, &mut fset);
        let rt = &rt;
        let ga = rt
            .capture(vec![Box::new(move |s: &Stream| {
                wa.states.advance(rt, s)?;
                per_rule(rt, s, wa, sets)
            }) as Branch<'_>])
            .unwrap();
        let gb = rt
            .capture(vec![Box::new(move |s: &Stream| {
                wb.states.advance(rt, s)?;
                fused(rt, s, wb, fset)
            }) as Branch<'_>])
            .unwrap();
        for _ in 0..replays {
            ga.launch(s).unwrap();
            gb.launch(s).unwrap();
        }
        rt.synchronize().unwrap();
    }
    assert_same_buffers("replayed", &a, &b);
    assert_same_records(&sets, &fset);
    // The weights moved (the stochastic groups included), so the comparison compared updates.
    let start = world(&host);
    for (g, group) in b.groups.iter().enumerate() {
        let moved = stored(&group[3].p) != stored(&start.groups[g][3].p);
        assert!(moved, "group {g}: the weights never moved");
    }
    println!(
        "fused mixed: {eager} steps eager + {replays} replayed, {} tensors in {GROUPS} groups of \
         f32, bf16 and f16 rules, bit-identical to the per-rule launches",
        GROUPS * SIZES.len()
    );
}
