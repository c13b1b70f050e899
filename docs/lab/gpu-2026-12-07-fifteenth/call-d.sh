#!/usr/bin/env bash
# Fifteenth session, call D: pf1r = main at f1d0023 (the L1 prefetch in the chunked sweeps only).
# GPU tests of pf1r, then rows/pf1r alternated twice, each one's single-buffer sizes, then the
# long gpu_optimizers test if time is left; everything in one tarball.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
for v in rows pf1r; do mkdir -p /tmp/$v && tar -xJf "$here/$v.tar.xz" -C /tmp/$v; done
w=/tmp/wd; mkdir -p $w/t
pack() { tar -czf "$OUT/d.tar.gz" -C $w . ; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $w/gpu.txt
b=/tmp/pf1r/gpu-bundle; cd $b
for t in gpu_fused gpu_fused_mixed gpu_multi_tensor gpu_records gpu_session gpu_half_weights gpu_kernel_sets gpu_group_slots gpu_prepared; do
  timeout 60 "$b/tests/$t" --include-ignored --test-threads 1 > "$w/t/pf1r-$t.txt" 2>&1
  echo "rc $?" >> "$w/t/pf1r-$t.txt"
  echo "pf1r $t: $(grep -E '^test result' "$w/t/pf1r-$t.txt" | tail -1) $(tail -n 1 "$w/t/pf1r-$t.txt")"
done
grep -h "^test .*FAILED\|panicked" $w/t/*.txt | head -20
pack
for r in 1 2; do for v in rows pf1r; do
  cd /tmp/$v/gpu-bundle
  timeout 60 ./examples/bench --out "/tmp/o-$v-$r" --only rl_set,four_groups,rl_bf16 --set bench/rl_set.json > "$w/$v-rl-$r.txt" 2>&1
  echo "== $v $r"; grep -hE "one fused launch: eager|parallel branches|four groups \(|chunks of 8192: f32" "$w/$v-rl-$r.txt" | head -6
  timeout 40 ./examples/bench --out "/tmp/s-$v-$r" --only session --set bench/rl_set.json > "$w/$v-session-$r.txt" 2>&1
  grep -E "^session" "$w/$v-session-$r.txt" | cut -c1-150
  pack
done; done
for v in rows pf1r; do
  cd /tmp/$v/gpu-bundle
  timeout 90 ./examples/bench --out "/tmp/z-$v" --only sizes --set bench/rl_set.json > "$w/$v-sizes.txt" 2>&1
  echo "== $v sizes"; grep -E "adam 2\^(20|24|28|30)" "$w/$v-sizes.txt" | cut -c1-90
  pack
done
cd $b
if [ $SECONDS -lt 250 ]; then
  timeout 150 tests/gpu_optimizers --include-ignored --test-threads 1 > "$w/t/pf1r-gpu_optimizers.txt" 2>&1
  echo "rc $?" >> "$w/t/pf1r-gpu_optimizers.txt"
  echo "pf1r gpu_optimizers: $(grep -E '^test result' "$w/t/pf1r-gpu_optimizers.txt" | tail -1) $(tail -n 1 "$w/t/pf1r-gpu_optimizers.txt")"
  pack
fi
