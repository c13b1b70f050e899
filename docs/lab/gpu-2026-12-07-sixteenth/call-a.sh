#!/usr/bin/env bash
# Sixteenth session, call A: rows = main (d8deb02), loops = one loop per rule in the fused entry
# (loops.patch), loops64 = loops with the fused entries capped at 64 registers (4 blocks per SM).
# The traffic floor (bench/traffic_floor.py), GPU tests of loops, then the three alternated
# twice; everything in one tarball.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
V="rows loops loops64"
for v in $V; do mkdir -p /tmp/$v && tar -xJf "$here/$v.tar.xz" -C /tmp/$v; done
w=/tmp/wd; mkdir -p $w/t
pack() { tar -czf "$OUT/a.tar.gz" -C $w . ; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $w/gpu.txt
timeout 120 python3 "$here/traffic_floor.py" --out $w/traffic.json > $w/traffic.txt 2>&1; cat $w/traffic.txt | tail -40
pack
for v in loops loops64; do
  b=/tmp/$v/gpu-bundle; cd $b
  for t in gpu_fused gpu_fused_mixed gpu_session gpu_records gpu_multi_tensor; do
    [ $v = loops64 ] && [ $t != gpu_fused ] && [ $t != gpu_fused_mixed ] && continue
    timeout 60 "$b/tests/$t" --include-ignored --test-threads 1 > "$w/t/$v-$t.txt" 2>&1
    echo "rc $?" >> "$w/t/$v-$t.txt"
    echo "$v $t: $(grep -E '^test result' "$w/t/$v-$t.txt" | tail -1) $(tail -n 1 "$w/t/$v-$t.txt")"
  done
done
grep -h "^test .*FAILED\|panicked" $w/t/*.txt | head -20
pack
for r in 1 2; do for v in $V; do
  cd /tmp/$v/gpu-bundle
  timeout 60 ./examples/bench --out "/tmp/o-$v-$r" --only rl_set,four_groups,rl_bf16 --set bench/rl_set.json > "$w/$v-rl-$r.txt" 2>&1
  echo "== $v $r"; grep -hE "one fused launch: eager|parallel branches|four groups \(|chunks of 8192: f32" "$w/$v-rl-$r.txt" | head -6
  timeout 40 ./examples/bench --out "/tmp/s-$v-$r" --only session --set bench/rl_set.json > "$w/$v-session-$r.txt" 2>&1
  grep -E "^session" "$w/$v-session-$r.txt" | cut -c1-150
  pack
done; done
echo "elapsed $SECONDS"
