#!/usr/bin/env bash
# Eighteenth session, call C, the last of the session's device time, on `div` (the code this
# session lands): ncu's warp-state and instruction statistics, with every stall reason, of the
# two launches issue 26's unmet goals time: the bf16 RL set's fused launch (`adamant_fused_mixed`,
# --rl-bf16-only-16bit) and the 14 B entry at 2^28 (`adamw_bf16_sr_moments`); then, if the time
# left allows, the full benchmark (scripts/gpu-bench.sh). One tarball, re-packed after each step.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/div && tar -xJf "$here/div.tar.xz" -C /tmp/div
b=/tmp/div/gpu-bundle; w=/tmp/w; mkdir -p $w/bench
pack() { tar -czf "$OUT/c.tar.gz" -C $w . ; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > $w/gpu.txt
cat $w/gpu.txt
cd $b
sections="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
timeout 60 ncu --graph-profiling node --kernel-name adamant_fused_mixed --launch-count 1 $sections \
  ./examples/bench --quick --out /tmp/ncu-bf16 --only rl_bf16 --rl-bf16-only-16bit --set bench/rl_set.json > $w/ncu-rl-bf16-fused.txt 2>&1
echo "ncu rc $?" >> $w/ncu-rl-bf16-fused.txt; pack
grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|No Eligible|Issued Warp Per|Warp Cycles Per Issued|stalled|rc " $w/ncu-rl-bf16-fused.txt | head -40
echo "elapsed $SECONDS"
timeout 60 ncu --kernel-name adamw_bf16_sr_moments --launch-skip 3 --launch-count 1 $sections \
  ./examples/bench --quick --out /tmp/ncu-half --only half > $w/ncu-14b-2p28.txt 2>&1
echo "ncu rc $?" >> $w/ncu-14b-2p28.txt; pack
grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|No Eligible|Issued Warp Per|Warp Cycles Per Issued|stalled|Grid Size|rc " $w/ncu-14b-2p28.txt | head -40
echo "elapsed $SECONDS"
if [ $SECONDS -lt 60 ]; then
OUT=$w/bench timeout 100 bash gpu-bench.sh > $w/gpu-bench.log 2>&1; echo "gpu-bench rc $?" >> $w/gpu-bench.log
tail -n 3 $w/gpu-bench.log; pack
grep -E "^\| " $w/bench/performance.md | grep -E "RL|14 B|bf16" | cut -c1-200 | head -20
echo "elapsed $SECONDS"
fi
echo "elapsed $SECONDS"
