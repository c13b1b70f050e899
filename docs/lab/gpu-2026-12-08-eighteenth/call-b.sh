#!/usr/bin/env bash
# Eighteenth session, call B: `div` (Adam's division by sqrt(bc2) without a division per element,
# math::RootDivisor) and `m64` (`div` with the fused mixed entry capped at 64 registers, an
# experiment) against `main18` (671384a), the three bundles in one call:
# 1. examples/bench --only rl_bf16,rl_set,half, alternating main18, div, m64, twice;
# 2. every GPU test binary of `div`, plain (no sanitizers), the ones that compare the device with
#    the host bit for bit and with PyTorch first, each under a timeout, while time is left.
# One tarball, re-packed after each step.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
for b in main18 div m64; do mkdir -p /tmp/$b && tar -xJf "$here/$b.tar.xz" -C /tmp/$b; done
w=/tmp/w; mkdir -p $w/ab $w/tests
pack() { tar -czf "$OUT/b.tar.gz" -C $w . ; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > $w/gpu.txt
cat $w/gpu.txt
for i in 1 2; do
  for b in main18 div m64; do
    cd /tmp/$b/gpu-bundle
    timeout 150 ./examples/bench --only rl_bf16,rl_set,half --out $w/ab/$b-$i > $w/ab/$b-$i.txt 2>&1
    echo "rc $?" >> $w/ab/$b-$i.txt
    grep -iE "bf16|rl|14 B|sr_moments|µs" $w/ab/$b-$i.txt | head -30
    pack; echo "elapsed $SECONDS"
  done
done
cd /tmp/div/gpu-bundle
first="gpu_optimizers gpu_fused_mixed gpu_fused gpu_safe_half gpu_stochastic_rounding gpu_exact_bf16 gpu_half_weights gpu_mixed_precision_training gpu_multi_tensor gpu_session"
rest=$(ls tests | tr '\n' ' ')
for t in $first $rest; do
  [ -f $w/tests/$t.log ] && continue
  [ $SECONDS -gt 520 ] && { echo "no time for $t" >> $w/tests/summary.txt; continue; }
  timeout 150 ./tests/$t --include-ignored --test-threads=1 > $w/tests/$t.log 2>&1
  echo "$t rc $? $(grep -E '^test result' $w/tests/$t.log | tail -1)" | tee -a $w/tests/summary.txt
  pack
done
echo "elapsed $SECONDS"
