#!/usr/bin/env bash
# Session 2026-12-07 (tenth), call B: every GPU test without sanitizers (gpu-run.sh), then the
# whole benchmark beside PyTorch (gpu-bench.sh), each writing under $OUT as it goes.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/run && tar -xJf "$here/bundle.tar.xz" -C /tmp/run
b=/tmp/run/gpu-bundle
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
ADAMANT_SANITIZERS=" " timeout 300 bash "$b/gpu-run.sh" > "$OUT/gpu-run.txt" 2>&1
grep -A60 "adamant GPU summary" "$OUT/gpu-run.txt" | head -n 45
