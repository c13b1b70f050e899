#!/usr/bin/env bash
# Session 2026-12-07 (ninth), the last resort for about two minutes of device time: issue 27's
# resume, interchange and snapshot tests only.
set -x
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/run && tar -xJf "$here/bundle.tar.xz" -C /tmp/run
b=/tmp/run/gpu-bundle
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
timeout 100 "$b/tests/gpu_resume" --include-ignored --test-threads 1 --nocapture > "$OUT/gpu_resume.txt" 2>&1; echo "rc $?" >> "$OUT/gpu_resume.txt"
tail -n 12 "$OUT/gpu_resume.txt"
