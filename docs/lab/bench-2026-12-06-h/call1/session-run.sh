#!/usr/bin/env bash
# Session 2026-12-06 (seventh), call 1: the bf16/f16 tests and the half benchmark.
set -x
export PATH=$PATH:/usr/local/cuda/bin
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
./tests/gpu_half_weights --include-ignored --test-threads 1 > "$OUT/half.txt" 2>&1
compute-sanitizer --tool memcheck --error-exitcode 9 ./tests/gpu_half_weights --include-ignored --test-threads 1 > "$OUT/half-memcheck.txt" 2>&1; echo "memcheck rc $?" >> "$OUT/half-memcheck.txt"
OUT="$OUT/bench" bash gpu-bench.sh > "$OUT/bench-half.txt" 2>&1
tail -5 "$OUT/half.txt" "$OUT/half-memcheck.txt" "$OUT/bench-half.txt"
