#!/usr/bin/env bash
# Sixteenth session, call B, on `main` (the per-rule loops, 2b82347): the traffic floor
# (bench/traffic_floor.py: CUDA C kernels moving the same bytes with no arithmetic), the full
# benchmark (scripts/gpu-bench.sh: PyTorch, ours, the report), ncu of the RL set's fused launch,
# then sanitizers on the fused tests if time is left. One tarball, re-packed after each step.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/main && tar -xJf "$here/main.tar.xz" -C /tmp/main
b=/tmp/main/gpu-bundle; w=/tmp/w; mkdir -p $w/bench
pack() { tar -czf "$OUT/b.tar.gz" -C $w . ; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > $w/gpu.txt
timeout 150 python3 "$here/traffic_floor.py" --set "$here/../bench/rl_set.json" --out $w/traffic.json > $w/traffic.txt 2>&1
echo "traffic rc $?" >> $w/traffic.txt; cat $w/traffic.txt; pack
cd $b
OUT=$w/bench timeout 420 bash gpu-bench.sh > $w/gpu-bench.log 2>&1; echo "gpu-bench rc $?" >> $w/gpu-bench.log
tail -n 3 $w/gpu-bench.log; pack
grep -E "^\| (RL|four|Adam, one buffer \(2\^28|Adam, one buffer \(2\^30|ptxas|eager|14 B|bf16 weights and)" $w/bench/performance.md | cut -c1-200
echo "elapsed $SECONDS"
if [ $SECONDS -lt 450 ]; then
  # DRAM throughput of our Adam at 2^28 (launches 80..82 of the quick sizes run are 2^28) and of
  # the traffic floor's kernels at 2^28, one launch each after their warm-ups.
  timeout 60 ncu --kernel-name attn_adam_kernel --launch-skip 80 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis \
    ./examples/bench --quick --out /tmp/ncu-sizes --only sizes > $w/ncu-adam-2p28.txt 2>&1
  echo "ncu rc $?" >> $w/ncu-adam-2p28.txt
  timeout 90 ncu --kernel-id '::regex:^(copy1|copy4|adam_f32_[124]|adam_f32_mv|adam_bf16)$:4' \
    --section SpeedOfLight --section MemoryWorkloadAnalysis \
    python3 "$here/traffic_floor.py" --single-only --reps 1 --out /tmp/tf-ncu.json > $w/ncu-traffic-2p28.txt 2>&1
  echo "ncu rc $?" >> $w/ncu-traffic-2p28.txt
  grep -E "^  [a-z_0-9]+ \(|attn_adam_kernel \(|DRAM Throughput|Duration" $w/ncu-adam-2p28.txt $w/ncu-traffic-2p28.txt | head -80
  pack
fi
echo "elapsed $SECONDS"
if [ $SECONDS -lt 470 ]; then
  timeout 90 ncu --graph-profiling node --kernel-name adamant_fused_step --launch-skip 0 --launch-count 1 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
    --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis \
    ./examples/bench --quick --out /tmp/ncu-rl --only rl_set --set bench/rl_set.json > $w/ncu-rl-fused.txt 2>&1
  echo "ncu rc $?" >> $w/ncu-rl-fused.txt
  grep -E "Duration|DRAM Throughput|Compute \(SM\)|Registers Per|Achieved Occupancy|Theoretical Occupancy|No Eligible|Warp Cycles Per Issued|Waves" $w/ncu-rl-fused.txt | head -20
  pack
fi
if [ $SECONDS -lt 520 ]; then
  ADAMANT_SANITIZER_RUN=1 timeout 60 compute-sanitizer --tool memcheck tests/gpu_fused --include-ignored --test-threads 1 > $w/memcheck-gpu_fused.txt 2>&1
  echo "rc $?" >> $w/memcheck-gpu_fused.txt; tail -n 3 $w/memcheck-gpu_fused.txt; pack
fi
echo "elapsed $SECONDS"
