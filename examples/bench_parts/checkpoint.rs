//! Issue 27's goals: the save and the load of a 2^28-element AdamW state (parameters and both
//! moments in f32: 3 GiB, plus the step record) against the disk's sequential write and read
//! speed measured in the same run on the same folder (the same number of bytes written with
//! one `write_all` and an fsync, and read back with one `read`), with the phases of each
//! (device copies, checksum and serialisation, the file; the read, the checks, the upload).
//! The read-back of a file just written may come from the page cache, for the baseline and the
//! load alike; both figures say so.
use std::io::Write;
use std::time::Instant;

use adamant::kernels::optimizers::attn_adam_kernel;
use adamant::runtime::checkpoint::Checkpoint;
use adamant::runtime::{
    AdamHyper, Adamant, ClampPolicy, DeviceArray, ParamBuffer, QAbsRef, StepBound, StepSpec,
    StepStates,
};
use anyhow::Result;
use serde_json::{json, Value};

pub(crate) fn checkpoint(rt: &Adamant, out: &mut Value) -> Result<()> {
    let n = 1usize << 28;
    let s = rt.stream();
    let p = ParamBuffer::filled(n, 0.25)?;
    let g = DeviceArray::zeroed(n)?;
    let m = DeviceArray::filled(n, 1e-3)?;
    let v = DeviceArray::filled(n, 1e-6)?;
    let spec = StepSpec::adam(
        &AdamHyper::new(1e-3, 0.9, 0.999, 1e-8, 0.01, 1)?,
        StepBound::Policy(ClampPolicy::Fixed { bound: 1.0 }),
    )?
    .with_kernel::<attn_adam_kernel::Entry>(attn_adam_kernel::Hyper {
        eps: 1e-8,
        weight_decay: 0.01,
    })?;
    let states = StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 })?;
    let dir = std::env::var_os("ADAMANT_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let path = dir.join("adamant-bench-checkpoint.safetensors");
    let bytes = 3 * n * 4;

    // The disk alone: the same bytes, one write and an fsync, then one read.
    let raw = dir.join("adamant-bench-raw.bin");
    let data = vec![0x5au8; bytes];
    let t = Instant::now();
    let mut f = std::fs::File::create(&raw)?;
    f.write_all(&data)?;
    f.sync_all()?;
    let disk_write = t.elapsed().as_secs_f64();
    drop((f, data));
    let t = Instant::now();
    let back = std::fs::read(&raw)?;
    let disk_read = t.elapsed().as_secs_f64();
    drop(back);
    std::fs::remove_file(&raw)?;

    // Save: the device copies into the checkpoint, then the file (checksum, serialise, write,
    // fsync, rename).
    rt.synchronize()?;
    let t = Instant::now();
    let mut ck = Checkpoint::new();
    ck.save_steps(&states, s)?;
    let b = attn_adam_kernel::Buffers {
        p: &p,
        g: g.input(),
        m: &m,
        v: &v,
    };
    ck.save_tensor::<attn_adam_kernel::Entry>("w", &b, Some((&states, 0)), s)?;
    let copies = t.elapsed().as_secs_f64();
    let t = Instant::now();
    ck.save(&path)?;
    let file = t.elapsed().as_secs_f64();
    drop(ck);

    // Load: read and check the file (format, checksum), then check the state against the
    // buffers and write it.
    let t = Instant::now();
    let ck = Checkpoint::load(&path)?;
    let read = t.elapsed().as_secs_f64();
    let (mut p, mut m, mut v) = (p, m, v);
    let t = Instant::now();
    let mut restore = ck.restore();
    let mut b = attn_adam_kernel::Buffers {
        p: &mut p,
        g: g.input(),
        m: &mut m,
        v: &mut v,
    };
    restore.tensor::<attn_adam_kernel::Entry>("w", &mut b)?;
    restore.steps(&states)?;
    let checks = t.elapsed().as_secs_f64();
    let t = Instant::now();
    restore.commit(s)?;
    let upload = t.elapsed().as_secs_f64();
    std::fs::remove_file(&path)?;
    drop((ck, b));

    // A save overlapped with training: `STEPS` stepped AdamW launches alone, then the same
    // with a snapshot taken before them and read on another thread meanwhile.
    const STEPS: usize = 100;
    let records = adamant::runtime::Records::single::<attn_adam_kernel::Entry>()?;
    let steps = |p: &mut ParamBuffer, m: &mut DeviceArray, v: &mut DeviceArray| -> Result<()> {
        for _ in 0..STEPS {
            states.advance(rt, s)?;
            let b = attn_adam_kernel::Buffers {
                p: &mut *p,
                g: g.input(),
                m: &mut *m,
                v: &mut *v,
            };
            rt.launch::<attn_adam_kernel::Entry>(s)
                .stepped(&attn_adam_kernel::StepScalars {}, &states, 0)
                .buffers(&b, &records)?;
        }
        Ok(())
    };
    steps(&mut p, &mut m, &mut v)?; // warm
    rt.synchronize()?;
    let t = Instant::now();
    steps(&mut p, &mut m, &mut v)?;
    rt.synchronize()?;
    let alone = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut snapshot = adamant::runtime::checkpoint::Snapshot::new();
    snapshot.steps(&states, s)?;
    let b = attn_adam_kernel::Buffers {
        p: &p,
        g: g.input(),
        m: &m,
        v: &v,
    };
    snapshot.tensor::<attn_adam_kernel::Entry>("w", &b, Some(0), s)?;
    let pending = snapshot.finish(s)?;
    let ctx = rt.context().clone();
    let reader = std::thread::spawn(move || -> Result<(f64, usize)> {
        cust::context::CurrentContext::set_current(&ctx)?;
        let side = cust::stream::Stream::new(cust::stream::StreamFlags::NON_BLOCKING, None)?;
        let t = Instant::now();
        let ck = pending.read(&side)?;
        Ok((t.elapsed().as_secs_f64(), ck.names().count()))
    });
    steps(&mut p, &mut m, &mut v)?;
    rt.synchronize()?;
    let overlapped = t.elapsed().as_secs_f64();
    let (read_s, tensors) = reader
        .join()
        .map_err(|_| anyhow::anyhow!("the reader panicked"))??;
    let overlapped_total = t.elapsed().as_secs_f64();
    println!(
        "checkpoint overlapped: {STEPS} AdamW steps at 2^28 {:.3} ms each alone, {:.3} ms each \
         with a snapshot taken and read ({tensors} tensors, read {read_s:.2} s) meanwhile \
         ({:+.1} %); everything done after {overlapped_total:.2} s",
        1e3 * alone / STEPS as f64,
        1e3 * overlapped / STEPS as f64,
        100.0 * (overlapped / alone - 1.0),
    );
    out["checkpoint_overlapped"] = json!({
        "steps": STEPS, "alone_s": alone, "with_snapshot_s": overlapped, "read_s": read_s,
        "total_s": overlapped_total, "rise": overlapped / alone - 1.0,
    });

    let gbs = |secs: f64| bytes as f64 / secs / 1e9;
    let save = copies + file;
    let load = read + checks + upload;
    println!(
        "checkpoint 2^28 AdamW (3 GiB): disk write {:.2} GB/s, read {:.2} GB/s (page cache \
         possible); save {save:.2} s = {:.2} GB/s, {:.2}× the disk's write (device copies \
         {copies:.2} s, file {file:.2} s); load {load:.2} s = {:.2} GB/s, {:.2}× the read \
         (read + checksum {read:.2} s, checks {checks:.2} s, upload {upload:.2} s)",
        gbs(disk_write),
        gbs(disk_read),
        gbs(save),
        disk_write / save,
        gbs(load),
        disk_read / load,
    );
    out["checkpoint"] = json!({
        "elements": n, "bytes": bytes, "folder": dir.display().to_string(),
        "disk_write_s": disk_write, "disk_read_s": disk_read,
        "save_s": save, "save_copies_s": copies, "save_file_s": file,
        "load_s": load, "load_read_s": read, "load_checks_s": checks, "load_upload_s": upload,
        "save_vs_disk": disk_write / save, "load_vs_disk": disk_read / load,
    });
    Ok(())
}
