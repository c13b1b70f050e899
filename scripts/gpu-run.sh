#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: runs every GPU test (plain, then under compute-sanitizer
# memcheck and racecheck), every example, and prints a summary. Needs only the bundle made by
# scripts/gpu-build.sh, the driver, and compute-sanitizer on PATH or in /usr/local/cuda/bin.
# Logs go to ./gpu-logs, and as one archive to $OUT/gpu-logs.tar.gz when $OUT is set.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
logs=$here/gpu-logs
rm -rf "$logs"
mkdir -p "$logs"
export PATH="$PATH:/usr/local/cuda/bin"
summary=()
note() { summary+=("$1"); }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$logs/gpu.txt"

for t in "$here"/tests/*; do
  name=$(basename "$t")
  if "$t" --include-ignored --test-threads=1 --nocapture >"$logs/$name.log" 2>&1; then
    note "PASS  $name: $(grep -E '^test result' "$logs/$name.log" | tail -1)"
  else
    note "FAIL  $name (see $name.log)"; tail -30 "$logs/$name.log"
  fi
done

# The sanitizers instrument every access; ADAMANT_SANITIZER_RUN=1 makes the tests skip their
# largest sizes (2^26) so a run stays within minutes (the plain run above covers them).
# Tests named `*missing_kernel_is_named` or `*provokes_driver_errors` provoke CUDA API errors on
# purpose (a missing entry, a garbage module, a host address given as device memory), which
# compute-sanitizer would count; the plain run covers them.
# ADAMANT_SANITIZERS names the tools to run (default both; a short device lease may take
# memcheck alone, and then says so in the summary).
note "sanitizers: ${ADAMANT_SANITIZERS:-memcheck racecheck}, on ${ADAMANT_SANITIZE_TESTS:-every test binary}"
for tool in ${ADAMANT_SANITIZERS:-memcheck racecheck}; do
  for t in "$here"/tests/*; do
    name=$(basename "$t")
    # ADAMANT_SANITIZE_TESTS, if set, names the test binaries to sanitize (default every one).
    case " ${ADAMANT_SANITIZE_TESTS:-$name} " in *" $name "*) ;; *) continue ;; esac
    log="$logs/$name.$tool.log"
    ADAMANT_SANITIZER_RUN=1 compute-sanitizer --tool "$tool" --error-exitcode 99 \
      "$t" --ignored --test-threads=1 --skip missing_kernel_is_named \
      --skip provokes_driver_errors >"$log" 2>&1
    rc=$?
    errors=$(grep -Eo 'ERROR SUMMARY: [0-9]+ error' "$log" | tail -1)
    hazards=$(grep -Eo 'RACECHECK SUMMARY: [0-9]+ hazard' "$log" | tail -1)
    if [ $rc -eq 0 ]; then
      note "PASS  $tool $name: ${errors:-}${hazards:+ $hazards}"
    else
      note "FAIL  $tool $name (rc $rc): ${errors:-} ${hazards:-}"; tail -30 "$log"
    fi
  done
done

for e in "$here"/examples/*; do
  name=$(basename "$e")
  case "$name" in bench* | torch_crosscheck) continue ;; esac
  if "$e" >"$logs/example-$name.log" 2>&1; then
    note "PASS  example $name"
  else
    note "FAIL  example $name"; tail -30 "$logs/example-$name.log"
  fi
  cat "$logs/example-$name.log"
done

# PyTorch as a second reference: `crosscheck NAME WHAT BINARY SCRIPT` runs the binary, which
# writes its results to a folder, then the script, which replays the same run with torch.optim and
# compares.
crosscheck() {
  local name=$1 what=$2 binary=$3 script=$4 dir=$here/gpu-logs/$1
  mkdir -p "$dir"
  if "$binary" "$dir" >"$logs/$name.log" 2>&1 && python3 "$script" "$dir" >>"$logs/$name.log" 2>&1; then
    note "PASS  $what"
  else
    note "FAIL  $what"
  fi
  cat "$logs/$name.log"
  rm -rf "$dir"
}
# One step of each of the five kernels.
crosscheck torch-crosscheck "torch crosscheck (five kernels vs torch.optim)" \
  "$here/examples/torch_crosscheck" "$here/bench/torch_crosscheck.py"
# The downstream example crate's SGD (its Lion runs against the f64 reference in the example).
crosscheck custom-optimizer-torch "custom_optimizer vs torch.optim.SGD" \
  "$here/examples/custom_optimizer" "$here/bench/custom_optimizer_torch.py"
# The downstream example's captured NAdam and centered RMSprop over a 1500-step training run.
crosscheck custom-optimizer-train "custom_optimizer train vs torch.optim.NAdam and RMSprop(centered)" \
  "$here/crosscheck/custom_optimizer_train" "$here/bench/custom_optimizer_train_torch.py"

[ -n "${OUT:-}" ] && tar czf "$OUT/gpu-logs.tar.gz" -C "$logs" .
echo
echo "== adamant GPU summary ($(date -u +%F), $(head -1 "$logs/gpu.txt")) =="
printf '%s\n' "${summary[@]}"
echo "-- figures the tests print --"
for t in "$here"/tests/*; do
  grep -h -E '^(max_error|multi_tensor|fault-injection|schedules)' "$logs/$(basename "$t").log" || true
done
! printf '%s\n' "${summary[@]}" | grep -q '^FAIL'
