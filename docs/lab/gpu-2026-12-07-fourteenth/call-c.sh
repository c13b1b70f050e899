#!/usr/bin/env bash
# Fourteenth session, call C: the multi-tensor entries (not the fused ones) capped at 64
# registers (`docs/lab/gpu-2026-12-07-thirteenth/new64-cap.patch` on c12b357: `c64`) against
# `main` at c12b357 (`rows`): the multi-tensor GPU test on c64, then the RL set (its per-group
# launches are the stepped multi-tensor entries), alternated rows, c64, rows, c64.
set -x
here=$(cd "$(dirname "$0")" && pwd)
for v in rows c64; do mkdir -p /tmp/$v && tar -xJf "$here/$v.tar.xz" -C /tmp/$v; done
cd /tmp/c64/gpu-bundle
timeout 30 tests/gpu_multi_tensor --include-ignored --test-threads 1 > "$OUT/c64-test.txt" 2>&1; echo "c64 gpu_multi_tensor rc $? $(grep '^test result' "$OUT/c64-test.txt")"
for r in 1 2; do for v in rows c64; do
  cd /tmp/$v/gpu-bundle
  timeout 40 ./examples/bench --out "/tmp/o-$v" --only rl_set --set bench/rl_set.json > "$OUT/$v-rl-$r.txt" 2>&1
  echo "== $v $r"; grep -hE "parallel branches|one fused launch: eager" "$OUT/$v-rl-$r.txt"
done; done
