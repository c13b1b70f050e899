#!/usr/bin/env bash
# Thirteenth session, call B: the multi-tensor and fused entries' blocks sweep runs of
# neighbouring chunks (multi::chunk_run) on a capped grid, against the twelfth session's final
# bundle (base.tar.xz, chunks dealt out in turn), alternated on one machine; then the GPU tests
# of the multi and fused entries and the session on the new bundle.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
for v in base new; do
  mkdir -p /tmp/$v && tar -xJf "$here/$v.tar.xz" -C /tmp/$v
done
mkdir -p "$OUT/logs"
for round in 1 2; do
  for v in new base; do
    cd /tmp/$v/gpu-bundle
    timeout 120 ./examples/bench --out "/tmp/o-$v-$round" --only rl_set --set bench/rl_set.json > "$OUT/logs/$v-$round-rl.txt" 2>&1
    timeout 120 ./examples/bench --out "/tmp/o-$v-$round-b" --only rl_bf16 > "$OUT/logs/$v-$round-bf16.txt" 2>&1
    echo "== $v $round"; grep -hiE "fused|bf16" "$OUT/logs/$v-$round-rl.txt" "$OUT/logs/$v-$round-bf16.txt" | tail -n 30
  done
done
b=/tmp/new/gpu-bundle; cd $b
for t in gpu_fused_mixed gpu_fused gpu_multi_tensor gpu_clamp_scales gpu_session gpu_group_slots gpu_kernel_sets gpu_records; do
  timeout 150 "$b/tests/$t" --include-ignored --test-threads 1 > "$OUT/logs/test-$t.txt" 2>&1
  echo "rc $?" >> "$OUT/logs/test-$t.txt"
  echo "$t: $(grep -E '^test result' "$OUT/logs/test-$t.txt" | tail -1) $(tail -n 1 "$OUT/logs/test-$t.txt")"
done
grep -h "^test .*FAILED\|panicked" "$OUT"/logs/test-*.txt | head -30
tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
