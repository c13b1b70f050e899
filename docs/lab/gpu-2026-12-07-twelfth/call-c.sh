#!/usr/bin/env bash
# Twelfth session, call C: the 16-bit paths at 2^28 beside PyTorch after the limit-min store
# (2b1d90a), the RL set in bf16, ncu on the RL set's fused launches (why its fixed cost is what
# it is) and on the 14 B kernel, then the GPU tests that the store and the records touch.
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
timeout 45 ./examples/bench --out "$OUT/bench-rl-bf16" --only rl_bf16 > "$OUT/bench-rl-bf16.txt" 2>&1; tail -n 3 "$OUT/bench-rl-bf16.txt"
mkdir -p "$OUT/tests"
for t in gpu_stochastic_rounding gpu_half_weights gpu_fused_mixed gpu_resume gpu_mixed_precision_training gpu_records gpu_fp16_training gpu_exact_bf16 gpu_safe_half gpu_nan_check_half gpu_optimizers gpu_fused; do
  timeout 90 "$b/tests/$t" --include-ignored --test-threads 1 --nocapture > "$OUT/tests/$t.txt" 2>&1
  echo "rc $?" >> "$OUT/tests/$t.txt"
  echo "$t: $(grep -E '^test result' "$OUT/tests/$t.txt" | tail -1) $(tail -n 1 "$OUT/tests/$t.txt")"
done
grep -h "^test .*FAILED\|panicked" "$OUT"/tests/*.txt | head -30
tar -czf "$OUT/tests.tar.gz" -C "$OUT" tests && rm -rf "$OUT/tests"
# ncu: the RL set's two fused launches (f32, then bf16; each a graph node), the sections that
# say where a short launch's time goes.
timeout 150 ncu --graph-profiling node --kernel-name adamant_fused_mixed --launch-skip 0 --launch-count 2 \
  --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats \
  ./examples/bench --quick --out /tmp/ncu-rl --only rl_bf16 > "$OUT/ncu-rl.txt" 2>&1
grep -E "adamant_fused_mixed|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Stall|Waves Per SM|Grid Size|Block Limit|Warp Cycles Per Issued|Issued Warp|No Eligible|Local" "$OUT/ncu-rl.txt" | head -60
timeout 120 ncu --kernel-name adamw_bf16_sr_moments --launch-count 1 --section SpeedOfLight --section WarpStateStats --section InstructionStats \
  ./examples/bench --quick --out /tmp/ncu-half --only half > "$OUT/ncu-14b.txt" 2>&1
grep -E "Duration|Throughput|Executed Ipc|Issue Slots|Stall" "$OUT/ncu-14b.txt" | head -20
