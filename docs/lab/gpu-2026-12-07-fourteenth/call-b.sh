#!/usr/bin/env bash
# Fourteenth session, call B: call A cut to the device time left after refused starts (about
# 10 minutes). rows = branch fused-rows (per-chunk record flush + the fused entries' table rows
# read before the branch); base = main b4406d6. GPU tests of what changed on rows, then the
# session benchmark (prepared issue cost) and the RL/four-groups/bf16 benchmarks, base then rows.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
for v in base rows; do mkdir -p /tmp/$v && tar -xJf "$here/$v.tar.xz" -C /tmp/$v; done
mkdir -p "$OUT/t"
b=/tmp/rows/gpu-bundle; cd $b
for t in gpu_prepared gpu_fused gpu_fused_mixed gpu_multi_tensor gpu_records gpu_session; do
  timeout 45 "$b/tests/$t" --include-ignored --test-threads 1 > "$OUT/t/rows-$t.txt" 2>&1
  echo "rc $?" >> "$OUT/t/rows-$t.txt"
  echo "rows $t: $(grep -E '^test result' "$OUT/t/rows-$t.txt" | tail -1) $(tail -n 1 "$OUT/t/rows-$t.txt")"
done
grep -h "^test .*FAILED\|panicked" "$OUT"/t/*.txt | head -20
timeout 40 ./examples/bench --out /tmp/o-sess --only session --set bench/rl_set.json > "$OUT/session.txt" 2>&1
grep -E "^session \(RL" "$OUT/session.txt"
for v in base rows; do
  cd /tmp/$v/gpu-bundle
  timeout 60 ./examples/bench --out "/tmp/o-$v" --only rl_set,four_groups,rl_bf16 --set bench/rl_set.json > "$OUT/$v-rl.txt" 2>&1
  echo "== $v"; grep -hE "one fused launch: eager|parallel branches|chunks of 8192: graph|four groups|bf16" "$OUT/$v-rl.txt" | head -20
done
cd "$OUT" && tar -czf t.tar.gz t && rm -rf t
