#!/usr/bin/env python3
"""What the GPU's memory delivers for adamant's stream mixes, with no arithmetic at all.

An independent floor for the bandwidth goals of issues 25 and 26: CUDA C kernels (CuPy's NVRTC,
not adamant's code) that move exactly the bytes an optimizer step moves, in the same streams,
and do nothing else. Where such a kernel is no faster than adamant's, the gap to the copy
bandwidth belongs to the memory, not to adamant's kernels.

- copies: `cudaMemcpy` device to device, and a kernel with one stream read and one written.
- `adam_f32`: Adam's mix, four f32 streams read (p, g, m, v) and three written (p, m, v): 28 B
  an element; also with `m` and `v` interleaved in one buffer (three streams read, two written).
- `adam_bf16`: the 14 B path's mix, four 16-bit streams read and three written.
- `rl_set`: the RL set's tensors (`bench/rl_set.json`) in one launch over chunks of `N`
  elements, one block per chunk or a capped grid taking chunks in turn, each tensor's streams as
  its rule moves them (AMSGrad's five read and four written, Adam's four and three); and the
  AdamW set of `examples/bench --only rl_bf16` (four streams for every tensor) in f32 and in
  16 bits.
- Each thread has 1, 2 or 4 groups of four elements in flight (all loaded before any is stored).

Cold: the L2 is overwritten before each repetition; hot: launches back to back (the RL set's
158 MB is three times the L2 either way). Medians of device time (CUDA events).
Run on the GPU machine: `python3 bench/traffic_floor.py --out traffic.json`.
"""
import argparse
import json
import math
import os
import statistics

import cupy as cp

