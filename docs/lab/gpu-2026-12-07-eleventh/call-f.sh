#!/usr/bin/env bash
# Eleventh session, call 4: the checkpoint bench after the parallel load, and the resume tests.
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/run && rm -rf /tmp/run/gpu-bundle && tar -xJf "$here/bundle.tar.xz" -C /tmp/run
b=/tmp/run/gpu-bundle
(cd "$b" && timeout 70 ./examples/bench --out "$OUT/bench-checkpoint" --only checkpoint > "$OUT/bench-checkpoint.txt" 2>&1); tail -n 4 "$OUT/bench-checkpoint.txt"
timeout 60 "$b/tests/gpu_resume" --include-ignored --test-threads 1 > "$OUT/gpu_resume.txt" 2>&1; echo "rc $?" >> "$OUT/gpu_resume.txt"; grep "test result" "$OUT/gpu_resume.txt" | tail -1
