#!/usr/bin/env bash
# Seventeenth session, call A: on `main`'s kernels (bundle of 2b82347; later Rust changes are
# comments only) with `main`'s current bench/ (301e70b): the full benchmark (scripts/gpu-bench.sh:
# PyTorch, ours, the no-arithmetic floor with 1/2/4 groups a thread, the report), then ncu of our
# Adam at 2^28 (call B has the other profiles). One tarball, re-packed after each step.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/main && tar -xJf "$here/main.tar.xz" -C /tmp/main
b=/tmp/main/gpu-bundle; w=/tmp/w; mkdir -p $w/bench
rm -rf $b/bench && cp -r "$here/bench-cur" $b/bench && cp "$here/gpu-bench-cur.sh" $b/gpu-bench.sh
pack() { tar -czf "$OUT/a.tar.gz" -C $w . ; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > $w/gpu.txt
cat $w/gpu.txt
cd $b
OUT=$w/bench timeout 400 bash gpu-bench.sh > $w/gpu-bench.log 2>&1; echo "gpu-bench rc $?" >> $w/gpu-bench.log
tail -n 3 $w/gpu-bench.log; pack
grep -E "^\| " $w/bench/performance.md | grep -E "RL|four|2\^28|2\^30|registers|eager|floor|bf16" | cut -c1-200
echo "elapsed $SECONDS"
if [ $SECONDS -lt 520 ]; then
  timeout 50 ncu --kernel-name attn_adam_kernel --launch-skip 80 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
    ./examples/bench --quick --out /tmp/ncu-sizes --only sizes > $w/ncu-adam-2p28.txt 2>&1
  echo "ncu rc $?" >> $w/ncu-adam-2p28.txt
  grep -E "attn_adam_kernel|DRAM Throughput|Duration|Grid Size|Registers|rc " $w/ncu-adam-2p28.txt | head; pack
fi
echo "elapsed $SECONDS"
echo "elapsed $SECONDS"
