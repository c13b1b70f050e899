#!/usr/bin/env bash
# Session 2026-12-06 (seventh), call 2: stochastic rounding's GPU tests (plain and memcheck),
# the benchmark, then every GPU test and example without sanitizers. The bundle travels
# compressed. Each step writes under $OUT as it goes (a timeout keeps what is done).
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/run && tar -xJf "$here/bundle.tar.xz" -C /tmp/run
b=/tmp/run/gpu-bundle
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
"$b/tests/gpu_stochastic_rounding" --include-ignored --test-threads 1 --nocapture > "$OUT/sr.txt" 2>&1
"$b/tests/gpu_half_weights" --include-ignored --test-threads 1 > "$OUT/half.txt" 2>&1
ADAMANT_SANITIZER_RUN=1 compute-sanitizer --tool memcheck --error-exitcode 9 "$b/tests/gpu_stochastic_rounding" --include-ignored --test-threads 1 > "$OUT/sr-memcheck.txt" 2>&1; echo "memcheck rc $?" >> "$OUT/sr-memcheck.txt"
tail -n 12 "$OUT/sr.txt" "$OUT/half.txt" "$OUT/sr-memcheck.txt"
OUT="$OUT/bench" bash "$b/gpu-bench.sh" > "$OUT/bench.txt" 2>&1
grep -i "bf16\|f16\|14 B" "$OUT/bench.txt" | tail -n 10
ADAMANT_SANITIZERS=" " bash "$b/gpu-run.sh" > "$OUT/gpu-run.txt" 2>&1
grep -A60 "adamant GPU summary" "$OUT/gpu-run.txt" | head -n 45
