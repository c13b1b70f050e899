#!/usr/bin/env bash
# Fifteenth session, call C: pf1 = main + each sweep asks for its next 16-byte group of every
# buffer in L1 (prefetch.L1) before computing the current one (pf1.patch); bs128 = main with
# optimizer blocks of 128 threads, caps unchanged (bs128.patch). GPU tests of both, then
# pf2 = main + each sweep loads its next group of every buffer into registers before computing
# the current one (pf2.patch). rows/pf1/bs128/pf2 alternated twice; everything in one tarball.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
for v in rows pf1 bs128 pf2; do mkdir -p /tmp/$v && tar -xJf "$here/$v.tar.xz" -C /tmp/$v; done
w=/tmp/wc; mkdir -p $w/t
pack() { tar -czf "$OUT/c.tar.gz" -C $w . ; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $w/gpu.txt
for v in pf1 bs128 pf2; do
b=/tmp/$v/gpu-bundle; cd $b
for t in gpu_fused gpu_fused_mixed gpu_multi_tensor gpu_records gpu_session gpu_optimizers gpu_half_weights; do
  timeout 60 "$b/tests/$t" --include-ignored --test-threads 1 > "$w/t/$v-$t.txt" 2>&1
  echo "rc $?" >> "$w/t/$v-$t.txt"
  echo "$v $t: $(grep -E '^test result' "$w/t/$v-$t.txt" | tail -1) $(tail -n 1 "$w/t/$v-$t.txt")"
done
done
grep -h "^test .*FAILED\|panicked" $w/t/*.txt | head -20
pack
for r in 1 2; do for v in rows pf1 bs128 pf2; do
  cd /tmp/$v/gpu-bundle
  timeout 60 ./examples/bench --out "/tmp/o-$v-$r" --only rl_set,four_groups,rl_bf16 --set bench/rl_set.json > "$w/$v-rl-$r.txt" 2>&1
  echo "== $v $r"; grep -hE "one fused launch: eager|parallel branches|four groups \(|chunks of (8192|16384): f32" "$w/$v-rl-$r.txt" | head -8
  timeout 40 ./examples/bench --out "/tmp/s-$v-$r" --only session --set bench/rl_set.json > "$w/$v-session-$r.txt" 2>&1
  grep -E "^session" "$w/$v-session-$r.txt" | cut -c1-150
  pack
done; done
for v in rows pf1 bs128 pf2; do
  [ $SECONDS -lt 420 ] || break
  cd /tmp/$v/gpu-bundle
  timeout 90 ./examples/bench --out "/tmp/z-$v" --only sizes --set bench/rl_set.json > "$w/$v-sizes.txt" 2>&1
  echo "== $v sizes"; grep -E "2\^(10|20|24|28|30)" "$w/$v-sizes.txt" | head -12
  pack
done
