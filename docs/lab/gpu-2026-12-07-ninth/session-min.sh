#!/usr/bin/env bash
# Session 2026-12-07 (ninth), the short call for a machine that comes with little device time
# left: issue 27's GPU tests (resume in a new process, PyTorch interchange, a session resumed
# from a file), the fixed stochastic-rounding moments test, and the checkpoint bench.
set -x
export PATH=$PATH:/usr/local/cuda/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/run && tar -xJf "$here/bundle.tar.xz" -C /tmp/run
b=/tmp/run/gpu-bundle
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
timeout 150 "$b/tests/gpu_resume" --include-ignored --test-threads 1 --nocapture > "$OUT/gpu_resume.txt" 2>&1; echo "rc $?" >> "$OUT/gpu_resume.txt"
timeout 60 "$b/tests/gpu_safe_half" --include-ignored --test-threads 1 --nocapture > "$OUT/gpu_safe_half.txt" 2>&1; echo "rc $?" >> "$OUT/gpu_safe_half.txt"
timeout 60 "$b/tests/gpu_session" --include-ignored --exact a_session_saved_to_a_file_resumes_exactly --nocapture > "$OUT/gpu_session_file.txt" 2>&1; echo "rc $?" >> "$OUT/gpu_session_file.txt"
timeout 60 "$b/tests/gpu_stochastic_rounding" --include-ignored --exact bf16_moments_are_the_reference_rounded_with_their_own_words --nocapture > "$OUT/gpu_stochastic_moments.txt" 2>&1; echo "rc $?" >> "$OUT/gpu_stochastic_moments.txt"
tail -n 6 "$OUT"/gpu_*.txt
(cd "$b" && timeout 90 ./examples/bench --out "$OUT/bench-checkpoint" --only checkpoint > "$OUT/bench-checkpoint.txt" 2>&1); tail -n 3 "$OUT/bench-checkpoint.txt"
