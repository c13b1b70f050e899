//! Launches on memory and a stream that "other code" owns (here: cust buffers known only by
//! address, and a stream created with a raw driver call), through `Launch::raw_buffers`
//! and `ForeignStream`: the same results as the safe launch, bit for bit, and the same
//! refusals, plus the driver's check that each range is device memory. GPU only (`#[ignore]`).
use adamant_kernels::optimizers::iqn_adam_kernel;
use adamant_runtime::cust::memory::{CopyDestination, DeviceBuffer};
use adamant_runtime::{
    adam_scalars, AdamHyper, Adamant, ClampPolicy, DeviceArray, DeviceRegion, Error, ForeignStream,
    Owned, ParamBuffer, Raw, Records,
};

const N: usize = 10_000;

fn data(seed: u32) -> [Vec<f32>; 4] {
    let f = |k: u32| -> Vec<f32> {
        (0..N as u32)
            .map(|i| ((i.wrapping_mul(2654435761) ^ (seed + k)) % 2001) as f32 / 1000.0 - 1.0)
            .collect()
    };
    let v: Vec<f32> = f(3).iter().map(|x| x.abs() * 0.01).collect();
    [f(0).iter().map(|x| x * 2.0).collect(), f(1), f(2), v]
}

fn upload(host: &[Vec<f32>; 4]) -> Vec<DeviceBuffer<f32>> {
    host.iter()
        .map(|h| DeviceBuffer::from_slice(h).unwrap())
        .collect()
}

fn regions(owned: &[DeviceBuffer<f32>]) -> iqn_adam_kernel::Buffers<Raw> {
    let r =
        |i: usize| DeviceRegion::new(owned[i].as_device_ptr().as_raw(), owned[i].len()).unwrap();
    iqn_adam_kernel::Buffers {
        p: r(0),
        g: r(1),
        m: r(2),
        v: r(3),
    }
}

fn download(owned: &[DeviceBuffer<f32>]) -> Vec<Vec<f32>> {
    owned
        .iter()
        .map(|b| {
            let mut h = vec![0.0f32; b.len()];
            b.copy_to(&mut h[..]).unwrap();
            h
        })
        .collect()
}

/// The same data in the runtime's own buffers, for the safe launches.
struct Safe {
    p: ParamBuffer,
    g: DeviceArray,
    m: DeviceArray,
    v: DeviceArray,
}

fn safe_upload(host: &[Vec<f32>; 4]) -> Safe {
    let array = |h: &[f32]| DeviceArray::from_host(h).unwrap();
    Safe {
        p: ParamBuffer::from_host(&host[0]).unwrap(),
        g: array(&host[1]),
        m: array(&host[2]),
        v: array(&host[3]),
    }
}

/// The four buffers as the safe launchers take them.
fn safe_buffers(safe: &mut Safe) -> iqn_adam_kernel::Buffers<Owned<'_>> {
    iqn_adam_kernel::Buffers {
        p: &mut safe.p,
        g: safe.g.input(),
        m: &mut safe.m,
        v: &mut safe.v,
    }
}

