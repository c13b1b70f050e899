#!/usr/bin/env bash
# On a machine with an NVIDIA GPU, from the bundle made by scripts/gpu-build.sh: runs PyTorch's
# side of the benchmark, then ours, then the no-arithmetic floor, in the same run, then the report
# (table + plot).
# Results go to $OUT (if set) or ./bench-out.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/bench-out}
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
cd "$here"
python3 bench/torch_bench.py --out "$out" "$@"
./examples/bench --out "$out" --set bench/rl_set.json "$@"
# The no-arithmetic floor of the same run (CuPy). If it cannot run, the report warns that its file
# is missing and leaves its rows out; no goal depends on it.
rm -f "$out/traffic.json"
python3 bench/traffic_floor.py --set bench/rl_set.json --out "$out/traffic.json" \
  || echo "gpu-bench: the no-arithmetic floor (bench/traffic_floor.py) did not run" >&2
python3 bench/report.py --rust "$out/bench_rust.json" --torch "$out/bench_torch.json" \
  --floor "$out/traffic.json" --out "$out"