SOURCE = r"""
struct Chunk { unsigned tensor, start, len, pad; };
struct Streams { float *p; const float *g; float *m; float *v; float *w; };

__device__ __forceinline__ void bump(float4 &x, const float4 &g) {
  x.x += g.x; x.y += g.y; x.z += g.z; x.w += g.w;
}

// Each thread moves U groups a trip, all loaded before any is stored (U groups in flight).
template <int U> __device__ void copy_u(const float4 *a, float4 *b, size_t n4) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += U * stride) {
    float4 x[U];
#pragma unroll
    for (int u = 0; u < U; u++) if (i + u * stride < n4) x[u] = a[i + u * stride];
#pragma unroll
    for (int u = 0; u < U; u++) if (i + u * stride < n4) b[i + u * stride] = x[u];
  }
}

template <int U>
__device__ void adam_u(float4 *p, const float4 *g, float4 *m, float4 *v, size_t n4) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += U * stride) {
    float4 gi[U], pi[U], mi[U], vi[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
      size_t j = i + u * stride;
      if (j < n4) { gi[u] = g[j]; pi[u] = p[j]; mi[u] = m[j]; vi[u] = v[j]; }
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
      size_t j = i + u * stride;
      if (j < n4) {
        bump(pi[u], gi[u]); bump(mi[u], gi[u]); bump(vi[u], gi[u]);
        p[j] = pi[u]; m[j] = mi[u]; v[j] = vi[u];
      }
    }
  }
}

extern "C" __global__ void copy1(const float4 *a, float4 *b, size_t n4) { copy_u<1>(a, b, n4); }
extern "C" __global__ void copy4(const float4 *a, float4 *b, size_t n4) { copy_u<4>(a, b, n4); }
extern "C" __global__ void adam_f32_1(float4 *p, const float4 *g, float4 *m, float4 *v, size_t n4) {
  adam_u<1>(p, g, m, v, n4);
}
extern "C" __global__ void adam_f32_2(float4 *p, const float4 *g, float4 *m, float4 *v, size_t n4) {
  adam_u<2>(p, g, m, v, n4);
}
extern "C" __global__ void adam_f32_4(float4 *p, const float4 *g, float4 *m, float4 *v, size_t n4) {
  adam_u<4>(p, g, m, v, n4);
}

// m and v of four elements side by side: 32 contiguous bytes a group.
extern "C" __global__ void adam_f32_mv(float4 *p, const float4 *g, float4 *mv, size_t n4) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4;
       i += (size_t)gridDim.x * blockDim.x) {
    float4 gi = g[i], pi = p[i], mi = mv[2 * i], vi = mv[2 * i + 1];
    bump(pi, gi); bump(mi, gi); bump(vi, gi);
    p[i] = pi; mv[2 * i] = mi; mv[2 * i + 1] = vi;
  }
}

// Four 16-bit values a group, moved as one 8-byte word per stream.
extern "C" __global__ void adam_bf16(uint2 *p, const uint2 *g, uint2 *m, uint2 *v, size_t n4) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4;
       i += (size_t)gridDim.x * blockDim.x) {
    uint2 gi = g[i], pi = p[i], mi = m[i], vi = v[i];
    pi.x ^= gi.x; pi.y ^= gi.y; mi.x ^= gi.x; mi.y ^= gi.y; vi.x ^= gi.x; vi.y ^= gi.y;
    p[i] = pi; m[i] = mi; v[i] = vi;
  }
}

// One block per chunk (or fewer blocks taking chunks in turn), U groups a thread in flight; a
// tensor's fifth stream (w) is AMSGrad's running maximum, null for Adam.
template <int U> __device__ void chunks_u(const Chunk *c, unsigned n, const Streams *t) {
  for (unsigned k = blockIdx.x; k < n; k += gridDim.x) {
    Chunk ch = c[k];
    Streams s = t[ch.tensor];
    unsigned end = ch.start + ch.len, stride = blockDim.x * 4;
    for (unsigned i = ch.start + threadIdx.x * 4; i < end; i += U * stride) {
      float4 gi[U], pi[U], mi[U], vi[U], wi[U];
#pragma unroll
      for (int u = 0; u < U; u++) {
        unsigned j = i + u * stride;
        if (j < end) {
          gi[u] = *(const float4 *)(s.g + j); pi[u] = *(float4 *)(s.p + j);
          mi[u] = *(float4 *)(s.m + j); vi[u] = *(float4 *)(s.v + j);
          if (s.w) wi[u] = *(float4 *)(s.w + j);
        }
      }
#pragma unroll
      for (int u = 0; u < U; u++) {
        unsigned j = i + u * stride;
        if (j < end) {
          if (s.w) { bump(wi[u], gi[u]); *(float4 *)(s.w + j) = wi[u]; }
          bump(pi[u], gi[u]); bump(mi[u], gi[u]); bump(vi[u], gi[u]);
          *(float4 *)(s.p + j) = pi[u]; *(float4 *)(s.m + j) = mi[u]; *(float4 *)(s.v + j) = vi[u];
        }
      }
    }
  }
}
// The same with 16-bit streams (p, g, m, v), four values an 8-byte word: the 14 B path's mix.
struct Streams16 { uint2 *p; const uint2 *g; uint2 *m; uint2 *v; void *unused; };
__device__ __forceinline__ void flip(uint2 &x, const uint2 &g) { x.x ^= g.x; x.y ^= g.y; }
template <int U> __device__ void chunks16_u(const Chunk *c, unsigned n, const Streams16 *t) {
  for (unsigned k = blockIdx.x; k < n; k += gridDim.x) {
    Chunk ch = c[k];
    Streams16 s = t[ch.tensor];
    unsigned end = (ch.start + ch.len) / 4, stride = blockDim.x;
    for (unsigned i = ch.start / 4 + threadIdx.x; i < end; i += U * stride) {
      uint2 gi[U], pi[U], mi[U], vi[U];
#pragma unroll
      for (int u = 0; u < U; u++) {
        unsigned j = i + u * stride;
        if (j < end) { gi[u] = s.g[j]; pi[u] = s.p[j]; mi[u] = s.m[j]; vi[u] = s.v[j]; }
      }
#pragma unroll
      for (int u = 0; u < U; u++) {
        unsigned j = i + u * stride;
        if (j < end) {
          flip(pi[u], gi[u]); flip(mi[u], gi[u]); flip(vi[u], gi[u]);
          s.p[j] = pi[u]; s.m[j] = mi[u]; s.v[j] = vi[u];
        }
      }
    }
  }
}
extern "C" __global__ void chunks16_1(const Chunk *c, unsigned n, const Streams16 *t) { chunks16_u<1>(c, n, t); }
extern "C" __global__ void chunks16_2(const Chunk *c, unsigned n, const Streams16 *t) { chunks16_u<2>(c, n, t); }
extern "C" __global__ void chunks16_4(const Chunk *c, unsigned n, const Streams16 *t) { chunks16_u<4>(c, n, t); }
extern "C" __global__ void chunks1(const Chunk *c, unsigned n, const Streams *t) { chunks_u<1>(c, n, t); }
extern "C" __global__ void chunks2(const Chunk *c, unsigned n, const Streams *t) { chunks_u<2>(c, n, t); }
extern "C" __global__ void chunks4(const Chunk *c, unsigned n, const Streams *t) { chunks_u<4>(c, n, t); }
"""

