#!/usr/bin/env bash
# Seventeenth session, call D (what device time was left, about 280 s with the start): on `bytes`,
# the mixed fused GPU test, then the bf16/f32 RL set and the four groups with the new default
# chunks (the old chunk timed in the same binary). One tarball, re-packed after each step.
set -x
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/bytes && tar -xJf "$here/bytes.tar.xz" -C /tmp/bytes
b=/tmp/bytes/gpu-bundle; w=/tmp/wd; mkdir -p $w
pack() { tar -czf "$OUT/d.tar.gz" -C $w . ; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $w/gpu.txt; cat $w/gpu.txt
cd $b
timeout 40 ./examples/bench --out /tmp/o --only rl_bf16,four_groups --set bench/rl_set.json > $w/bench.txt 2>&1
echo "bench rc $?" >> $w/bench.txt
grep -E "^four groups|^RL set" $w/bench.txt | cut -c1-170; cp /tmp/o/bench_rust.json $w/ 2>/dev/null; pack
timeout 40 ./tests/gpu_fused_mixed --include-ignored --test-threads=1 > $w/gpu_fused_mixed.log 2>&1; echo "rc $?" >> $w/gpu_fused_mixed.log
grep -E "^test |^test result|rc " $w/gpu_fused_mixed.log | tail -8; pack