/// Every buffer of `safe` and `raw` equal bit for bit; returns the raw side's contents.
fn assert_same_bits(safe: &Safe, raw: &[DeviceBuffer<f32>], what: &str) -> Vec<Vec<f32>> {
    let a = [
        safe.p.download().unwrap(),
        safe.g.download().unwrap(),
        safe.m.download().unwrap(),
        safe.v.download().unwrap(),
    ];
    let b = download(raw);
    for (name, (x, y)) in ["p", "g", "m", "v"].iter().zip(a.iter().zip(&b)) {
        let same = x.iter().zip(y).all(|(x, y)| x.to_bits() == y.to_bits());
        assert!(
            same,
            "buffer {name} differs between the safe launch and {what}"
        );
    }
    b
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn raw_launches_on_a_foreign_stream_equal_safe_launches_bit_for_bit() {
    let rt = Adamant::new().expect("a GPU");
    let hyper = AdamHyper::new(1e-2, 0.9, 0.999, 1e-8, 0.01, 3).unwrap();
    let scalars = adam_scalars!(iqn_adam_kernel, hyper, weight_decay: 0.01).unwrap();
    let policy = ClampPolicy::Fixed { bound: 1.5 };
    let host = data(7);

    // The safe launch, on the runtime's stream.
    let mut safe = safe_upload(&host);
    let safe_records = Records::single::<iqn_adam_kernel::Entry>().unwrap();
    {
        let b = safe_buffers(&mut safe);
        rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
            .plain(&scalars, policy)
            .buffers(&b, &safe_records)
            .unwrap();
    }
    rt.synchronize().unwrap();

    // The raw launch, on a stream made by a raw driver call, as another library would.
    let foreign = upload(&host);
    let foreign_records = Records::single::<iqn_adam_kernel::Entry>().unwrap();
    let mut raw_stream: adamant_runtime::cust::sys::CUstream = std::ptr::null_mut();
    let status = unsafe { adamant_runtime::cust::sys::cuStreamCreate(&mut raw_stream, 1) };
    assert_eq!(status, adamant_runtime::cust::sys::CUresult::CUDA_SUCCESS);
    {
        let stream = unsafe { ForeignStream::from_raw(raw_stream) };
        // SAFETY: `foreign` outlives the launch (the stream is synchronised below).
        let info = unsafe {
            rt.launch::<iqn_adam_kernel::Entry>(&stream)
                .plain(&scalars, policy)
                .raw_buffers(&regions(&foreign), &foreign_records)
        }
        .unwrap();
        assert_eq!(info.elements, N);
        stream.synchronize().unwrap();
    } // the borrow ends; the stream is still ours to destroy
    let status = unsafe { adamant_runtime::cust::sys::cuStreamDestroy_v2(raw_stream) };
    assert_eq!(status, adamant_runtime::cust::sys::CUresult::CUDA_SUCCESS);

    let b = assert_same_bits(&safe, &foreign, "the raw launch");
    // The clamp was applied (p started at up to ±2, the bound is 1.5).
    assert!(b[0].iter().all(|x| x.abs() <= 1.5));
    assert!(host[0].iter().any(|x| x.abs() > 1.5));
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn raw_launches_refuse_overlaps_short_buffers_and_ranges_past_their_allocation() {
    let rt = Adamant::new().expect("a GPU");
    let hyper = AdamHyper::pytorch_defaults(1).unwrap();
    let scalars = adam_scalars!(iqn_adam_kernel, hyper, weight_decay: 0.0).unwrap();
    let policy = ClampPolicy::Fixed { bound: 1.0 };
    let owned = upload(&data(1));
    let records = Records::single::<iqn_adam_kernel::Entry>().unwrap();
    let before = download(&owned);
    let launch = |b: &iqn_adam_kernel::Buffers<Raw>| unsafe {
        rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
            .plain(&scalars, policy)
            .raw_buffers(b, &records)
    };
    let base = owned[0].as_device_ptr().as_raw();
    // One element past the end of p's allocation.
    let past = iqn_adam_kernel::Buffers {
        p: DeviceRegion::new(base + 4, N).unwrap(),
        ..regions(&owned)
    };
    match launch(&past) {
        Err(Error::ForeignBuffer {
            kernel,
            buffer,
            reason,
            ..
        }) => {
            assert_eq!((kernel, buffer), ("iqn_adam_kernel", "p"));
            assert!(reason.contains("4 bytes past the end"), "{reason}");
        }
        other => panic!("expected ForeignBuffer, got {other:?}"),
    }
    // m over p: the overlap check of every launch path.
    let overlapping = iqn_adam_kernel::Buffers {
        m: DeviceRegion::new(base, N).unwrap(),
        ..regions(&owned)
    };
    assert!(matches!(launch(&overlapping), Err(Error::Overlap { .. })));
    // A short v: the length check.
    let short = iqn_adam_kernel::Buffers {
        v: DeviceRegion::new(owned[3].as_device_ptr().as_raw(), N - 1).unwrap(),
        ..regions(&owned)
    };
    assert!(matches!(
        launch(&short),
        Err(Error::LengthMismatch { buffer: "v", .. })
    ));
    rt.synchronize().unwrap();
    assert_eq!(download(&owned), before, "a refused launch wrote nothing");
}

/// Provokes CUDA API errors on purpose (the driver's lookups of addresses that are not device
/// memory), so `gpu-run.sh` skips it under compute-sanitizer.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn raw_launches_refuse_host_memory_provokes_driver_errors() {
    let rt = Adamant::new().expect("a GPU");
    let hyper = AdamHyper::pytorch_defaults(1).unwrap();
    let scalars = adam_scalars!(iqn_adam_kernel, hyper, weight_decay: 0.0).unwrap();
    let owned = upload(&data(2));
    let records = Records::single::<iqn_adam_kernel::Entry>().unwrap();
    let host = vec![0.5f32; N];
    let on_host = iqn_adam_kernel::Buffers {
        g: DeviceRegion::new(host.as_ptr() as u64, N).unwrap(),
        ..regions(&owned)
    };
    let refused = unsafe {
        rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
            .plain(&scalars, ClampPolicy::Fixed { bound: 1.0 })
            .raw_buffers(&on_host, &records)
    };
    assert!(
        matches!(refused, Err(Error::ForeignBuffer { buffer: "g", .. })),
        "{refused:?}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn raw_stepped_launches_equal_safe_stepped_launches_over_steps() {
    use adamant_runtime::{QAbsRef, StepBound, StepSpec, StepStates};
    let rt = Adamant::new().expect("a GPU");
    let spec = StepSpec::adam(
        &AdamHyper::new(1e-2, 0.9, 0.999, 1e-8, 0.01, 1).unwrap(),
        // A fixed bound of 1.5, so the clamp is engaged on the ±2 weights.
        StepBound::Policy(ClampPolicy::Fixed { bound: 1.5 }),
    )
    .and_then(|s| {
        s.with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper {
            eps: 1e-8,
            weight_decay: 0.01,
        })
    })
    .unwrap();
    let safe_states =
        StepStates::new(std::slice::from_ref(&spec), QAbsRef::Owned { initial: 1.0 }).unwrap();
    let raw_states = StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 }).unwrap();
    let scalars = iqn_adam_kernel::StepScalars {};
    let host = data(11);
    let mut safe = safe_upload(&host);
    let foreign = upload(&host);
    let safe_records = Records::single::<iqn_adam_kernel::Entry>().unwrap();
    let raw_records = Records::single::<iqn_adam_kernel::Entry>().unwrap();
    for _ in 0..5 {
        safe_states.advance(&rt, rt.stream()).unwrap();
        {
            let b = safe_buffers(&mut safe);
            rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
                .stepped(&scalars, &safe_states, 0)
                .buffers(&b, &safe_records)
                .unwrap();
        }
        raw_states.advance(&rt, rt.stream()).unwrap();
        // SAFETY: `foreign` outlives the launches (the stream is synchronised below).
        unsafe {
            rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
                .stepped(&scalars, &raw_states, 0)
                .raw_buffers(&regions(&foreign), &raw_records)
        }
        .unwrap();
    }
    rt.synchronize().unwrap();
    let b = assert_same_bits(&safe, &foreign, "the raw stepped launch");
    assert!(b[0].iter().all(|x| x.abs() <= 1.5));
    assert_eq!(raw_states.read().unwrap()[0].step, 5);
}

