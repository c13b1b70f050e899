#!/usr/bin/env bash
# On the build machine: builds every GPU test binary, example and benchmark in release mode and
# gathers them, with the PTX and the run script, in gpu-bundle/ (git-ignored). Copy that folder to
# a machine with an NVIDIA GPU (it needs the driver, not cargo) and run gpu-bundle/gpu-run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=gpu-bundle
rm -rf "$bundle"
mkdir -p "$bundle/tests" "$bundle/examples"

cargo build --release --examples --bin adamant
cargo test --release --no-run --message-format=json 2>/dev/null \
  | python3 -c '
import json, sys, shutil
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
        continue
    name = msg["target"]["name"]
    if msg["profile"]["test"] and name.startswith("gpu_"):
        shutil.copy(msg["executable"], sys.argv[1] + "/tests/" + name)
        print("test binary:", name)
' "$bundle"
for ex in examples/*.rs; do
  name=$(basename "$ex" .rs)
  cp "target/release/examples/$name" "$bundle/examples/$name"
done
# The downstream example crate (examples/custom-optimizer): its binary runs with the examples.
cargo build --release -p custom-optimizer --bins
cp target/release/custom-optimizer "$bundle/examples/custom_optimizer"
# Its training run runs only beside its PyTorch replay (gpu-run.sh's crosschecks).
mkdir -p "$bundle/crosscheck"
cp target/release/train "$bundle/crosscheck/custom_optimizer_train"
cp target/release/adamant "$bundle/adamant"
cp target/ptx/adamant_kernels.ptx "$bundle/"
cp scripts/gpu-run.sh scripts/gpu-bench.sh "$bundle/"
[ -d bench ] && cp -r bench "$bundle/bench"
# The PyTorch side of the checkpoint interchange test (tests/gpu/resume.rs runs it).
mkdir -p "$bundle/scripts" && cp scripts/torch_checkpoint.py "$bundle/scripts/"
du -sh "$bundle"
# ADAMANT_PACK=1: strip the binaries and pack the bundle as gpu-bundle/bundle.tar.xz (about 4 MB
# instead of 70: every test binary then fits a device call's carry limit). Unpack it on the GPU
# machine with `tar -xJf bundle.tar.xz` (docs/lab/bench-2026-12-06-h/next/session-run.sh does).
if [ "${ADAMANT_PACK:-}" = 1 ]; then
  strip "$bundle"/tests/* "$bundle"/examples/* "$bundle"/crosscheck/* "$bundle"/adamant
  tar -cJf bundle.tar.xz "$bundle"
  rm -rf "$bundle" && mkdir "$bundle" && mv bundle.tar.xz "$bundle/"
  du -sh "$bundle"
fi
