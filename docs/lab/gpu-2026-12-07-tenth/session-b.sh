#!/usr/bin/env bash
# Session 2026-12-07 (tenth), call B: two tests under memcheck, an ncu profile of the 14 B path
# against the 22 B one (the hypothesis in docs/performance.md), then every GPU test without
# sanitizers (gpu-run.sh). Each step writes under $OUT as it goes.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/run && tar -xJf "$here/bundle.tar.xz" -C /tmp/run
b=/tmp/run/gpu-bundle
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
for t in gpu_fused_mixed gpu_nan_check_half; do
  ADAMANT_SANITIZER_RUN=1 timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 "$b/tests/$t" --include-ignored --test-threads 1 > "$OUT/$t-memcheck.txt" 2>&1
  echo "memcheck rc $?" >> "$OUT/$t-memcheck.txt"
done
tail -n 2 "$OUT"/*memcheck.txt
(cd "$b" && command -v ncu && timeout 120 ncu --kernel-name regex:'^adamw_bf16_sr(_moments)?$' --launch-count 2 --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section LaunchStats ./examples/bench --only half > "$OUT/ncu-14B.txt" 2>&1; echo "ncu rc $?" >> "$OUT/ncu-14B.txt"); grep -E "==PROF==|adamw_bf16_sr|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|rc " "$OUT/ncu-14B.txt" | head -40
ADAMANT_SANITIZERS=" " timeout 240 bash "$b/gpu-run.sh" > "$OUT/gpu-run.txt" 2>&1
grep -A60 "adamant GPU summary" "$OUT/gpu-run.txt" | head -n 45
