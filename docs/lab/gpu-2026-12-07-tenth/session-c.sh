#!/usr/bin/env bash
# Session 2026-12-07 (tenth), call C: call A cut to what a few minutes of device time hold.
# Issue 27's resume tests and the checkpoint bench; issue 26's safe 16-bit buffers, the
# mixed-precision fused entry, the NaN check over 16-bit slots and the fp16 training run; the
# RL set in bf16. Each step writes under $OUT as it goes.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/run && tar -xJf "$here/bundle.tar.xz" -C /tmp/run
b=/tmp/run/gpu-bundle
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
for t in gpu_resume gpu_fused_mixed gpu_safe_half gpu_nan_check_half gpu_fp16_training; do
  timeout 50 "$b/tests/$t" --include-ignored --test-threads 1 --nocapture > "$OUT/$t.txt" 2>&1
  echo "rc $?" >> "$OUT/$t.txt"
  tail -n 3 "$OUT/$t.txt"
done
grep -h "resumed at\|fp16 training\|fused mixed\|^test .*FAILED\|panicked" "$OUT"/gpu_*.txt | head -40
(cd "$b" && timeout 80 ./examples/bench --out "$OUT/bench-checkpoint" --only checkpoint > "$OUT/bench-checkpoint.txt" 2>&1); tail -n 4 "$OUT/bench-checkpoint.txt"
(cd "$b" && timeout 40 ./examples/bench --out "$OUT/bench-rl-bf16" --only rl_bf16 > "$OUT/bench-rl-bf16.txt" 2>&1); tail -n 3 "$OUT/bench-rl-bf16.txt"
