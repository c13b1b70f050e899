#!/usr/bin/env bash
# Twelfth session, call B: the full benchmark (PyTorch's side, then ours, in one run, then the
# report), for issue 25's table and the f32 Adam sizes after the poison-word records.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/run && rm -rf /tmp/run/gpu-bundle && tar -xJf "$here/bundle.tar.xz" -C /tmp/run
b=/tmp/run/gpu-bundle
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
OUT=$OUT/bench timeout 540 bash "$b/gpu-bench.sh" > "$OUT/bench.txt" 2>&1; echo "rc $?" >> "$OUT/bench.txt"
tail -n 60 "$OUT/bench.txt"
