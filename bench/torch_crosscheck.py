"""Replays the step that examples/torch_crosscheck wrote, through PyTorch's own optimizers, and
compares parameters and moments: a second reference, independent of ours.

Per kernel: dqn -> AdamW on g * grad_scale; iqn -> Adam(weight_decay); iql -> the gradient
clamped to +-grad_clip, then Adam(weight_decay); attn -> AdamW; curiosity -> Adam(amsgrad=True).
Then PyTorch's new parameters get the clamp (|p| > bound -> copysign(bound, p); NaN kept).
Exits non-zero if any kernel differs by more than the tolerance."""
import json, os, sys
import numpy as np
import torch

RULES = {
    "dqn_adam_update_kernel": ("adamw", "scale"),
    "iqn_adam_kernel": ("adam", None),
    "iql_adam_kernel": ("adam", "clip"),
    "attn_adam_kernel": ("adamw", None),
    "curiosity_adam_step": ("amsgrad", None),
}
# Error relative to max(|torch's value|, |the value before the step|, 1e-3): the magnitude of the
# terms the step adds, so cancellation (a moment that nearly vanishes) is not read as a mistake.
# PyTorch rounds differently (m.lerp_(g, 1 - beta1), for one), so results agree to a few f32 ulps
# of that magnitude, not bit for bit; a wrong formula is off by orders of magnitude more.
TOLERANCE = 1e-5


def load(d, k, buf, when):
    return torch.from_numpy(np.fromfile(os.path.join(d, f"{k}.{buf}.{when}.f32"), dtype="<f4")).cuda()


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "/tmp/adamant-crosscheck"
    failed = []
    print(f"{'kernel':<24} {'p':>10} {'m':>10} {'v':>10} {'v_max':>10}  (max relative error vs torch {torch.__version__})")
    for k, (rule, extra) in RULES.items():
        meta = json.load(open(os.path.join(d, f"{k}.json")))
        p = load(d, k, "params", "before")
        g = load(d, k, "grads", "before").clone()
        m0, v0 = load(d, k, "m", "before"), load(d, k, "v", "before")
        if extra == "scale":
            g = g * float(np.float32(meta["grad_scale"]))
        if extra == "clip":
            clip = float(np.float32(meta["grad_clip"]))
            g = g.clamp(-clip, clip)
        param = torch.nn.Parameter(p.clone())
        param.grad = g
        # The kernels receive f32 hyperparameters: give PyTorch the same numbers (0.999 as an
        # f32 is 0.99900001287..., and 1 - beta2 then differs from 1 - 0.999 by 1.3e-5).
        f32 = lambda x: float(np.float32(x))
        kw = dict(lr=f32(meta["lr"]), betas=(f32(meta["beta1"]), f32(meta["beta2"])),
                  eps=f32(meta["eps"]), weight_decay=f32(meta["weight_decay"]), foreach=False)
        if rule == "adamw":
            opt = torch.optim.AdamW([param], **kw)
        else:
            opt = torch.optim.Adam([param], amsgrad=(rule == "amsgrad"), **kw)
        state = {"step": torch.tensor(float(meta["step"] - 1)), "exp_avg": m0.clone(), "exp_avg_sq": v0.clone()}
        if rule == "amsgrad":
            state["max_exp_avg_sq"] = load(d, k, "v_max", "before").clone()
        opt.state[param] = state
        with torch.no_grad():
            opt.step()
            b = float(np.float32(meta["bound"]))
            new_p = param.detach()
            new_p = torch.where(new_p.abs() > b, torch.full_like(new_p, b).copysign(new_p), new_p)

        def rel(ours, theirs, before):
            scale = torch.maximum(theirs.abs(), before.abs()).clamp_min(1e-3)
            both_nan = ours.isnan() & theirs.isnan()
            err = ((ours - theirs).abs() / scale).masked_fill(both_nan, 0.0)
            return float(err.nan_to_num(nan=float("inf")).max())

        errs = {
            "p": rel(load(d, k, "params", "after"), new_p, p),
            "m": rel(load(d, k, "m", "after"), opt.state[param]["exp_avg"], m0),
            "v": rel(load(d, k, "v", "after"), opt.state[param]["exp_avg_sq"], v0),
        }
        if rule == "amsgrad":
            errs["v_max"] = rel(load(d, k, "v_max", "after"), opt.state[param]["max_exp_avg_sq"],
                                load(d, k, "v_max", "before"))
        print(f"{k:<24} " + " ".join(f"{errs.get(n, float('nan')):>10.2e}" for n in ("p", "m", "v", "v_max")))
        if any(e > TOLERANCE for e in errs.values()):
            failed.append(k)
    if failed:
        print("torch crosscheck FAILED:", ", ".join(failed))
        sys.exit(1)
    print(f"torch crosscheck: all five kernels within {TOLERANCE:g} of PyTorch")


if __name__ == "__main__":
    main()
