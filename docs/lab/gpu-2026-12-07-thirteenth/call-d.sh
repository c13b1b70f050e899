#!/usr/bin/env bash
# Thirteenth session, call D: the multi-tensor and fused entries flush their records after every
# chunk (fewer registers: the flush no longer keeps the block's recording state live through the
# sweeps), at the multi-tensor cap of 80 (new80) and with the multi-tensor entries at 64
# (new64, the fused entries still at 80), against the twelfth session's final bundle (base),
# alternated; then the prepared launches' test and the session benchmark, PyTorch's four groups,
# and every GPU test binary on new80.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
for v in base new80 new64; do
  mkdir -p /tmp/$v && tar -xJf "$here/$v.tar.xz" -C /tmp/$v
done
mkdir -p "$OUT/logs"
b=/tmp/new80/gpu-bundle; cd $b
timeout 60 "$b/tests/gpu_prepared" --include-ignored --test-threads 1 > "$OUT/logs/test-gpu_prepared.txt" 2>&1; echo "rc $?" >> "$OUT/logs/test-gpu_prepared.txt"
tail -n 4 "$OUT/logs/test-gpu_prepared.txt"
for v in new80 new64 base; do
  cd /tmp/$v/gpu-bundle
  timeout 100 ./examples/bench --out "/tmp/o-$v" --only rl_set,four_groups --set bench/rl_set.json > "$OUT/logs/$v-rl.txt" 2>&1
  timeout 100 ./examples/bench --out "/tmp/o-$v-b" --only rl_bf16 > "$OUT/logs/$v-bf16.txt" 2>&1
  echo "== $v"; grep -hE "one fused launch: eager|parallel branches|chunks of (8192|16384)(:| on)|four groups|advance \+ one fused|396 blocks" "$OUT/logs/$v-rl.txt" "$OUT/logs/$v-bf16.txt"
done
cd /tmp/new80/gpu-bundle
timeout 100 python3 -c "import sys,json; sys.path.insert(0,'bench'); import torch_bench as tb; t=tb.Timer(100,50,5); print(json.dumps(tb.bench_four_groups(t)))" > "$OUT/torch-four-groups.json" 2> "$OUT/torch-four-groups.err"
cat "$OUT/torch-four-groups.json"
timeout 120 ./examples/bench --out /tmp/o-sess --only session --set bench/rl_set.json > "$OUT/logs/session.txt" 2>&1
grep -E "^session \(RL" "$OUT/logs/session.txt"
start=$SECONDS
for t in gpu_fused gpu_fused_mixed gpu_multi_tensor gpu_records gpu_session gpu_clamp_scales gpu_group_slots gpu_kernel_sets gpu_host_routes gpu_interop gpu_guard gpu_schedules gpu_nan_check gpu_nan_check_half gpu_half_weights gpu_exact_bf16 gpu_safe_half gpu_stochastic_rounding gpu_loss_scaling gpu_fp16_training gpu_mixed_precision_training gpu_optimizers gpu_resume; do
  [ $((SECONDS - start)) -gt 200 ] && { echo "$t: not run (time)"; continue; }
  timeout 100 "$b/tests/$t" --include-ignored --test-threads 1 > "$OUT/logs/test-$t.txt" 2>&1
  echo "rc $?" >> "$OUT/logs/test-$t.txt"
  echo "$t: $(grep -E '^test result' "$OUT/logs/test-$t.txt" | tail -1) $(tail -n 1 "$OUT/logs/test-$t.txt")"
done
grep -h "^test .*FAILED\|panicked" "$OUT"/logs/test-*.txt | head -30
tar -czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
