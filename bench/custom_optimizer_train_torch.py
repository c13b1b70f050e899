"""PyTorch as the reference of the downstream example's training run (examples/custom-optimizer,
`train`): the same MLP, data, initial weights and schedule of changes, trained with
torch.optim.NAdam and torch.optim.RMSprop(centered=True) on the GPU, twice.

- Closed loop: torch computes its own gradients, so rounding differences feed back through the
  loss. Every step's loss is compared with the one the Rust run wrote. The allowance is what the
  dynamics make of f32 rounding, measured on torch itself: the same run in f64. At step t ours may
  differ from torch's f32 run by at most max(1e-4, 4 x the largest relative difference between
  torch's f32 and f64 runs up to t). A centered RMSprop whose gradient barely varies divides by
  sqrt(square_avg - grad_avg^2), a cancellation whose rounding such a run amplifies; NAdam's
  allowance stays at 1e-4.
- Open loop: torch is fed the gradients the Rust run used, step by step, so the difference is the
  optimizer's arithmetic alone (including the change at step 750). Ours and torch's f32 weights
  are compared with torch's f64 run on the same gradients; ours may be at most
  max(2 x torch's error, 1e-6) from it at every step.

Usage: custom_optimizer_train_torch.py DIR."""
import sys

import numpy as np
import torch

IN, HIDDEN, SAMPLES, STEPS, CHANGE_AT = 8, 32, 256, 1500, 750
PARAMS = HIDDEN * IN + HIDDEN + HIDDEN + 1
TOLERANCE = 1e-4
# Open loop: ours may be at most this far from the f64 run, or twice torch's f32 distance.
OPEN_FLOOR = 1e-6

i = np.arange(PARAMS, dtype=np.int64)
p0 = (((i * 7919) % 4001).astype(np.float32) / np.float32(1000.0) - np.float32(2.0)) * np.float32(0.25)
s = np.arange(SAMPLES)[:, None]
j = np.arange(IN)[None, :]
x = torch.tensor((((s * 13 + j * 7) % 101) / 101.0 - 0.5) * 2.0, dtype=torch.float64, device="cuda")
y = torch.sin(0.5 * x.sum(dim=1))


def loss_of(p):
    w = p.double()
    w1 = w[: HIDDEN * IN].view(HIDDEN, IN)
    b1 = w[HIDDEN * IN : HIDDEN * IN + HIDDEN]
    w2 = w[HIDDEN * IN + HIDDEN : HIDDEN * IN + 2 * HIDDEN]
    b2 = w[HIDDEN * IN + 2 * HIDDEN]
    h = torch.tanh(x @ w1.T + b1)
    out = h @ w2 + b2
    return ((out - y) ** 2).mean()


def closed_loop(make, change, dtype):
    """Torch's own run in `dtype`: each step's loss."""
    p = torch.nn.Parameter(torch.tensor(p0, device="cuda", dtype=dtype))
    opt = make([p])
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        loss = loss_of(p)
        loss.backward()
        losses.append(loss.item())
        if step == CHANGE_AT:
            change(opt.param_groups[0])
        opt.step()
    return np.array(losses)


def open_loop(make, change, grads, dtype):
    """Torch's optimizer in `dtype` fed `grads` (STEPS x PARAMS): the weights before the first
    step and after each, as f64."""
    p = torch.nn.Parameter(torch.tensor(p0, device="cuda", dtype=dtype))
    opt = make([p])
    out = np.empty((STEPS + 1, PARAMS))
    out[0] = p.detach().double().cpu().numpy()
    for step in range(STEPS):
        p.grad = torch.tensor(grads[step], device="cuda").to(dtype)
        if step == CHANGE_AT:
            change(opt.param_groups[0])
        opt.step()
        out[step + 1] = p.detach().double().cpu().numpy()
    return out


def nadam_change(group):
    group["lr"], group["weight_decay"] = 1e-3, 1e-3


def rmsprop_change(group):
    group["lr"], group["weight_decay"] = 5e-4, 1e-3


runs = [
    ("nadam", "torch.optim.NAdam",
     lambda ps: torch.optim.NAdam(ps, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-4,
                                  momentum_decay=4e-3),
     nadam_change),
    ("rmsprop", "torch.optim.RMSprop(centered=True)",
     lambda ps: torch.optim.RMSprop(ps, lr=1e-3, alpha=0.99, eps=1e-8, weight_decay=0.0,
                                    momentum=0.0, centered=True),
     rmsprop_change),
]


def relative(a, b):
    return np.abs(a - b) / np.abs(b)


ok = True
for name, what, make, change in runs:
    d = sys.argv[1]
    ours_loss = np.fromfile(f"{d}/{name}_loss.f64", dtype="<f8")
    grads = np.fromfile(f"{d}/{name}_grads.f32", dtype="<f4")
    ours_p = np.fromfile(f"{d}/{name}_params.f32", dtype="<f4").astype(np.float64)
    if (len(ours_loss), grads.size, ours_p.size) != (STEPS, STEPS * PARAMS, (STEPS + 1) * PARAMS):
        print(f"custom_optimizer train {name}: the Rust run wrote {len(ours_loss)} losses, "
              f"{grads.size} gradient and {ours_p.size} weight values; expected {STEPS}, "
              f"{STEPS * PARAMS}, {(STEPS + 1) * PARAMS}")
        ok = False
        continue
    grads = grads.reshape(STEPS, PARAMS)
    ours_p = ours_p.reshape(STEPS + 1, PARAMS)

    theirs = closed_loop(make, change, torch.float32)
    exact = closed_loop(make, change, torch.float64)
    rel = relative(ours_loss, theirs)
    allowed = np.maximum(TOLERANCE, 4.0 * np.maximum.accumulate(relative(theirs, exact)))
    worst = int((rel / allowed).argmax())
    closed_ok = bool((rel <= allowed).all())
    print(f"custom_optimizer train {name} vs {what} ({torch.__version__}), closed loop: {STEPS} "
          f"steps, loss {theirs[0]:.6f} -> {theirs[-1]:.6f} (ours {ours_loss[-1]:.6f}, torch f64 "
          f"{exact[-1]:.6f}); max relative loss difference {rel.max():.3e} at step "
          f"{int(rel.argmax())}; torch f32 vs f64 {relative(theirs, exact).max():.3e}; worst "
          f"step against its allowance: {worst} ({rel[worst]:.3e} of {allowed[worst]:.3e}) "
          f"{'ok' if closed_ok else 'FAIL'}")

    torch_p = open_loop(make, change, grads, torch.float32)
    exact_p = open_loop(make, change, grads, torch.float64)
    ours_err = np.abs(ours_p - exact_p).max(axis=1)
    torch_err = np.abs(torch_p - exact_p).max(axis=1)
    open_allowed = np.maximum(2.0 * torch_err, OPEN_FLOOR)
    open_ok = bool((ours_err <= open_allowed).all())
    print(f"custom_optimizer train {name} vs {what}, open loop (our gradients): weights vs torch "
          f"f64 at worst {ours_err.max():.3e} (torch f32: {torch_err.max():.3e}); ours vs torch f32 "
          f"at worst {np.abs(ours_p - torch_p).max():.3e}; "
          f"{'ok' if open_ok else 'FAIL at step ' + str(int((ours_err / open_allowed).argmax()))}")
    ok &= closed_ok and open_ok
sys.exit(0 if ok else 1)
