#!/usr/bin/env bash
# Seventeenth session, call B (right after A, same machine if still held): ncu of the floor's
# single-buffer kernels at 2^28, then of the RL set's fused launch in `main` (cap 80: 3 blocks an
# SM) and in `loops64` (the sixteenth session's loops capped at 64: 4 blocks an SM, spills).
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
for v in main loops64; do mkdir -p /tmp/$v && tar -xJf "$here/$v.tar.xz" -C /tmp/$v; done
b=/tmp/main/gpu-bundle; w=/tmp/wb; mkdir -p $w
rm -rf $b/bench && cp -r "$here/bench-cur" $b/bench
pack() { tar -czf "$OUT/b.tar.gz" -C $w . ; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > $w/gpu.txt
cat $w/gpu.txt
cd $b
timeout 90 ncu --kernel-id '::regex:^(copy1|copy4|adam_f32_[124]|adam_f32_mv|adam_bf16)$:1' \
  --section SpeedOfLight --section MemoryWorkloadAnalysis \
  python3 bench/traffic_floor.py --single-only --reps 1 --out /tmp/tf-ncu.json > $w/ncu-traffic-2p28.txt 2>&1
echo "ncu rc $?" >> $w/ncu-traffic-2p28.txt
grep -E "^  [a-z_0-9]+ |DRAM Throughput|Duration|rc " $w/ncu-traffic-2p28.txt | head -40; pack
echo "elapsed $SECONDS"
for v in main loops64; do
  [ $SECONDS -lt 420 ] || break
  cd /tmp/$v/gpu-bundle
  timeout 100 ncu --graph-profiling node --kernel-name adamant_fused_step --launch-count 1 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
    --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis \
    ./examples/bench --quick --out /tmp/ncu-rl-$v --only rl_set --set bench/rl_set.json > $w/ncu-rl-fused-$v.txt 2>&1
  echo "ncu rc $?" >> $w/ncu-rl-fused-$v.txt
  grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|No Eligible|Warp Cycles Per Issued|Local|spill|rc " $w/ncu-rl-fused-$v.txt | head -20
  pack; echo "elapsed $SECONDS"
done
