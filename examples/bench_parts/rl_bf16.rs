//! The RL parameter set in bf16 (issue 26's goal: the 14 B path's captured step at most 0.55× the
//! fp32 step's time). Every tensor of the set (`bench/rl_set.json`) twice, in one run: as f32
//! AdamW (28 B an element) and as `adamw_bf16_sr_moments` (bf16 weights, gradients and moments,
//! stochastic rounding: 14 B), each one fused launch of `adamant_fused_mixed` after its step
//! records' advance, captured in a graph and replayed. Same sizes, same launch path, same
//! tensor order: only the storage differs.
use std::path::Path;

use adamant::kernels::fused::adamant_fused_mixed;
use adamant::kernels::half_weights::adamw_bf16_sr_moments;
use adamant::kernels::optimizers::attn_adam_kernel;
use adamant::runtime::{
    AdamHyper, Adamant, ChunkSize, ClampPolicy, DeviceArray, FusedSet, FusedTensor, Owned,
    ParamBuffer, QAbsRef, StepBound, StepSpec, StepStates, Storage, ADAM_F32_BYTES_PER_ELEMENT,
    FUSED_CHUNK_BYTES,
};
use anyhow::Result;
use cust::stream::Stream;
use serde_json::{json, Value};

use super::{rl_tensors, tensor, Tensor, Timer};

/// Bytes an element moves in each world (read + written).
const F32_BYTES: usize = ADAM_F32_BYTES_PER_ELEMENT;
const BF16_BYTES: usize = 14;

/// The bench's tensor (`super::tensor`: weights 0.1, gradients 0.01, moments 1e-3 and 1e-4)
/// with every buffer in bf16 bits.
fn bf16_tensor(n: usize) -> Result<Tensor> {
    let bits = |x: f32| vec![half::bf16::from_f32(x).to_bits(); n];
    Ok(Tensor {
        p: ParamBuffer::from_bits(&bits(0.1), Storage::Bf16)?,
        g: DeviceArray::from_bits(&bits(0.01), Storage::Bf16)?,
        m: DeviceArray::from_bits(&bits(1e-3), Storage::Bf16)?,
        v: DeviceArray::from_bits(&bits(1e-4), Storage::Bf16)?,
        v_max: None,
    })
}

/// The graph replay of `advance + one fused launch` over `buffers` of rule `E`, in µs, with the
/// tensors cut into chunks of `chunk`, one block each or, with `blocks`, that many blocks each
/// taking chunks in turn.
fn replay_us<E: adamant::device::abi::OptimizerEntry>(
    rt: &Adamant,
    timer: &mut Timer,
    buffers: &[E::Buffers<Owned<'_>>],
    scalars: &E::StepScalars,
    hyper: E::Hyper,
    (chunk, blocks): (ChunkSize, Option<std::num::NonZeroU32>),
) -> Result<f64>
where
    E::Hyper: Send + Sync + 'static,
{
    let adam = AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.01, 1)?;
    let spec = StepSpec::adam(&adam, StepBound::Policy(ClampPolicy::from_isv(2.0)))?
        .with_kernel::<E>(hyper)?;
    let states = StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 })?;
    let fused: Vec<FusedTensor<'_>> = FusedTensor::group::<E>(buffers, scalars, 0)?;
    // The tables are built before the capture (a capture cannot upload them).
    let mut set = FusedSet::with_chunk_size(chunk)?;
    if let Some(blocks) = blocks {
        set = set.with_max_blocks(blocks);
    }
    set.sync::<adamant_fused_mixed::Entry>(&fused, &states)?;
    let graph = rt.capture(vec![Box::new(|s: &Stream| {
        states.advance(rt, s)?;
        rt.launch_fused::<adamant_fused_mixed::Entry>(s, &mut set, &fused, &states)
            .map(|_| ())
    })])?;
    timer.reps *= 4;
    let t = timer.median_us(false, |s| Ok(graph.launch(s)?));
    timer.reps /= 4;
    t
}

/// A kernel's `Buffers` over each tensor's four buffers (`p`, `g`, `m`, `v`).
macro_rules! buffers {
    ($k:ident, $set:expr) => {
        $set.iter_mut()
            .map(|t| $k::Buffers {
                p: &mut t.p,
                g: t.g.input(),
                m: &mut t.m,
                v: &mut t.v,
            })
            .collect::<Vec<_>>()
    };
}

