#!/usr/bin/env bash
# Twelfth session, call H: each lane's poison its own chain (F's kernels otherwise): the
# 16-bit paths at 2^28 beside PyTorch, then the records' and the fused 16-bit tests.
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
mkdir -p "$OUT/tests"
for t in gpu_records gpu_fused_mixed gpu_stochastic_rounding gpu_half_weights gpu_nan_check; do
  timeout 60 "$b/tests/$t" --include-ignored --test-threads 1 --nocapture > "$OUT/tests/$t.txt" 2>&1
  echo "rc $?" >> "$OUT/tests/$t.txt"
  echo "$t: $(grep -E '^test result' "$OUT/tests/$t.txt" | tail -1) $(tail -n 1 "$OUT/tests/$t.txt")"
done
tar -czf "$OUT/tests.tar.gz" -C "$OUT" tests && rm -rf "$OUT/tests" "$OUT/bench-half"
