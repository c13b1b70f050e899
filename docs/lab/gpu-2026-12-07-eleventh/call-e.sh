#!/usr/bin/env bash
# Eleventh session, call 2: the fixed GPU tests again, then the RL set in bf16.
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/run && rm -rf /tmp/run/gpu-bundle && tar -xJf "$here/bundle.tar.xz" -C /tmp/run
b=/tmp/run/gpu-bundle
o=/tmp/o; rm -rf $o; mkdir -p $o
for t in gpu_resume gpu_fused_mixed gpu_session gpu_safe_half; do
  timeout 60 "$b/tests/$t" --include-ignored --test-threads 1 --nocapture > "$o/$t.txt" 2>&1
  echo "rc $?" >> "$o/$t.txt"
  echo "== $t: $(grep '^test result' $o/$t.txt)"
done
grep -h -A6 "panicked" $o/gpu_*.txt | cut -c1-400 | head -60
grep -h "resumed at\|fused mixed\|moves between" $o/gpu_*.txt | head
(cd "$b" && timeout 70 ./examples/bench --out "$o/bench-checkpoint" --only checkpoint > "$o/bench-checkpoint.txt" 2>&1); tail -n 4 "$o/bench-checkpoint.txt"
(cd "$b" && timeout 40 ./examples/bench --out "$o/bench-rl-bf16" --only rl_bf16 > "$o/bench-rl-bf16.txt" 2>&1); tail -n 4 "$o/bench-rl-bf16.txt"
tar -czf "$OUT/logs.tgz" -C $o .
