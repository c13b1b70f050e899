//! Writes one step of each of the five kernels, on the GPU, to raw files that
//! `bench/torch_crosscheck.py` replays through `torch.optim.Adam`/`AdamW` (plus the clamp) and
//! compares: PyTorch as a second independent reference, beside the f64 one.
//!
//! `torch_crosscheck [DIR]` (default /tmp/adamant-crosscheck) writes, per kernel, `<kernel>.json`
//! (hyperparameters, bound, length) and `<kernel>.<buffer>.<before|after>.f32` (little-endian).
use std::path::PathBuf;

use adamant::reference::KernelRef;
use adamant::rl::SeedLaunchers;
use adamant::runtime::DeviceScalar;
use adamant::runtime::{AdamHyper, Adamant, ClampPolicy, GroupBuffer, ParamGroup};
use anyhow::{Context, Result};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const N: usize = 100_003;
const GRAD_SCALE: f32 = 0.6;
const GRAD_CLIP: f32 = 0.3;
const BOUND: f32 = 1.5;

fn main() -> Result<()> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or("/tmp/adamant-crosscheck".into()),
    );
    std::fs::create_dir_all(&dir)?;
    let rt = Adamant::new().context("starting the adamant runtime")?;
    let mut rng = SmallRng::seed_from_u64(5);
    let scale = DeviceScalar::new(GRAD_SCALE)?;
    for kernel in KernelRef::ALL {
        let mut random =
            |lo: f32, hi: f32| (0..N).map(|_| rng.gen_range(lo..hi)).collect::<Vec<f32>>();
        let mut p = random(-2.0, 2.0);
        // Some weights the step pushes past the bound, so the clamp acts.
        p.iter_mut().step_by(17).for_each(|x| *x *= 1.6);
        let mut group = if kernel.amsgrad() {
            ParamGroup::new_amsgrad(kernel.name(), &p)?
        } else {
            ParamGroup::new(kernel.name(), &p)?
        };
        group.upload(GroupBuffer::Grads, &random(-1.0, 1.0))?;
        group.upload(GroupBuffer::M, &random(-0.1, 0.1))?;
        group.upload(GroupBuffer::V, &random(0.0, 0.05))?;
        if kernel.amsgrad() {
            group.upload(GroupBuffer::VMax, &random(0.0, 0.06))?;
        }
        let wd = if kernel == KernelRef::Curiosity {
            0.0
        } else {
            0.02
        };
        let hyper = AdamHyper::new(1e-2, 0.9, 0.999, 1e-8, wd, 7)?;
        let buffers: &[GroupBuffer] = if kernel.amsgrad() {
            &[
                GroupBuffer::Params,
                GroupBuffer::Grads,
                GroupBuffer::M,
                GroupBuffer::V,
                GroupBuffer::VMax,
            ]
        } else {
            &[
                GroupBuffer::Params,
                GroupBuffer::Grads,
                GroupBuffer::M,
                GroupBuffer::V,
            ]
        };
        let dump = |group: &ParamGroup, when: &str| -> Result<()> {
            for b in buffers {
                let bytes: Vec<u8> = group
                    .download(*b)?
                    .iter()
                    .flat_map(|x| x.to_le_bytes())
                    .collect();
                std::fs::write(
                    dir.join(format!("{}.{}.{when}.f32", kernel.name(), b.name())),
                    bytes,
                )?;
            }
            Ok(())
        };
        dump(&group, "before")?;
        let policy = ClampPolicy::Fixed { bound: BOUND };
        match kernel {
            KernelRef::Dqn => {
                rt.dqn_adam_update(rt.stream(), &mut group, &hyper, Some(&scale), policy)?
            }
            KernelRef::Iqn => rt.iqn_adam(rt.stream(), &mut group, &hyper, policy)?,
            KernelRef::Iql => rt.iql_adam(rt.stream(), &mut group, &hyper, GRAD_CLIP, policy)?,
            KernelRef::Attn => rt.attn_adam(rt.stream(), &mut group, &hyper, policy)?,
            KernelRef::Curiosity => rt.curiosity_adam(rt.stream(), &mut group, &hyper, policy)?,
        };
        rt.synchronize()?;
        dump(&group, "after")?;
        let meta = format!(
            "{{\"kernel\": \"{}\", \"len\": {N}, \"lr\": {}, \"beta1\": {}, \"beta2\": {}, \"eps\": {}, \
             \"weight_decay\": {}, \"step\": {}, \"bound\": {BOUND}, \"grad_scale\": {GRAD_SCALE}, \
             \"grad_clip\": {GRAD_CLIP}}}",
            kernel.name(), hyper.lr, hyper.beta1, hyper.beta2, hyper.eps, hyper.weight_decay, hyper.step
        );
        std::fs::write(dir.join(format!("{}.json", kernel.name())), meta)?;
    }
    println!("wrote one step of each kernel to {}", dir.display());
    Ok(())
}
