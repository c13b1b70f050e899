#!/usr/bin/env bash
# Sixteenth session, call D (call C, cut again to the device time left), on `main` (2b82347): the
# traffic floor (bench/traffic_floor.py), our RL set and session step in the same call, then ncu
# of our Adam at 2^28 and of the traffic floor's single-buffer kernels. One tarball.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/main && tar -xJf "$here/main.tar.xz" -C /tmp/main
b=/tmp/main/gpu-bundle; w=/tmp/w; mkdir -p $w
pack() { tar -czf "$OUT/d.tar.gz" -C $w . ; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > $w/gpu.txt
timeout 120 python3 "$here/traffic_floor.py" --set "$here/../bench/rl_set.json" --out $w/traffic.json > $w/traffic.txt 2>&1
echo "traffic rc $?" >> $w/traffic.txt; cat $w/traffic.txt; pack
cd $b
timeout 60 ./examples/bench --out /tmp/o --only rl_set,four_groups,rl_bf16 --set bench/rl_set.json > $w/main-rl.txt 2>&1
grep -hE "one fused launch: eager|parallel branches|four groups \(|chunks of 8192: f32" $w/main-rl.txt
timeout 40 ./examples/bench --out /tmp/s --only session --set bench/rl_set.json > $w/main-session.txt 2>&1
grep -E "^session" $w/main-session.txt | cut -c1-150; pack
echo "elapsed $SECONDS"
if [ $SECONDS -lt 110 ]; then
  timeout 45 ncu --kernel-name attn_adam_kernel --launch-skip 80 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis \
    ./examples/bench --quick --out /tmp/ncu-sizes --only sizes > $w/ncu-adam-2p28.txt 2>&1
  echo "ncu rc $?" >> $w/ncu-adam-2p28.txt
  grep -E "attn_adam_kernel \(|DRAM Throughput|Duration|rc " $w/ncu-adam-2p28.txt | head; pack
fi
if [ $SECONDS -lt 0 ]; then
  timeout 80 ncu --kernel-id '::regex:^(copy1|copy4|adam_f32_[124]|adam_f32_mv|adam_bf16)$:4' \
    --section SpeedOfLight --section MemoryWorkloadAnalysis \
    python3 "$here/traffic_floor.py" --single-only --reps 1 --out /tmp/tf-ncu.json > $w/ncu-traffic-2p28.txt 2>&1
  echo "ncu rc $?" >> $w/ncu-traffic-2p28.txt
  grep -E "^  [a-z_0-9]+ \(|DRAM Throughput|Duration|rc " $w/ncu-traffic-2p28.txt | head -40; pack
fi
echo "elapsed $SECONDS"
