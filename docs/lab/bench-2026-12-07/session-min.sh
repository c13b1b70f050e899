#!/usr/bin/env bash
# The eighth session's last device call, with little device time left: the new GPU tests only
# (stochastic rounding, the exact bf16 paths, fp16 loss scaling, the mixed-precision training),
# plain. Each writes under $OUT as it goes.
set -x
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/run && tar -xJf "$here/bundle.tar.xz" -C /tmp/run
b=/tmp/run/gpu-bundle
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
for t in gpu_exact_bf16 gpu_loss_scaling gpu_stochastic_rounding gpu_mixed_precision_training; do
  timeout 60 "$b/tests/$t" --include-ignored --test-threads 1 --nocapture > "$OUT/$t.txt" 2>&1
  echo "rc $?" >> "$OUT/$t.txt"
  tail -n 3 "$OUT/$t.txt"
done
grep -h "mixed precision\|loss scaling:\|adamw_bf16_\(remainder\|master\):\|panicked" "$OUT"/gpu_*.txt | head -n 20