/// A raw multi-tensor launch over three "foreign" tensors equals the safe multi-tensor launch
/// over the same data, bit for bit, plain and stepped, with the same records; a region past its
/// allocation in tensor 1 is refused, naming tensor 1, with nothing enqueued.
#[test]
#[ignore = "needs a CUDA GPU: run scripts/gpu-build.sh then gpu-bundle/gpu-run.sh"]
fn raw_multi_tensor_launches_equal_safe_multi_tensor_launches() {
    use adamant_runtime::{QAbsRef, StepBound, StepSpec, StepStates, TensorSet};
    let rt = Adamant::new().expect("a GPU");
    let hyper = AdamHyper::new(1e-2, 0.9, 0.999, 1e-8, 0.01, 2).unwrap();
    let scalars = adam_scalars!(iqn_adam_kernel, hyper, weight_decay: 0.01).unwrap();
    let policy = ClampPolicy::Fixed { bound: 1.5 };
    let hosts = [data(21), data(22), data(23)];
    let mut safe: Vec<Safe> = hosts.iter().map(safe_upload).collect();
    let foreign: Vec<Vec<DeviceBuffer<f32>>> = hosts.iter().map(upload).collect();
    let (mut safe_set, mut raw_set) = (TensorSet::new(), TensorSet::new());
    let spec = StepSpec::adam(&hyper, StepBound::Policy(policy))
        .and_then(|s| {
            s.with_kernel::<iqn_adam_kernel::Entry>(iqn_adam_kernel::Hyper {
                eps: 1e-8,
                weight_decay: 0.01,
            })
        })
        .unwrap();
    let safe_states =
        StepStates::new(std::slice::from_ref(&spec), QAbsRef::Owned { initial: 1.0 }).unwrap();
    let raw_states = StepStates::new(&[spec], QAbsRef::Owned { initial: 1.0 }).unwrap();
    let step_scalars = iqn_adam_kernel::StepScalars {};
    let raw_tensors: Vec<_> = foreign.iter().map(|t| regions(t)).collect();
    for stepped in [false, true] {
        {
            let b: Vec<_> = safe.iter_mut().map(safe_buffers).collect();
            if stepped {
                safe_states.advance(&rt, rt.stream()).unwrap();
                rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
                    .stepped(&step_scalars, &safe_states, 0)
                    .set(&mut safe_set, &b)
                    .unwrap();
            } else {
                rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
                    .plain(&scalars, policy)
                    .set(&mut safe_set, &b)
                    .unwrap();
            }
        }
        // SAFETY: `foreign` outlives the launches (synchronised below).
        let info = unsafe {
            if stepped {
                raw_states.advance(&rt, rt.stream()).unwrap();
                rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
                    .stepped(&step_scalars, &raw_states, 0)
                    .raw_set(&mut raw_set, &raw_tensors)
            } else {
                rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
                    .plain(&scalars, policy)
                    .raw_set(&mut raw_set, &raw_tensors)
            }
        }
        .unwrap();
        assert_eq!(info.elements, 3 * N);
        rt.synchronize().unwrap();
        for (t, (s, f)) in safe.iter().zip(&foreign).enumerate() {
            let what = format!("the raw multi-tensor launch (tensor {t}, stepped {stepped})");
            let b = assert_same_bits(s, f, &what);
            assert!(b[0].iter().all(|x| x.abs() <= 1.5), "{what}: clamped");
        }
        assert_eq!(safe_set.records(), raw_set.records(), "stepped {stepped}");
    }
    assert_eq!(raw_set.rebuilds(), 1, "the same regions: tables built once");
    assert_eq!(raw_set.records().unwrap().sequence, 2);

    // Tensor 1's gradient one element past its allocation's end: refused, naming tensor 1.
    let before = download(&foreign[1]);
    let mut bad: Vec<_> = foreign.iter().map(|t| regions(t)).collect();
    bad[1].g = DeviceRegion::new(foreign[1][1].as_device_ptr().as_raw() + 4, N).unwrap();
    let refused = unsafe {
        rt.launch::<iqn_adam_kernel::Entry>(rt.stream())
            .plain(&scalars, policy)
            .raw_set(&mut raw_set, &bad)
    };
    match refused {
        Err(Error::InTensor { tensor: 1, source }) => assert!(
            matches!(*source, Error::ForeignBuffer { buffer: "g", .. }),
            "{source:?}"
        ),
        other => panic!("expected tensor 1's foreign-buffer error, got {other:?}"),
    }
    rt.synchronize().unwrap();
    assert_eq!(download(&foreign[1]), before, "nothing was launched");
    assert_eq!(raw_set.records().unwrap().sequence, 2);
    assert_eq!(raw_set.rebuilds(), 1, "the refused set built no tables");
}
