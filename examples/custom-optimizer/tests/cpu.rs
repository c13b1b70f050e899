//! The downstream crate on a machine without a GPU: its module holds its own entries only, the
//! audit proves each one's clamp, and every kernel's element (the update and the clamp the
//! entry stores) matches the f64 reference written from the formulas.
use adamant_build::audit::audit;
use custom_optimizer::reference;
use custom_optimizer::{kernels, lion_kernel, sgd_momentum_kernel, PTX};

#[test]
fn the_module_holds_this_crates_entries_and_none_of_adamants() {
    let entries: Vec<&str> = PTX
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
        .map(|l| l.split('(').next().unwrap().trim())
        .collect();
    let mut expected: Vec<&str> = kernels().iter().map(|k| k.name).collect();
    expected.sort_unstable();
    let mut found = entries.clone();
    found.sort_unstable();
    assert_eq!(found, expected);
    // Four kernels, four entries each, and NAdam's schedule entry.
    assert_eq!(found.len(), 17, "{found:?}");
    // adamant's own set is linked through the runtime, which embeds its module: every entry of
    // that module is registered here, so the loop below checks each of them.
    let adamants = adamant_device::abi::kernels();
    let adamants_entries = adamant_runtime::PTX.matches(".visible .entry ").count();
    assert_eq!(adamants.len(), adamants_entries);
    for ours in adamants {
        assert!(
            !entries.contains(&ours.name),
            "adamant's {} leaked in",
            ours.name
        );
    }
}

#[test]
fn the_kernel_list_the_build_wrote_is_this_crates_set() {
    let listed = adamant_build::kernel_list::from_json(custom_optimizer::KERNEL_LIST).unwrap();
    let ours = kernels();
    assert_eq!(listed.len(), ours.len());
    for (a, b) in listed.iter().zip(&ours) {
        assert_eq!(*a, *b);
    }
}

#[test]
fn the_audit_proves_every_entrys_clamp() {
    let report = audit(PTX, &kernels());
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.optimizer_entries().count(), 16);
}

/// A deterministic stream of test values: signs, magnitudes from 1e-6 to 1e3, and the exact
/// values that sit on the clamp's edges.
fn values() -> Vec<f32> {
    let mut v = vec![0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.0, 1e-6, -1e-6, 1e3, -1e3];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..60 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let unit = (x >> 40) as f32 / (1u64 << 24) as f32; // [0, 1)
        let magnitude = 10f32.powf(unit * 9.0 - 6.0);
        v.push(if x & 1 == 0 { magnitude } else { -magnitude });
    }
    v
}

/// `|a - b|` within `units` f32 epsilons of `scale`.
fn close(a: f32, b: f64, scale: f64, units: f64) -> bool {
    (a as f64 - b).abs() <= units * f32::EPSILON as f64 * scale.max(f64::MIN_POSITIVE)
}

#[test]
fn lion_matches_the_f64_reference() {
    let (lr, beta1, beta2, wd) = (1e-2f32, 0.9f32, 0.99f32, 0.1f32);
    let mut checked = 0;
    for &p in &values() {
        for &g in &values()[..30] {
            for &m0 in &[0.0f32, 0.3, -2.0] {
                for bound in [0.0f32, 1.0, 100.0] {
                    let c = beta1 as f64 * m0 as f64 + (1.0 - beta1 as f64) * g as f64;
                    // The sign is discontinuous at 0: where f32 and f64 may round c to
                    // different sides, the two are not comparable.
                    if c.abs() < 1e-5 * (m0.abs() as f64 + g.abs() as f64) {
                        continue;
                    }
                    let mut m = m0;
                    let stored = lion_kernel::element(p, g, &mut m, lr, beta1, beta2, wd, bound);
                    let (rp, rm) = reference::lion(
                        p as f64,
                        g as f64,
                        m0 as f64,
                        lr as f64,
                        beta1 as f64,
                        beta2 as f64,
                        wd as f64,
                        bound as f64,
                    );
                    let scale = p.abs() as f64 + lr as f64 * (1.0 + wd as f64 * p.abs() as f64);
                    assert!(
                        close(stored, rp, scale, 4.0),
                        "p {p} g {g} m {m0} b {bound}: {stored} vs {rp}"
                    );
                    let mscale = m0.abs() as f64 + g.abs() as f64;
                    assert!(close(m, rm, mscale, 4.0), "m: {m} vs {rm}");
                    if bound > 0.0 {
                        assert!(stored.abs() <= bound, "clamped to {bound}: {stored}");
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 10_000, "{checked}");
}

#[test]
fn sgd_momentum_matches_the_f64_reference() {
    let (lr, momentum, wd) = (1e-2f32, 0.9f32, 0.01f32);
    for &p in &values() {
        for &g in &values()[..30] {
            for &b0 in &[0.0f32, 0.3, -2.0] {
                for bound in [0.0f32, 1.0, 100.0] {
                    let mut b = b0;
                    let stored =
                        sgd_momentum_kernel::element(p, g, &mut b, lr, momentum, wd, bound);
                    let (rp, rb) = reference::sgd_momentum(
                        p as f64,
                        g as f64,
                        b0 as f64,
                        lr as f64,
                        momentum as f64,
                        wd as f64,
                        bound as f64,
                    );
                    let bscale = momentum as f64 * b0.abs() as f64
                        + g.abs() as f64
                        + wd as f64 * p.abs() as f64;
                    assert!(close(b, rb, bscale, 4.0), "buf: {b} vs {rb}");
                    let scale = p.abs() as f64 + lr as f64 * bscale;
                    assert!(
                        close(stored, rp, scale, 4.0),
                        "p {p} g {g} b {b0} bound {bound}: {stored} vs {rp}"
                    );
                    if bound > 0.0 {
                        assert!(stored.abs() <= bound);
                    }
                }
            }
        }
    }
}

#[test]
fn a_nan_passes_the_clamp_and_a_bound_of_zero_disables_it() {
    // The clamp of adamant's own kernels, stamped here by the same macro.
    let mut m = 0.0;
    assert!(lion_kernel::element(f32::NAN, 1.0, &mut m, 1e-2, 0.9, 0.99, 0.0, 1.0).is_nan());
    let mut b = 0.0;
    assert_eq!(
        sgd_momentum_kernel::element(5.0, 0.0, &mut b, 0.0, 0.9, 0.0, 0.0),
        5.0
    );
    assert_eq!(
        sgd_momentum_kernel::element(5.0, 0.0, &mut b, 0.0, 0.9, 0.0, 2.0),
        2.0
    );
}
