#!/usr/bin/env bash
# Eighteenth session, call A: main's kernels and binaries at 671384a (bundle `main18`): the full
# benchmark (scripts/gpu-bench.sh: PyTorch, ours, the no-arithmetic floor, the report), the
# baseline of this session's changes. One tarball, re-packed after each step.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/main18 && tar -xJf "$here/main18.tar.xz" -C /tmp/main18
b=/tmp/main18/gpu-bundle; w=/tmp/w; mkdir -p $w/bench
pack() { tar -czf "$OUT/a.tar.gz" -C $w . ; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > $w/gpu.txt
cat $w/gpu.txt
cd $b
OUT=$w/bench timeout 420 bash gpu-bench.sh > $w/gpu-bench.log 2>&1; echo "gpu-bench rc $?" >> $w/gpu-bench.log
tail -n 3 $w/gpu-bench.log; pack
grep -E "^\| " $w/bench/performance.md | grep -E "RL|four|2\^28|2\^30|registers|eager|floor|bf16|14 B|22 B|26 B|28 B" | cut -c1-220
echo "elapsed $SECONDS"
