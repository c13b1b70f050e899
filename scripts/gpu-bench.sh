#!/usr/bin/env bash
# On a machine with an NVIDIA GPU, from the bundle made by scripts/gpu-build.sh: runs PyTorch's
# side of the benchmark, then ours, in the same run, then the report (table + plot).
# Results go to $OUT (if set) or ./bench-out.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/bench-out}
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
cd "$here"
python3 bench/torch_bench.py --out "$out" "$@"
./examples/bench --out "$out" --set bench/rl_set.json "$@"
python3 bench/report.py --rust "$out/bench_rust.json" --torch "$out/bench_torch.json" --out "$out"
