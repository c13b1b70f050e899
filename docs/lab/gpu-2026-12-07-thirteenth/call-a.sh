#!/usr/bin/env bash
# Thirteenth session, call A: the chunk's L2 prefetch (multi-tensor and fused entries) against
# the twelfth session's final bundle (base.tar.xz), alternated, same machine; then the GPU tests
# of the multi and fused entries on the new bundle.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
for v in base new; do
  mkdir -p /tmp/$v && tar -xJf "$here/$v.tar.xz" -C /tmp/$v
done
for round in 1 2; do
  for v in new base; do
    b=/tmp/$v/gpu-bundle; cd "$b"
    timeout 90 ./examples/bench --out "/tmp/o-$v-$round" --only rl_set,four_groups --set bench/rl_set.json > "$OUT/$v-$round-rl.txt" 2>&1
    timeout 90 ./examples/bench --out "/tmp/o-$v-$round-b" --only rl_bf16 > "$OUT/$v-$round-bf16.txt" 2>&1
    echo "== $v $round"; grep -iE "fused|graph|bf16|four" "$OUT/$v-$round-rl.txt" "$OUT/$v-$round-bf16.txt" | tail -n 30
  done
done
b=/tmp/new/gpu-bundle
timeout 60 ./examples/bench --out /tmp/o-sess --only session --set bench/rl_set.json > "$OUT/new-session.txt" 2>&1; tail -n 8 "$OUT/new-session.txt"
mkdir -p "$OUT/tests"
for t in gpu_fused_mixed gpu_fused gpu_multi_tensor gpu_clamp_scales gpu_session gpu_group_slots; do
  [ -x "$b/tests/$t" ] || { echo "no $t"; continue; }
  timeout 120 "$b/tests/$t" --include-ignored --test-threads 1 > "$OUT/tests/$t.txt" 2>&1
  echo "rc $?" >> "$OUT/tests/$t.txt"
  echo "$t: $(grep -E '^test result' "$OUT/tests/$t.txt" | tail -1) $(tail -n 1 "$OUT/tests/$t.txt")"
done
grep -h "^test .*FAILED\|panicked" "$OUT"/tests/*.txt | head -30
cd /tmp/new/gpu-bundle
timeout 150 ncu --graph-profiling node --kernel-name adamant_fused_mixed --launch-skip 0 --launch-count 2 \
  --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
  ./examples/bench --quick --out /tmp/ncu-rl --only rl_bf16 > "$OUT/ncu-rl.txt" 2>&1
grep -E "adamant_fused_mixed|Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Stall|L2 Hit" "$OUT/ncu-rl.txt" | head -40
