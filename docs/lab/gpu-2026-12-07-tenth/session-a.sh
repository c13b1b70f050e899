#!/usr/bin/env bash
# Session 2026-12-07 (tenth), call A: what the ninth session could not run. Issue 27's GPU
# tests (resume in a new process, PyTorch interchange, a session resumed from a file), issue
# 26's (safe 16-bit buffers, stochastic rounding, exact bf16, loss scaling, the mixed-precision
# run, the NaN check over 16-bit slots), two under memcheck, the 16-bit bench beside PyTorch,
# the RL set in bf16, the checkpoint bench, and an ncu profile of the 14 B path against the 22 B one. Each step
# writes under $OUT as it goes (a timeout keeps what is done).
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/run && tar -xJf "$here/bundle.tar.xz" -C /tmp/run
b=/tmp/run/gpu-bundle
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
for t in gpu_resume gpu_safe_half gpu_session gpu_stochastic_rounding gpu_exact_bf16 gpu_loss_scaling gpu_mixed_precision_training gpu_nan_check_half gpu_fused_mixed gpu_fused; do
  timeout 120 "$b/tests/$t" --include-ignored --test-threads 1 --nocapture > "$OUT/$t.txt" 2>&1
  echo "rc $?" >> "$OUT/$t.txt"
done
tail -n 4 "$OUT"/gpu_*.txt
grep -h "resumed at\|mixed precision\|loss scaling:" "$OUT"/gpu_*.txt
for t in gpu_resume gpu_loss_scaling; do
  ADAMANT_SANITIZER_RUN=1 timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 "$b/tests/$t" --include-ignored --test-threads 1 > "$OUT/$t-memcheck.txt" 2>&1
  echo "memcheck rc $?" >> "$OUT/$t-memcheck.txt"
done
tail -n 2 "$OUT"/*memcheck.txt
(cd "$b" && timeout 100 python3 -c "import sys,json; sys.path.insert(0,'bench'); import torch_bench as tb; t=tb.Timer(20,10,3); print(json.dumps(tb.bench_half(t)))" > "$OUT/torch-half.json" 2> "$OUT/torch-half.err"; timeout 100 ./examples/bench --out "$OUT/bench-half" --only half > "$OUT/bench-half.txt" 2>&1)
tail -n 20 "$OUT/bench-half.txt"; cat "$OUT/torch-half.json"
(cd "$b" && timeout 60 ./examples/bench --out "$OUT/bench-rl-bf16" --only rl_bf16 > "$OUT/bench-rl-bf16.txt" 2>&1); tail -n 3 "$OUT/bench-rl-bf16.txt"
(cd "$b" && timeout 90 ./examples/bench --out "$OUT/bench-checkpoint" --only checkpoint > "$OUT/bench-checkpoint.txt" 2>&1); tail -n 3 "$OUT/bench-checkpoint.txt"
# The 14 B path's shortfall: ncu on adamw_bf16_sr_moments (14 B) and adamw_bf16_sr (22 B).
(cd "$b" && command -v ncu && timeout 120 ncu --kernel-name regex:'^adamw_bf16_sr(_moments)?$' --launch-count 2 --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section LaunchStats ./examples/bench --only half > "$OUT/ncu-14B.txt" 2>&1; echo "ncu rc $?" >> "$OUT/ncu-14B.txt"); grep -E "==PROF==|adamw_bf16_sr|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|rc " "$OUT/ncu-14B.txt" | head -40
