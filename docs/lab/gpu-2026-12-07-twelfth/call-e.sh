#!/usr/bin/env bash
# Twelfth session, call E: the 16-bit paths at 2^28 beside PyTorch after the records' poison
# of pre-store values and the build without the SLP vectorizer (the 14 B goal), the RL set in
# bf16 with the chunk sweep, then every GPU test (the records changed in every entry).
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/run && rm -rf /tmp/run/gpu-bundle && tar -xJf "$here/bundle.tar.xz" -C /tmp/run
b=/tmp/run/gpu-bundle
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
cd "$b"
timeout 80 python3 -c "import sys,json; sys.path.insert(0,'bench'); import torch_bench as tb; t=tb.Timer(20,10,3); print(json.dumps(tb.bench_half(t)))" > "$OUT/torch-half.json" 2> "$OUT/torch-half.err"
timeout 60 ./examples/bench --out "$OUT/bench-half" --only half > "$OUT/bench-half.txt" 2>&1
tail -n 12 "$OUT/bench-half.txt"; cat "$OUT/torch-half.json"
timeout 90 ./examples/bench --out "$OUT/bench-rl-bf16" --only rl_bf16 > "$OUT/bench-rl-bf16.txt" 2>&1; tail -n 5 "$OUT/bench-rl-bf16.txt"
mkdir -p "$OUT/tests"
start=$SECONDS
for t in gpu_records gpu_optimizers gpu_stochastic_rounding gpu_half_weights gpu_fused_mixed gpu_fused gpu_nan_check gpu_nan_check_half gpu_multi_tensor gpu_session gpu_guard gpu_resume gpu_mixed_precision_training gpu_fp16_training gpu_exact_bf16 gpu_safe_half gpu_clamp_scales gpu_group_slots gpu_host_routes gpu_interop gpu_kernel_sets gpu_loss_scaling gpu_schedules; do
  [ $((SECONDS - start)) -gt 400 ] && { echo "$t: not run (time)"; continue; }
  timeout 90 "$b/tests/$t" --include-ignored --test-threads 1 --nocapture > "$OUT/tests/$t.txt" 2>&1
  echo "rc $?" >> "$OUT/tests/$t.txt"
  echo "$t: $(grep -E '^test result' "$OUT/tests/$t.txt" | tail -1) $(tail -n 1 "$OUT/tests/$t.txt")"
done
grep -h "^test .*FAILED\|panicked" "$OUT"/tests/*.txt | head -30
grep -h -A8 "panicked" "$OUT"/tests/*.txt | cut -c1-300 | head -40
tar -czf "$OUT/tests.tar.gz" -C "$OUT" tests && rm -rf "$OUT/tests"
rm -rf "$OUT/bench-half" "$OUT/bench-rl-bf16"
