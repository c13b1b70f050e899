#!/usr/bin/env bash
# Session 2026-12-07 (tenth), call A (about 8 minutes, most important first): what the ninth
# session could not run and this session's new GPU tests. Issue 27: resume in a new process,
# PyTorch interchange, a session resumed from a file. Issue 26: safe 16-bit buffers, 16-bit
# rules in a fused entry against the per-rule launches, the f32 fused entry after its table
# change, the NaN check over 16-bit slots, stochastic rounding, exact bf16, loss scaling, the
# mixed-precision run. Then the benches: checkpoint, the RL set in bf16, the 16-bit paths beside
# PyTorch. Each step writes under $OUT as it goes (a timeout keeps what is done).
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/run && tar -xJf "$here/bundle.tar.xz" -C /tmp/run
b=/tmp/run/gpu-bundle
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
for t in gpu_resume gpu_safe_half gpu_fused_mixed gpu_nan_check_half gpu_fp16_training gpu_stochastic_rounding gpu_exact_bf16 gpu_loss_scaling gpu_mixed_precision_training gpu_session gpu_fused; do
  timeout 60 "$b/tests/$t" --include-ignored --test-threads 1 --nocapture > "$OUT/$t.txt" 2>&1
  echo "rc $?" >> "$OUT/$t.txt"
  tail -n 3 "$OUT/$t.txt"
done
grep -h "resumed at\|mixed precision\|loss scaling:\|fused mixed\|^test .*FAILED\|panicked" "$OUT"/gpu_*.txt | head -40
(cd "$b" && timeout 90 ./examples/bench --out "$OUT/bench-checkpoint" --only checkpoint > "$OUT/bench-checkpoint.txt" 2>&1); tail -n 4 "$OUT/bench-checkpoint.txt"
(cd "$b" && timeout 45 ./examples/bench --out "$OUT/bench-rl-bf16" --only rl_bf16 > "$OUT/bench-rl-bf16.txt" 2>&1); tail -n 3 "$OUT/bench-rl-bf16.txt"
(cd "$b" && timeout 80 python3 -c "import sys,json; sys.path.insert(0,'bench'); import torch_bench as tb; t=tb.Timer(20,10,3); print(json.dumps(tb.bench_half(t)))" > "$OUT/torch-half.json" 2> "$OUT/torch-half.err"; timeout 60 ./examples/bench --out "$OUT/bench-half" --only half > "$OUT/bench-half.txt" 2>&1)
tail -n 12 "$OUT/bench-half.txt"; cat "$OUT/torch-half.json"
