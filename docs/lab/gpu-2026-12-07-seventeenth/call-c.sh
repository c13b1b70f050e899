#!/usr/bin/env bash
# Seventeenth session, call C, on `bytes` (main + chunks by a byte budget, `ChunkSize`), most
# valuable first, each step guarded by the time left: the fused GPU tests; the fused benchmarks
# (the old chunk, 4096 elements, timed in the same binary); ncu of the bf16 set's fused launch
# and of the no-arithmetic floor's RL-set kernel; the benchmarks again. One tarball, re-packed
# after each step.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/bytes && tar -xJf "$here/bytes.tar.xz" -C /tmp/bytes
b=/tmp/bytes/gpu-bundle; w=/tmp/wc; mkdir -p $w/t
pack() { tar -czf "$OUT/c.tar.gz" -C $w . ; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > $w/gpu.txt
cat $w/gpu.txt
cd $b
for t in gpu_fused_mixed gpu_fused gpu_session; do
  [ $SECONDS -lt 30 ] || break
  timeout 40 ./tests/$t --include-ignored --test-threads=1 > $w/t/$t.log 2>&1; echo "$t rc $?" >> $w/t/$t.log
  grep -E "^test result|rc " $w/t/$t.log | tail -2
done
pack; echo "elapsed $SECONDS"
bench() {
  timeout 60 ./examples/bench --out /tmp/o$1 --only rl_set,four_groups,rl_bf16,session --set bench/rl_set.json > $w/bench-$1.txt 2>&1
  echo "bench rc $?" >> $w/bench-$1.txt
  grep -E "^RL set, one fused launch: |chunks of 4096: graph|bytes: graph|^four groups \(|four groups.*4096|^RL set.*advance|RL set, chunks of (4096|8192|16384|229376)|^session \(|rc " $w/bench-$1.txt | cut -c1-170
  cp /tmp/o$1/bench_rust.json $w/bench-$1.json 2>/dev/null; pack
}
bench 1
echo "elapsed $SECONDS"
[ $SECONDS -lt 80 ] && timeout 40 ncu --graph-profiling node --kernel-name adamant_fused_mixed --launch-count 1 \
  --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
  --section SchedulerStats --section InstructionStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
  ./examples/bench --quick --out /tmp/ncu-bf16 --only rl_bf16 --rl-bf16-only-16bit --set bench/rl_set.json > $w/ncu-rl-bf16-fused.txt 2>&1
echo "ncu rc $?" >> $w/ncu-rl-bf16-fused.txt
grep -E "Duration|DRAM Throughput|Compute \(SM\)|Registers Per|Achieved Occupancy|Theoretical Occupancy|No Eligible|Issued Warp Per|Warp Cycles Per Issued|Executed Instructions  |Grid Size|rc " $w/ncu-rl-bf16-fused.txt
pack; echo "elapsed $SECONDS"
for shape in rules:2048:0:2 rules:4096:0:1 bf16:8192:0:4; do
  [ $SECONDS -lt 110 ] || break
  timeout 20 ncu --kernel-name regex:^chunks --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
    python3 bench/traffic_floor.py --set bench/rl_set.json --rl-shape $shape --reps 1 --out /tmp/tf.json > $w/ncu-floor-${shape//:/-}.txt 2>&1
  echo "ncu rc $?" >> $w/ncu-floor-${shape//:/-}.txt
  grep -E "^  chunks|Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|rc " $w/ncu-floor-${shape//:/-}.txt
  pack
done
[ $SECONDS -lt 90 ] && bench 2
echo "elapsed $SECONDS"