MODULE = cp.RawModule(code=SOURCE, options=("-std=c++17",))
THREADS = 256


def timed(launch, reps, flush):
    """Median device time of `launch` in µs after 3 warm-ups. With `flush`, the L2 is overwritten
    before each repetition by a memset of 256 MiB outside the events (as `examples/bench` does);
    without, launches follow each other (the previous one's writes still in the L2)."""
    stream = cp.cuda.get_current_stream()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(3):
        launch()
    times = []
    for _ in range(reps):
        stream.synchronize()
        if flush is not None:
            cp.cuda.runtime.memsetAsync(flush.data.ptr, 0x3F, flush.nbytes, stream.ptr)
        start.record()
        launch()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    return statistics.median(times)


def waves_grid(n_groups, per_sm=8):
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    return min(max(1, math.ceil(n_groups / THREADS)), sms * per_sm)


def single(n, reps, flush):
    """The single-buffer mixes at `n` elements (a multiple of 16)."""
    n4 = cp.uint64(n // 4)
    grid = (waves_grid(n // 4),)
    f = lambda: cp.ones(n, dtype=cp.float32)  # noqa: E731
    p, g, m, v = f(), f(), f(), f()
    out = {}

    def record(mix, groups, detail, bytes_per_element, launch):
        """One timed mix; the report selects by these fields, the key is for people."""
        us = timed(launch, reps, flush)
        key = f"{mix}, " + (detail or f"{groups} group{'s' if groups > 1 else ''} a thread")
        out[key] = {"mix": mix, "groups": groups, "detail": detail, "us": us,
                    "bytes_per_element": bytes_per_element,
                    "gb_s": n * bytes_per_element / us / 1e3}

    def run(mix, groups, detail, bytes_per_element, kernel, args):
        k = MODULE.get_function(kernel)
        record(mix, groups, detail, bytes_per_element, lambda: k(grid, (THREADS,), args))

    record("copy", None, "cudaMemcpy", 8,
           lambda: cp.cuda.runtime.memcpyAsync(m.data.ptr, p.data.ptr, p.nbytes, 3,
                                               cp.cuda.get_current_stream().ptr))
    for u in (1, 4):
        run("copy", u, None, 8, f"copy{u}", (p, m, n4))
    for u in (1, 2, 4):
        run("adam_f32", u, None, 28, f"adam_f32_{u}", (p, g, m, v, n4))
    mv = cp.ones(2 * n, dtype=cp.float32)
    run("adam_f32", 1, "m and v interleaved", 28, "adam_f32_mv", (p, g, mv, n4))
    del mv, p, g, m, v
    h = lambda: cp.ones(n, dtype=cp.uint16)  # noqa: E731
    hp, hg, hm, hv = h(), h(), h(), h()
    run("adam_bf16", 1, None, 14, "adam_bf16", (hp, hg, hm, hv, n4))
    return out


class RlSet:
    """The RL set's tensors (`bench/rl_set.json`), each with its rule's streams."""

    def __init__(self, path, mix="rules"):
        """`mix`: "rules" (each model's rule: AMSGrad's five streams for curiosity, Adam's four
        for the rest, f32), "f32" (AdamW's four for every tensor, as `examples/bench --only
        rl_bf16` sets it up) or "bf16" (the same four streams in 16 bits: the 14 B path)."""
        spec = json.load(open(path))
        self.mix = mix
        self.buffers, self.tensors, self.bytes = [], [], 0
        self.kernel = "chunks16_" if mix == "bf16" else "chunks"
        dtype = cp.uint16 if mix == "bf16" else cp.float32
        for model in spec["models"]:
            amsgrad = mix == "rules" and model["kernel"] == "curiosity_adam_step"
            for t in model["tensors"]:
                n = math.prod(t["shape"])
                padded = -(-n // 4) * 4
                streams = [cp.ones(padded, dtype=dtype) for _ in range(5 if amsgrad else 4)]
                self.buffers.extend(streams)
                self.tensors.append(([s.data.ptr for s in streams] + [0])[:5] + [padded])
                per = 14 if mix == "bf16" else (36 if amsgrad else 28)
                self.bytes += n * per
        self.table = cp.asarray([t[:5] for t in self.tensors], dtype=cp.uint64)

    def time(self, chunk, blocks_per_sm, groups, reps, flush):
        """One launch over chunks of `chunk` elements, `groups` groups of four a thread in
        flight; cold (the L2 overwritten before each repetition) with a `flush` buffer."""
        rows = [
            [k, start, min(chunk, t[5] - start), 0]
            for k, t in enumerate(self.tensors)
            for start in range(0, t[5], chunk)
        ]
        chunks = cp.asarray(rows, dtype=cp.uint32)
        sms = cp.cuda.Device().attributes["MultiProcessorCount"]
        grid = len(rows) if blocks_per_sm is None else min(len(rows), sms * blocks_per_sm)
        k = MODULE.get_function(f"{self.kernel}{groups}")
        us = timed(
            lambda: k((grid,), (THREADS,), (chunks, cp.uint32(len(rows)), self.table)),
            reps,
            flush,
        )
        # The shape's fields are what the report selects by; `key` names it for people.
        return {"mix": self.mix, "chunk": chunk, "blocks_per_sm": blocks_per_sm,
                "groups": groups, "cold": flush is not None, "us": us, "chunks": len(rows),
                "grid": grid, "bytes": self.bytes, "gb_s": self.bytes / us / 1e3}

    @staticmethod
    def key(r):
        """A run's name: its set, chunks, grid, groups in flight and temperature."""
        return ("" if r["mix"] == "rules" else f"AdamW set in {r['mix']}, ") + (
            f"chunks of {r['chunk']}, "
            + ("one block a chunk" if r["blocks_per_sm"] is None
               else f"{r['blocks_per_sm']} blocks an SM")
            + f", {r['groups']} group{'s' if r['groups'] > 1 else ''} a thread"
            + (", cold" if r["cold"] else ", hot"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--set", default=os.path.join(os.path.dirname(__file__), "rl_set.json"))
    ap.add_argument("--log2", type=int, default=28)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--single-only", action="store_true",
                    help="only the single buffers (for a profiler: with --reps 1)")
    ap.add_argument("--rl-shape", metavar="MIX:CHUNK:BLOCKS_PER_SM:GROUPS",
                    help="only this RL-set shape, hot (for a profiler: with --reps 1; "
                    "BLOCKS_PER_SM 0 = one block a chunk), e.g. rules:2048:0:2")
    args = ap.parse_args()
    if args.rl_shape:
        mix, chunk, bps, groups = args.rl_shape.split(":")
        r = RlSet(args.set, mix).time(int(chunk), int(bps) or None, int(groups), args.reps, None)
        print(f"RL set, {RlSet.key(r)}: {r['us']:.1f} µs ({r['grid']} blocks)")
        json.dump({"rl_shape": r}, open(args.out, "w"), indent=1)
        return
    flush = cp.empty(256 << 20, dtype=cp.uint8)
    dev = cp.cuda.Device()
    name = cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode()
    size = f"2^{args.log2}"
    result = {"device": name, "single": {}, "rl_set": {}}
    result["single"][size + " cold"] = single(1 << args.log2, args.reps, flush)
    for mix in () if args.single_only else ("f32", "bf16"):
        rl = RlSet(args.set, mix)
        for chunk in (4096, 8192, 16384):
            for groups in (1, 2, 4):
                r = rl.time(chunk, None, groups, 100, None)
                result["rl_set"][RlSet.key(r)] = r
        del rl
    rl = None if args.single_only else RlSet(args.set)
    for chunk in () if args.single_only else (2048, 4096, 8192, 16384):
        for bps in (None, 3, 4):
            for groups in (1, 2, 4):
                for cold in (True, False):
                    r = rl.time(chunk, bps, groups, 100, flush if cold else None)
                    result["rl_set"][RlSet.key(r)] = r
    json.dump(result, open(args.out, "w"), indent=1)
    print(name)
    single_runs = result["single"][size + " cold"]
    copy = max(r["gb_s"] for r in single_runs.values() if r["mix"] == "copy")
    for k, r in single_runs.items():
        print(f"{size} cold, {k}: {r['us']:.1f} µs, {r['gb_s']:.0f} GB/s, "
              f"{r['gb_s'] / copy:.3f}× the fastest copy")
    for k, r in sorted(result["rl_set"].items(), key=lambda kv: (kv[0][:18], kv[1]["us"])):
        print(f"RL set, {k}: {r['us']:.1f} µs ({r['grid']} blocks), {r['gb_s']:.0f} GB/s, "
              f"{r['gb_s'] / copy:.3f}× the fastest copy")


if __name__ == "__main__":
    main()