pub(crate) fn rl_bf16(
    rt: &Adamant,
    timer: &mut Timer,
    out: &mut Value,
    set: &Path,
    copy_gbps: f64,
    only_16bit: bool,
) -> Result<()> {
    let sizes: Vec<usize> = rl_tensors(set)?.iter().map(|t| t.elements).collect();
    let elements: usize = sizes.iter().sum();
    // The runtime's chunk first (the headline: a byte budget, so the 14 B set's chunks hold
    // twice the f32 set's elements), then one element count for both (the f32 set's default
    // and larger), twice the budget, and grids of a few blocks per multiprocessor, each block
    // taking chunks in turn.
    use ChunkSize::{Bytes, Elements};
    let per_sm = |k: u32| std::num::NonZeroU32::new(rt.multiprocessors() * k);
    let all = [
        (ChunkSize::DEFAULT, None),
        (Elements(4096), None),
        (Elements(8192), None),
        (Elements(16384), None),
        (Bytes(2 * FUSED_CHUNK_BYTES), None),
        (Elements(1024), per_sm(3)),
        (Elements(2048), per_sm(3)),
        (ChunkSize::DEFAULT, per_sm(3)),
        (Elements(2048), per_sm(6)),
    ];
    let chunks = if only_16bit { &all[..1] } else { &all[..] };
    let mut f32_set = sizes
        .iter()
        .map(|&n| tensor(n, false))
        .collect::<Result<Vec<_>>>()?;
    let mut f32_by_chunk = Vec::new();
    for &chunk in if only_16bit { &[][..] } else { chunks } {
        f32_by_chunk.push(replay_us::<attn_adam_kernel::Entry>(
            rt,
            timer,
            &buffers!(attn_adam_kernel, f32_set),
            &attn_adam_kernel::StepScalars {},
            attn_adam_kernel::Hyper {
                eps: 1e-8,
                weight_decay: 0.01,
            },
            chunk,
        )?);
    }
    drop(f32_set);
    let mut bf16_set = sizes
        .iter()
        .map(|&n| bf16_tensor(n))
        .collect::<Result<Vec<_>>>()?;
    let mut bf16_by_chunk = Vec::new();
    for &chunk in chunks {
        bf16_by_chunk.push(replay_us::<adamw_bf16_sr_moments::Entry>(
            rt,
            timer,
            &buffers!(adamw_bf16_sr_moments, bf16_set),
            &adamw_bf16_sr_moments::StepScalars {},
            adamw_bf16_sr_moments::Hyper {
                eps: 1e-8,
                weight_decay: 0.01,
                rounding_seed: 2026,
            },
            chunk,
        )?);
    }
    if only_16bit {
        println!(
            "RL set in bf16, the runtime's chunk: {:.1} µs",
            bf16_by_chunk[0]
        );
        return Ok(());
    }
    for (i, (chunk, blocks)) in chunks.iter().enumerate().skip(1) {
        let grid = match blocks {
            Some(b) => format!(", {b} blocks"),
            None => String::new(),
        };
        let chunk = match chunk {
            Elements(n) => format!("{n}"),
            Bytes(b) => format!("{b} bytes"),
        };
        println!(
            "RL set, chunks of {chunk}{grid}: f32 AdamW {:.1} µs, bf16 14 B {:.1} µs ({:.3}× the f32 \
             step at the runtime's chunk)",
            f32_by_chunk[i],
            bf16_by_chunk[i],
            bf16_by_chunk[i] / f32_by_chunk[0]
        );
    }
    let (f32_us, bf16_us) = (f32_by_chunk[0], bf16_by_chunk[0]);
    let floor = |bytes: usize| (bytes * elements) as f64 / copy_gbps / 1e3;
    println!(
        "RL set ({} tensors, {elements} elements), advance + one fused launch, graph: f32 AdamW \
         {f32_us:.1} µs (floor {:.1}), bf16 14 B {bf16_us:.1} µs (floor {:.1}): {:.3}× the f32 \
         step (goal ≤ 0.55×)",
        sizes.len(),
        floor(F32_BYTES),
        floor(BF16_BYTES),
        bf16_us / f32_us
    );
    out["rl_bf16"] = json!({
        "tensors": sizes.len(), "elements": elements,
        "f32_graph_us": f32_us, "bf16_graph_us": bf16_us, "ratio": bf16_us / f32_us,
        "f32_floor_us": floor(F32_BYTES), "bf16_floor_us": floor(BF16_BYTES),
        "chunks": chunks
            .iter()
            .map(|(c, b)| match c {
                Elements(n) => json!({"chunk": n, "blocks": b.map(|b| b.get())}),
                Bytes(n) => json!({"chunk_bytes": n, "blocks": b.map(|b| b.get())}),
            })
            .collect::<Vec<_>>(),
        "f32_graph_us_by_chunk": f32_by_chunk,
        "bf16_graph_us_by_chunk": bf16_by_chunk,
    });
    Ok(())
}
