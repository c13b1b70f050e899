"""PyTorch as the reference of the downstream example's training run (examples/custom-optimizer,
`train`): the same MLP, data, initial weights and schedule of changes, trained with
torch.optim.NAdam and torch.optim.RMSprop(centered=True) on the GPU; every step's loss is
compared with the one the Rust run wrote (relative difference at most 1e-4).
Usage: custom_optimizer_train_torch.py DIR."""
import sys

import numpy as np
import torch

IN, HIDDEN, SAMPLES, STEPS, CHANGE_AT = 8, 32, 256, 1500, 750
PARAMS = HIDDEN * IN + HIDDEN + HIDDEN + 1
TOLERANCE = 1e-4

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


def train(make, change):
    p = torch.nn.Parameter(torch.tensor(p0, device="cuda"))
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
ok = True
for name, what, make, change in runs:
    theirs = train(make, change)
    ours = np.fromfile(f"{sys.argv[1]}/{name}_loss.f64", dtype="<f8")
    rel = np.abs(ours - theirs) / np.abs(theirs)
    worst = int(rel.argmax())
    print(f"custom_optimizer train {name} vs {what} ({torch.__version__}): {STEPS} steps, loss "
          f"{theirs[0]:.6f} -> {theirs[-1]:.6f} (ours {ours[-1]:.6f}); max relative loss "
          f"difference {rel.max():.3e} at step {worst}")
    ok &= bool(rel.max() <= TOLERANCE) and len(ours) == STEPS
sys.exit(0 if ok else 1)
