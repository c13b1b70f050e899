#!/usr/bin/env bash
# Session 2026-12-07 (tenth), call D: the least device time worth a start (about 3 minutes):
# issue 27's resume tests, the mixed-precision fused entry, the NaN check over 16-bit slots.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/run && tar -xJf "$here/bundle.tar.xz" -C /tmp/run
b=/tmp/run/gpu-bundle
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
for t in gpu_resume gpu_fused_mixed gpu_nan_check_half; do
  timeout 60 "$b/tests/$t" --include-ignored --test-threads 1 --nocapture > "$OUT/$t.txt" 2>&1
  echo "rc $?" >> "$OUT/$t.txt"
  tail -n 3 "$OUT/$t.txt"
done
grep -h "resumed at\|fused mixed\|^test .*FAILED\|panicked" "$OUT"/gpu_*.txt | head -30
