#!/usr/bin/env bash
# Fifteenth session, call B: the full benchmark (scripts/gpu-bench.sh: PyTorch, then ours, then
# the report) on `rows` (main's kernels), then ncu on the RL set's fused launch. Everything goes
# in one tarball, re-packed after each step (a call brings back only a few files).
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/rows && tar -xJf "$here/rows.tar.xz" -C /tmp/rows
b=/tmp/rows/gpu-bundle; w=/tmp/w; mkdir -p $w/bench
pack() { tar -czf "$OUT/b.tar.gz" -C $w . ; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > $w/gpu.txt
cd $b
OUT=$w/bench timeout 420 bash gpu-bench.sh > $w/gpu-bench.log 2>&1; echo "gpu-bench rc $?" >> $w/gpu-bench.log
tail -n 3 $w/gpu-bench.log; pack
grep -E "^\| (RL|four|Adam, one buffer \(2\^28|Adam, one buffer \(2\^30|registers|eager)" $w/bench/performance.md | cut -c1-220
if [ $SECONDS -lt 480 ]; then
  timeout 100 ncu --graph-profiling node --kernel-name adamant_fused_step --launch-skip 0 --launch-count 1 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
    --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis \
    ./examples/bench --quick --out /tmp/ncu-rl --only rl_set --set bench/rl_set.json > $w/ncu-rl-fused.txt 2>&1
  echo "ncu rc $?" >> $w/ncu-rl-fused.txt
  grep -E "Duration|DRAM Throughput|Compute \(SM\)|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issued Warp|No Eligible|Stall|Executed Ipc|Warp Cycles Per Issued" $w/ncu-rl-fused.txt | head -30
  pack
fi
