#!/usr/bin/env python3
"""PyTorch side of the issue-5 benchmark: times the workloads examples/bench.rs times, on the same
GPU in the same run, and writes DIR/bench_torch.json for bench/report.py.

    python3 bench/torch_bench.py [--out DIR] [--quick]

Two kinds of timing (see bench/README.md for the reasoning):
  * device time ("hot", "cold", every graph replay, the copy): a spin kernel is queued before the
    start event, so the host has queued the whole step before the GPU reaches the start event and
    the figure is what the GPU spends on the step, without launch latency;
  * host-inclusive time ("eager" in rl_set and check): the GPU is idle when the start event is
    recorded, so the figure also holds the host's time to issue the launches, which is what an
    eager training loop pays.
Every figure is the median of >= 50 repetitions after a warm-up (fewer with --quick). A
measurement that fails is recorded as {"error": "..."} and the run goes on.
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import time
import traceback

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

# Bytes each element moves: Adam reads p, g, m, v and writes p, m, v (7 × 4 B); AMSGrad also reads
# and writes v_max (9 × 4 B); a read-only check reads it once.
ADAM_BYTES, AMSGRAD_BYTES, CHECK_BYTES = 28, 36, 4

# The H200's L2 is 60 MB or less; zeroing 256 MiB evicts every line of the previous step.
FLUSH_BYTES = 256 << 20

# Hyperparameters of the five kernels as examples/optimizer_step.rs drives them, mapped to the
# torch.optim class that does the same arithmetic: AdamW = decoupled decay (dqn, attn), Adam with
# weight_decay = L2 decay added to the gradient (iqn, iql), Adam(amsgrad) for curiosity. Our kernels
# also clamp |p| (and dqn scales, iql clips the gradient); PyTorch does none of that, so the
# comparison, if anything, favours PyTorch.
KERNEL_OPTIMIZERS = {
    "dqn_adam_update_kernel": ("AdamW", dict(lr=1e-3, weight_decay=0.01)),
    "iqn_adam_kernel": ("Adam", dict(lr=5e-4, weight_decay=1e-4)),
    "iql_adam_kernel": ("Adam", dict(lr=3e-4, weight_decay=1e-4)),
    "attn_adam_kernel": ("AdamW", dict(lr=1e-3, weight_decay=0.01)),
    "curiosity_adam_step": ("Adam", dict(lr=1e-3, weight_decay=0.0, amsgrad=True)),
}
AMSGRAD_KERNELS = {"curiosity_adam_step"}

# Single-buffer Adam matches attn_adam_kernel (AdamW, lr 1e-3, wd 0.01), the kernel the Rust side
# times in adam_sizes.
SINGLE_LR, SINGLE_WD = 1e-3, 0.01


def now_utc():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def error_record(exc):
    """What a failed measurement leaves in the JSON: the error and where it came from."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {tb[-1].name}:{tb[-1].lineno})" if tb else ""
    return {"error": f"{type(exc).__name__}: {exc}"[:500] + where}


def attempt(label, fn):
    """Runs one measurement; a failure becomes {"error": ...} so the other figures still come."""
    t0 = time.perf_counter()
    try:
        value = fn()
    except Exception as exc:  # noqa: BLE001 - any failure is a recorded result, not a crash
        value = error_record(exc)
        try:
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001 - a sticky CUDA error will show in the next figure too
            pass
    shown = f"{value:,.2f} µs" if isinstance(value, float) else value
    print(f"  {label:<34} {shown}   [{time.perf_counter() - t0:.1f} s]", flush=True)
    return value


