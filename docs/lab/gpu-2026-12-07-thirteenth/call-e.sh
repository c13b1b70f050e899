#!/usr/bin/env bash
# Thirteenth session, call E (call D cut to the device time left), most important first: the
# GPU tests of what changed (prepared launches; the fused and multi-tensor entries flushing their
# records per chunk), the session benchmark (the prepared launch's issue cost), then the RL set
# and the four groups against the twelfth session's bundle (base).
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
mkdir -p /tmp/new80 && tar -xJf "$here/new80.tar.xz" -C /tmp/new80
b=/tmp/new80/gpu-bundle; cd $b
for t in gpu_prepared gpu_fused gpu_fused_mixed gpu_multi_tensor gpu_records gpu_session gpu_clamp_scales; do
  timeout 40 "$b/tests/$t" --include-ignored --test-threads 1 > "$OUT/test-$t.txt" 2>&1
  echo "rc $?" >> "$OUT/test-$t.txt"
  echo "$t: $(grep -E '^test result' "$OUT/test-$t.txt" | tail -1) $(tail -n 1 "$OUT/test-$t.txt")"
done
grep -h "^test .*FAILED\|panicked" "$OUT"/test-*.txt | head -20
timeout 60 ./examples/bench --out /tmp/o-sess --only session --set bench/rl_set.json > "$OUT/session.txt" 2>&1
grep -E "^session \(RL" "$OUT/session.txt"
mkdir -p /tmp/base && tar -xJf "$here/base.tar.xz" -C /tmp/base
for v in new80 base; do
  cd /tmp/$v/gpu-bundle
  timeout 60 ./examples/bench --out "/tmp/o-$v" --only rl_set,four_groups --set bench/rl_set.json > "$OUT/$v-rl.txt" 2>&1
  echo "== $v"; grep -hE "one fused launch: eager|parallel branches|chunks of 8192: graph|four groups" "$OUT/$v-rl.txt"
done
