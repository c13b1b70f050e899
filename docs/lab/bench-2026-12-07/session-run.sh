#!/usr/bin/env bash
# Session 2026-12-06/07 (eighth): issue 26's GPU tests first (stochastic rounding, the exact bf16
# paths, fp16 loss scaling, the 1500-step mixed-precision training), two under memcheck, then the
# benchmark, then every GPU test and example without sanitizers (the record grew to 192 B: every
# stepped path is to be checked). The bundle travels compressed. Each step writes under $OUT as
# it goes (a timeout keeps what is done).
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/run && tar -xJf "$here/bundle.tar.xz" -C /tmp/run
b=/tmp/run/gpu-bundle
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
for t in gpu_stochastic_rounding gpu_exact_bf16 gpu_loss_scaling gpu_mixed_precision_training; do
  timeout 120 "$b/tests/$t" --include-ignored --test-threads 1 --nocapture > "$OUT/$t.txt" 2>&1
  echo "rc $?" >> "$OUT/$t.txt"
done
tail -n 4 "$OUT"/gpu_*.txt
grep -h "mixed precision\|loss scaling:\|adamw_bf16_\(remainder\|master\):" "$OUT"/gpu_*.txt
for t in gpu_exact_bf16 gpu_loss_scaling; do
  ADAMANT_SANITIZER_RUN=1 timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 "$b/tests/$t" --include-ignored --test-threads 1 > "$OUT/$t-memcheck.txt" 2>&1
  echo "memcheck rc $?" >> "$OUT/$t-memcheck.txt"
done
tail -n 2 "$OUT"/*memcheck.txt
OUT="$OUT/bench" timeout 150 bash "$b/gpu-bench.sh" > "$OUT/bench.txt" 2>&1
grep -i "bf16\|f16\|14 B\|26 B\|28 B\|master\|remainder" "$OUT/bench.txt" | tail -n 16
ADAMANT_SANITIZERS=" " bash "$b/gpu-run.sh" > "$OUT/gpu-run.txt" 2>&1
grep -A60 "adamant GPU summary" "$OUT/gpu-run.txt" | head -n 45
