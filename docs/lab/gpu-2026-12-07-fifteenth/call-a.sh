#!/usr/bin/env bash
# Fifteenth session, call A. rows = main's kernels (c12b357, packed last session); loops = branch
# wip/per-rule-loops (each rule's chunks swept in a loop of their own). GPU tests of loops, then
# the benchmarks alternated rows/loops twice, sanitizers on loops, PyTorch quick last. A time
# guard skips what would not fit the call.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
left() { [ $SECONDS -lt "$1" ]; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
for v in rows loops; do mkdir -p /tmp/$v && tar -xJf "$here/$v.tar.xz" -C /tmp/$v; done
mkdir -p "$OUT/t"
b=/tmp/loops/gpu-bundle; cd $b
for t in gpu_fused gpu_fused_mixed gpu_records gpu_session gpu_multi_tensor; do
  timeout 60 "$b/tests/$t" --include-ignored --test-threads 1 > "$OUT/t/loops-$t.txt" 2>&1
  echo "rc $?" >> "$OUT/t/loops-$t.txt"
  echo "loops $t: $(grep -E '^test result' "$OUT/t/loops-$t.txt" | tail -1) $(tail -n 1 "$OUT/t/loops-$t.txt")"
done
grep -h "^test .*FAILED\|panicked" "$OUT"/t/*.txt | head -20
for r in 1 2; do for v in rows loops; do
  left 420 || break
  cd /tmp/$v/gpu-bundle
  timeout 60 ./examples/bench --out "/tmp/o-$v-$r" --only rl_set,four_groups,rl_bf16 --set bench/rl_set.json > "$OUT/$v-rl-$r.txt" 2>&1
  echo "== $v $r"; grep -hE "one fused launch: eager|parallel branches|four groups \(|bf16" "$OUT/$v-rl-$r.txt" | head -8
  timeout 40 ./examples/bench --out "/tmp/s-$v-$r" --only session --set bench/rl_set.json > "$OUT/$v-session-$r.txt" 2>&1
  grep -E "^session" "$OUT/$v-session-$r.txt" | cut -c1-160
done; done
cd $b
for t in gpu_fused gpu_fused_mixed; do
  left 480 || break
  ADAMANT_SANITIZER_RUN=1 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 99 tests/$t --include-ignored --test-threads 1 > "$OUT/memcheck-$t.txt" 2>&1
  echo "memcheck $t rc $? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck-$t.txt")"
done
if left 500; then
  ADAMANT_SANITIZER_RUN=1 timeout 80 compute-sanitizer --tool racecheck --error-exitcode 99 tests/gpu_fused --include-ignored --test-threads 1 > "$OUT/racecheck-gpu_fused.txt" 2>&1
  echo "racecheck gpu_fused rc $? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/racecheck-gpu_fused.txt")"
fi
cd "$OUT" && tar -czf t.tar.gz t && rm -rf t