class Timer:
    """CUDA-event timing with warm-up and medians, in the two modes the module docstring names."""

    MAX_SLEEP_US = 5000.0

    def __init__(self, reps, reps_large, warmup):
        self.reps, self.reps_large, self.warmup = reps, reps_large, warmup
        self.device = torch.device("cuda")
        self.flush_buf = torch.empty(FLUSH_BYTES // 4, dtype=torch.float32, device=self.device)
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)
        # Long enough for Python to issue one optimizer step; doubled whenever the GPU caught up.
        self.sleep_us = 300.0
        self.retries = 0  # samples dropped because the GPU reached the start event too early
        self.exposed = 0  # samples kept although launch latency may be in them (sleep at max)
        self.cycles_per_us = self._calibrate_sleep()

    def _calibrate_sleep(self):
        """Clock cycles per µs of torch.cuda._sleep's spin kernel, or None where it is missing."""
        if not hasattr(torch.cuda, "_sleep"):
            return None
        try:
            cycles = 20_000_000
            torch.cuda._sleep(1000)
            torch.cuda.synchronize()
            self.start.record()
            torch.cuda._sleep(cycles)
            self.end.record()
            self.end.synchronize()
            return cycles / (self.start.elapsed_time(self.end) * 1e3)
        except Exception:  # noqa: BLE001 - without it, figures simply keep launch latency
            return None

    def flush_l2(self):
        self.flush_buf.zero_()

    def _keep_gpu_busy(self):
        if self.cycles_per_us:
            torch.cuda._sleep(int(self.sleep_us * self.cycles_per_us))

    def device_us(self, fn, cold=False, reps=None):
        """Median device time of fn() in µs. The spin kernel queued before the start event lets
        the host queue all of fn before the GPU starts timing, so host overhead and launch latency
        stay out. With cold=True the L2 is flushed before each repetition, outside the events."""
        reps = reps or self.reps
        for _ in range(self.warmup):
            if cold:
                self.flush_l2()
            fn()
        torch.cuda.synchronize()
        samples = []
        while len(samples) < reps:
            if cold:
                self.flush_l2()
            self._keep_gpu_busy()
            self.start.record()
            fn()
            self.end.record()
            # If the GPU already passed the start event, it may have idled waiting for our
            # launches: drop the sample and spin longer from now on.
            caught_up = self.start.query()
            self.end.synchronize()
            if caught_up and self.cycles_per_us and self.sleep_us < self.MAX_SLEEP_US:
                self.sleep_us = min(2 * self.sleep_us, self.MAX_SLEEP_US)
                self.retries += 1
                continue
            if caught_up:
                self.exposed += 1
            samples.append(self.start.elapsed_time(self.end) * 1e3)
        return round(statistics.median(samples), 3)

    def host_us(self, fn, reps=None):
        """Median time of fn() from an idle GPU, in µs: the start event fires as soon as it is
        recorded, so the host's time to issue every launch is part of the figure (eager cost)."""
        reps = reps or self.reps
        for _ in range(self.warmup):
            fn()
        samples = []
        for _ in range(reps):
            torch.cuda.synchronize()
            self.start.record()
            fn()
            self.end.record()
            self.end.synchronize()
            samples.append(self.start.elapsed_time(self.end) * 1e3)
        return round(statistics.median(samples), 3)


