#!/usr/bin/env bash
# Fourteenth session, call A. base = main b4406d6 (prepared launches, never run on a device);
# rows = branch fused-rows: the per-chunk record flush (rebased on main) and the fused entries'
# table rows read before the branch. Most important first: GPU tests of what changed (on rows,
# which holds both changes), the session benchmark (prepared issue cost), then the RL set, four
# groups and the bf16 set, base/rows alternated twice. (Cut to fit the device time left after
# refused starts.)
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
for v in base rows; do mkdir -p /tmp/$v && tar -xJf "$here/$v.tar.xz" -C /tmp/$v; done
mkdir -p "$OUT/t"
for v in rows base; do
  b=/tmp/$v/gpu-bundle; cd $b
  tests="gpu_prepared gpu_fused gpu_fused_mixed gpu_multi_tensor gpu_records gpu_session gpu_clamp_scales"
  [ $v = base ] && tests="gpu_prepared"
  for t in $tests; do
    timeout 60 "$b/tests/$t" --include-ignored --test-threads 1 > "$OUT/t/$v-$t.txt" 2>&1
    echo "rc $?" >> "$OUT/t/$v-$t.txt"
    echo "$v $t: $(grep -E '^test result' "$OUT/t/$v-$t.txt" | tail -1) $(tail -n 1 "$OUT/t/$v-$t.txt")"
  done
done
grep -h "^test .*FAILED\|panicked" "$OUT"/t/*.txt | head -20
cd /tmp/base/gpu-bundle
timeout 60 ./examples/bench --out /tmp/o-sess --only session --set bench/rl_set.json > "$OUT/session.txt" 2>&1
grep -E "^session \(RL" "$OUT/session.txt"
for r in 1 2; do for v in base rows; do
  cd /tmp/$v/gpu-bundle
  timeout 90 ./examples/bench --out "/tmp/o-$v" --only rl_set,four_groups,rl_bf16 --set bench/rl_set.json > "$OUT/$v-rl-$r.txt" 2>&1
  echo "== $v $r"; grep -hE "one fused launch: eager|parallel branches|chunks of 8192: graph|four groups|bf16" "$OUT/$v-rl-$r.txt" | head -20
done; done
cd "$OUT" && tar -czf t.tar.gz t && rm -rf t
