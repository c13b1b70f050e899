"""PyTorch as a second reference for the downstream example (examples/custom-optimizer):
replays its SGD-with-momentum run with torch.optim.SGD on the GPU (the same initial weights and
gradients, from the same integer formulas, and the same clamp after every step) and compares the
final weights with the ones the Rust binary wrote. Usage: custom_optimizer_torch.py DIR."""
import sys

import numpy as np
import torch

N, STEPS, BOUND = 1 << 20, 20, 1.5
LR, MOMENTUM, WD = 1e-2, 0.9, 1e-2

i = np.arange(N, dtype=np.int64)
p0 = ((i * 7919 % 4001).astype(np.float32) / np.float32(1000.0)) - np.float32(2.0)
p = torch.nn.Parameter(torch.tensor(p0, device="cuda"))
opt = torch.optim.SGD([p], lr=LR, momentum=MOMENTUM, weight_decay=WD)
for t in range(STEPS):
    g = (((i * 31 + t * 17) % 997).astype(np.float32) / np.float32(997.0) - np.float32(0.45)) * np.float32(0.1)
    p.grad = torch.tensor(g, device="cuda")
    opt.step()
    with torch.no_grad():
        p.clamp_(-BOUND, BOUND)
ours = np.fromfile(f"{sys.argv[1]}/sgd_p.f32", dtype="<f4")
theirs = p.detach().cpu().numpy()
err = np.abs(ours.astype(np.float64) - theirs) / np.maximum(np.abs(theirs), 1e-3)
print(f"custom_optimizer sgd_momentum_kernel vs torch.optim.SGD ({torch.__version__}): "
      f"max relative error {err.max():.3e} over {N} weights after {STEPS} steps")
sys.exit(0 if err.max() <= 1e-5 else 1)