def capture_graph(step, warmup=3):
    """Captures step() into a CUDA graph. The warm-up runs on a side stream first, as PyTorch's
    graph docs require, so lazy state (optimizer moments, cuBLAS/allocator set-up) exists before
    capture."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            step()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    torch.cuda.synchronize()
    return graph


def make_param(shape, device):
    """A parameter with a random gradient, values in the range the training code sees."""
    p = torch.nn.Parameter(torch.empty(shape, dtype=torch.float32, device=device).uniform_(-0.3, 0.3))
    p.grad = torch.empty_like(p).uniform_(-1.0, 1.0)
    return p


def bench_copy(timer, log2):
    n = 1 << log2
    src = torch.empty(n, dtype=torch.float32, device=timer.device).uniform_()
    dst = torch.empty_like(src)
    us = attempt(f"copy 2^{log2}", lambda: timer.device_us(lambda: dst.copy_(src)))
    src = dst = None  # free 2 GiB before the Adam sizes
    torch.cuda.empty_cache()
    out = {"elements": n, "bytes": 2 * 4 * n}
    if isinstance(us, float):
        out.update(median_us=us, gbps=round(out["bytes"] / us / 1e3, 1))
    else:
        out.update(median_us=us)
    return out


def bench_adam_size(timer, log2):
    """One tensor of 2^log2 elements: fused AdamW eager (hot, cold) and captured (hot, cold)."""
    n = 1 << log2
    reps = timer.reps_large if log2 >= 28 else timer.reps
    entry = {"log2": log2, "elements": n, "bytes": ADAM_BYTES * n}
    p = make_param((n,), timer.device)
    opt = graph = None
    try:
        opt = torch.optim.AdamW([p], lr=SINGLE_LR, weight_decay=SINGLE_WD, fused=True)
        for _ in range(3):  # moments exist and step > 1, as in the middle of training
            opt.step()
        entry["fused_hot_us"] = attempt(f"2^{log2} fused hot", lambda: timer.device_us(opt.step, reps=reps))
        entry["fused_cold_us"] = attempt(
            f"2^{log2} fused cold", lambda: timer.device_us(opt.step, cold=True, reps=reps))
    except Exception as exc:  # noqa: BLE001
        entry.setdefault("fused_hot_us", error_record(exc))
        entry.setdefault("fused_cold_us", error_record(exc))
    # A second optimizer state, not a second copy of p: free the eager one first so 2^30 stays
    # at one set of p, g, m, v (16 GiB).
    opt = None
    torch.cuda.empty_cache()
    try:
        opt = torch.optim.AdamW([p], lr=SINGLE_LR, weight_decay=SINGLE_WD, fused=True, capturable=True)
        graph = capture_graph(opt.step)
        entry["fused_graph_hot_us"] = attempt(
            f"2^{log2} fused graph hot", lambda: timer.device_us(graph.replay, reps=reps))
        entry["fused_graph_cold_us"] = attempt(
            f"2^{log2} fused graph cold", lambda: timer.device_us(graph.replay, cold=True, reps=reps))
    except Exception as exc:  # noqa: BLE001
        print(f"  2^{log2} graph capture failed: {exc}", flush=True)
        entry.setdefault("fused_graph_hot_us", error_record(exc))
        entry.setdefault("fused_graph_cold_us", error_record(exc))
    graph = opt = p = None
    torch.cuda.empty_cache()
    return entry


def load_rl_set():
    with open(os.path.join(HERE, "rl_set.json")) as f:
        return json.load(f)


def make_optimizer(name, params, fused=False, foreach=False, capturable=False, **hyper):
    cls = getattr(torch.optim, name)
    kwargs = dict(hyper, capturable=capturable)
    if fused:
        kwargs["fused"] = True
    if foreach:
        kwargs["foreach"] = True
    return cls(params, **kwargs)


def bench_rl_set(timer, spec):
    """Every tensor of rl_set.json: one fused AdamW over all of them (eager, graph), one optimizer
    per kernel as the training code would have them (eager, graph), and foreach in a graph."""
    by_kernel = {}
    for model in spec["models"]:
        for t in model["tensors"]:
            by_kernel.setdefault(model["kernel"], []).append(make_param(t["shape"], timer.device))
    params = [p for ps in by_kernel.values() for p in ps]
    elements = sum(p.numel() for p in params)
    amsgrad_elements = sum(p.numel() for k in AMSGRAD_KERNELS for p in by_kernel.get(k, []))
    out = {
        "tensors": len(params),
        "elements": elements,
        # The workload as our five kernels do it (curiosity with AMSGrad's v_max).
        "bytes": ADAM_BYTES * elements + (AMSGRAD_BYTES - ADAM_BYTES) * amsgrad_elements,
        # What one AdamW over everything moves (no v_max): the *_one variants do a little less.
        "bytes_one_optimizer": ADAM_BYTES * elements,
        "kernels": {k: {"tensors": len(ps), "elements": sum(p.numel() for p in ps),
                        "optimizer": KERNEL_OPTIMIZERS.get(k, ("unknown", {}))[0],
                        "hyper": KERNEL_OPTIMIZERS.get(k, ("unknown", {}))[1]}
                    for k, ps in by_kernel.items()},
    }
    if len(params) != spec.get("tensors") or elements != spec.get("elements"):
        out["warning"] = (f"built {len(params)} tensors / {elements} elements, rl_set.json says "
                          f"{spec.get('tensors')} / {spec.get('elements')}")

    def one(fused=True, foreach=False, capturable=False):
        return make_optimizer("AdamW", params, fused=fused, foreach=foreach, capturable=capturable,
                              lr=SINGLE_LR, weight_decay=SINGLE_WD)

    def five(capturable=False):
        missing = [k for k in by_kernel if k not in KERNEL_OPTIMIZERS]
        if missing:
            raise KeyError(f"no PyTorch optimizer for kernel(s) {missing}")
        return [make_optimizer(KERNEL_OPTIMIZERS[k][0], ps, fused=True, capturable=capturable,
                               **KERNEL_OPTIMIZERS[k][1]) for k, ps in by_kernel.items()]

    def step_all(opts):
        for o in opts:
            o.step()

    def eager(label, opts):
        step_all(opts)  # create the state outside the timing
        return attempt(label, lambda: timer.host_us(lambda: step_all(opts)))

    def graphed(label, opts):
        graph = capture_graph(lambda: step_all(opts))
        return attempt(label, lambda: timer.device_us(graph.replay))

    variants = [
        ("fused_eager_one_us", lambda: eager("rl_set fused eager, one optimizer", [one()])),
        ("fused_eager_five_us", lambda: eager("rl_set fused eager, five", five())),
        ("fused_graph_one_us", lambda: graphed("rl_set fused graph, one optimizer", [one(capturable=True)])),
        ("fused_graph_five_us", lambda: graphed("rl_set fused graph, five", five(capturable=True))),
        ("foreach_graph_one_us", lambda: graphed(
            "rl_set foreach graph, one optimizer", [one(fused=False, foreach=True, capturable=True)])),
    ]
    for key, run in variants:
        try:
            out[key] = run()
        except Exception as exc:  # noqa: BLE001 - e.g. capture unsupported for a variant
            out[key] = error_record(exc)
            print(f"  {key}: {out[key]['error']}", flush=True)
        torch.cuda.empty_cache()
    return out


def bench_four_groups(timer):
    """four_groups.json: 200 tensors of a 50-layer model in four parameter groups, with PyTorch's
    fused optimizers (AdamW with a decay and a no-decay group, a foreach clamp of the clipped
    group's gradients then Adam with L2 decay, Adam with AMSGrad), captured in one graph."""
    with open(os.path.join(HERE, "four_groups.json")) as f:
        spec = json.load(f)
    groups = spec["groups"]
    by_group = {name: [] for name in groups}
    for layer in range(spec["layers"]):
        owner = next(name for name, g in groups.items()
                     if "weights_of_layers" in g and g["weights_of_layers"][0] <= layer < g["weights_of_layers"][1])
        by_group[owner].append(make_param(spec["weight"], timer.device))
        for _ in range(3):
            by_group["no_decay"].append(make_param([spec["vector"]], timer.device))
    params = [p for ps in by_group.values() for p in ps]
    elements = sum(p.numel() for p in params)
    out = {"tensors": len(params), "elements": elements, "groups": len(groups)}
    clip = groups["clipped"]["grad_clip"]

    def optimizers():
        g = groups
        return [
            torch.optim.AdamW([
                {"params": by_group["decay"], "lr": g["decay"]["lr"], "weight_decay": g["decay"]["weight_decay"]},
                {"params": by_group["no_decay"], "lr": g["no_decay"]["lr"], "weight_decay": 0.0},
            ], fused=True, capturable=True),
            torch.optim.Adam(by_group["clipped"], lr=g["clipped"]["lr"],
                             weight_decay=g["clipped"]["weight_decay"], fused=True, capturable=True),
            torch.optim.Adam(by_group["amsgrad"], lr=g["amsgrad"]["lr"], amsgrad=True,
                             fused=True, capturable=True),
        ]

    def step(opts):
        grads = [p.grad for p in by_group["clipped"]]
        torch._foreach_clamp_min_(grads, -clip)
        torch._foreach_clamp_max_(grads, clip)
        for o in opts:
            o.step()

    try:
        opts = optimizers()
        step(opts)  # the state, outside the timing
        out["fused_eager_us"] = attempt("four groups fused eager", lambda: timer.host_us(lambda: step(opts)))
        graph = capture_graph(lambda: step(opts))
        out["fused_graph_us"] = attempt("four groups fused graph", lambda: timer.device_us(graph.replay))
    except Exception as exc:  # noqa: BLE001
        out["error"] = error_record(exc)["error"]
        print(f"  four groups: {out['error']}", flush=True)
    return out


def bench_half(timer, log2=28):
    """bf16 weights at 2^log2 (issue 26), cold, eager: PyTorch's two ways of training them.

    * ``fused_bf16``: AdamW(fused=True) on bf16 parameters and gradients; PyTorch keeps the moments
      in the parameter's dtype, so 14 B an element (p read and written, g read, m and v read and
      written, 2 B each), rounded to nearest;
    * ``master``: the mixed-precision recipe, fp32 master weights and moments updated by
      AdamW(fused=True) from the bf16 gradient widened to fp32, then the bf16 model copy written
      from the master: three launches, 4 + 2 + ... bytes (counted in ``master_bytes``).
    """
    n = 1 << log2
    reps = timer.reps_large
    out = {"log2": log2, "elements": n, "fused_bf16_bytes": 14 * n,
           # widen g (2 read + 4 written), AdamW on fp32 (28), copy to bf16 (4 read + 2 written)
           "master_bytes": (6 + 28 + 6) * n}
    p = torch.nn.Parameter(torch.empty(n, dtype=torch.bfloat16, device=timer.device).uniform_(-0.3, 0.3))
    p.grad = torch.empty_like(p).uniform_(-1.0, 1.0)
    try:
        opt = torch.optim.AdamW([p], lr=SINGLE_LR, weight_decay=SINGLE_WD, fused=True)
        for _ in range(3):
            opt.step()
        out["fused_bf16_cold_us"] = attempt(
            f"bf16 2^{log2} fused cold", lambda: timer.device_us(opt.step, cold=True, reps=reps))
    except Exception as exc:  # noqa: BLE001
        out["fused_bf16_cold_us"] = error_record(exc)
    opt = None
    torch.cuda.empty_cache()
    try:
        master = torch.nn.Parameter(p.detach().float())
        master.grad = torch.empty_like(master)
        opt = torch.optim.AdamW([master], lr=SINGLE_LR, weight_decay=SINGLE_WD, fused=True)

        def step():
            master.grad.copy_(p.grad)
            opt.step()
            p.data.copy_(master.data)

        for _ in range(3):
            step()
        out["master_cold_us"] = attempt(
            f"bf16 2^{log2} master recipe cold", lambda: timer.device_us(step, cold=True, reps=reps))
    except Exception as exc:  # noqa: BLE001
        out["master_cold_us"] = error_record(exc)
    opt = master = p = None
    torch.cuda.empty_cache()
    return out


def bench_check(timer, slots):
    """The 49-slot check: PyTorch's nearest single op is _foreach_norm(inf) (max |x| per tensor,
    NaN-propagating), eager and in a graph."""
    tensors = [torch.randn(n, dtype=torch.float32, device=timer.device) for n in slots]
    elements = sum(slots)
    out = {"slots": len(slots), "elements": elements, "bytes": CHECK_BYTES * elements}
    norms = lambda: torch._foreach_norm(tensors, float("inf"))  # noqa: E731
    out["foreach_norm_inf_eager_us"] = attempt("check foreach_norm(inf) eager", lambda: timer.host_us(norms))
    try:
        kept = []  # the graph's outputs live in its pool; holding them mirrors real use
        graph = capture_graph(lambda: kept.append(norms()))
        out["foreach_norm_inf_graph_us"] = attempt(
            "check foreach_norm(inf) graph", lambda: timer.device_us(graph.replay))
    except Exception as exc:  # noqa: BLE001
        out["foreach_norm_inf_graph_us"] = error_record(exc)
        print(f"  check graph: {out['foreach_norm_inf_graph_us']['error']}", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for bench_torch.json")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 10 repetitions, sizes up to 2^24 (not for the report)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_bench.py: no CUDA device")
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "bench_torch.json")

    reps, reps_large, warmup = (10, 10, 2) if args.quick else (100, 50, 5)
    max_log2, copy_log2 = (24, 24) if args.quick else (30, 28)
    t_start = time.perf_counter()
    timer = Timer(reps, reps_large, warmup)
    props = torch.cuda.get_device_properties(0)
    result = {
        "device": torch.cuda.get_device_name(0),
        "sms": props.multi_processor_count,
        "l2_bytes": getattr(props, "L2_cache_size", None),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "date": now_utc(),
        "quick": args.quick,
        "method": {
            "warmup": warmup, "reps": reps, "reps_ge_2^28": reps_large, "statistic": "median",
            "l2_flush_bytes": FLUSH_BYTES,
            "device_time": "spin kernel before the start event; cold = L2 flushed by zeroing the "
                           "flush buffer before each rep, outside the events",
            "host_time": "GPU synchronized (idle) before each rep; includes issuing the launches",
            "spin_cycles_per_us": timer.cycles_per_us,
        },
    }

    def save():
        # Written after every section so a crash late in the run keeps what was measured.
        result["method"].update(final_sleep_us=timer.sleep_us, dropped_samples=timer.retries,
                                exposed_samples=timer.exposed,
                                seconds=round(time.perf_counter() - t_start, 1))
        with open(path, "w") as f:
            json.dump(result, f, indent=1)

    print(f"torch_bench: {result['device']}, torch {torch.__version__}, reps {reps}, "
          f"spin {timer.cycles_per_us and round(timer.cycles_per_us)} cycles/µs", flush=True)
    rl_spec = load_rl_set()

    result["copy"] = bench_copy(timer, copy_log2)
    save()
    result["adam_sizes"] = []
    for log2 in range(10, max_log2 + 1, 2):
        try:
            result["adam_sizes"].append(bench_adam_size(timer, log2))
        except Exception as exc:  # noqa: BLE001 - e.g. out of memory at 2^30: keep the rest
            result["adam_sizes"].append(dict({"log2": log2, "elements": 1 << log2}, **error_record(exc)))
            torch.cuda.empty_cache()
        save()
    try:
        result["rl_set"] = bench_rl_set(timer, rl_spec)
    except Exception as exc:  # noqa: BLE001
        result["rl_set"] = error_record(exc)
    save()
    try:
        result["four_groups"] = bench_four_groups(timer)
    except Exception as exc:  # noqa: BLE001
        result["four_groups"] = error_record(exc)
    save()
    try:
        result["half"] = bench_half(timer, 28 if not args.quick else 24)
    except Exception as exc:  # noqa: BLE001
        result["half"] = error_record(exc)
    save()
    try:
        result["check"] = bench_check(timer, rl_spec["check_slots"])
    except Exception as exc:  # noqa: BLE001
        result["check"] = error_record(exc)
    save()
    print(f"wrote {path} in {time.perf_counter() - t_start:.0f} s "
          f"(spin {timer.sleep_us:.0f} µs, {timer.retries} samples redone, {timer.exposed} exposed)")


if __name__ == "__main__":
    main()
