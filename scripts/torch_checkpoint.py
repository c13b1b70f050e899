#!/usr/bin/env python3
"""adamant checkpoints from Python, and PyTorch optimizer state to and from them (issue 27).

An adamant checkpoint is a safetensors file (docs/checkpoints.md has the whole format):
  * tensors named as the user names them: `<tensor>` (the parameters), `<tensor>.exp_avg`,
    `<tensor>.exp_avg_sq`, `<tensor>.max_exp_avg_sq` (PyTorch's state names), a 16-bit
    weight's companion `<tensor>.master` / `<tensor>.remainder`, and `adamant.records`
    (the step records, u32 words, only in files adamant writes);
  * string metadata: `adamant.format` = "adamant-checkpoint/2", `<tensor>.kernel`,
    `<tensor>.step`, and `adamant.checksum`: SHA-256 over every tensor (name, type, shape, and
    the SHA-256 of each 16 MiB piece of its bytes, in name order) and every other metadata entry
    (in key order), each length-prefixed. Files of format 1 (which hashed the bytes themselves)
    are still read.

The file layer (read, write, checksum) is plain Python with no dependency, so it runs anywhere:

    python3 scripts/torch_checkpoint.py list FILE          # check a file, list its contents
    python3 scripts/torch_checkpoint.py copy FILE OUT      # read, check, write again (a test)

With PyTorch, `from_torch(named_params, optimizer, path, kernel)` writes a `torch.optim.Adam` or
`AdamW` state as a checkpoint adamant resumes from (its `Checkpoint::steps_taken` gives the step
count for `StepSpec::steps_taken`), and `to_torch(path, named_params, optimizer)` loads an adamant
checkpoint into a PyTorch model and optimizer. `mlp-demo` is the GPU test's PyTorch side (see
tests/gpu/resume.rs).
"""
import argparse
import hashlib
import json
import os
import struct
import sys

FORMAT = "adamant-checkpoint/2"
FORMAT_1 = "adamant-checkpoint/1"
# Bytes per piece of a tensor's data that the format 2 checksum hashes on its own.
PIECE_BYTES = 1 << 24
FORMAT_KEY = "adamant.format"
CHECKSUM_KEY = "adamant.checksum"

# safetensors element types an adamant checkpoint uses, with their sizes.
DTYPE_BYTES = {"F32": 4, "BF16": 2, "F16": 2, "U16": 2, "U32": 4}

# torch.optim.Adam's state names; adamant names a state buffer the same where it keeps the same.
STATE_NAMES = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")


class CheckpointError(Exception):
    """A file that is no readable adamant checkpoint of this format, naming what is wrong."""


def checksum(tensors, metadata, pieces=True):
    """The checksum adamant writes: tensors {name: (dtype, shape, bytes)}, metadata {key: value}.
    Each tensor's bytes go in as the digests of their pieces (format 2), or whole (`pieces=False`,
    format 1)."""
    h = hashlib.sha256()
    u64 = lambda n: struct.pack("<Q", n)
    for name in sorted(tensors, key=lambda s: s.encode()):
        dtype, shape, data = tensors[name]
        h.update(u64(len(name.encode())) + name.encode() + dtype.encode())
        h.update(u64(len(shape)) + b"".join(u64(d) for d in shape))
        h.update(u64(len(data)))
        if pieces:
            view = memoryview(data)
            for at in range(0, len(data), PIECE_BYTES):
                h.update(hashlib.sha256(view[at : at + PIECE_BYTES]).digest())
        else:
            h.update(data)
    for key in sorted(metadata, key=lambda s: s.encode()):
        if key == CHECKSUM_KEY:
            continue
        value = metadata[key]
        h.update(u64(len(key.encode())) + key.encode() + u64(len(value.encode())) + value.encode())
    return h.hexdigest()


def write(path, tensors, metadata):
    """Writes tensors {name: (dtype, shape, bytes)} and metadata as an adamant checkpoint, through
    a temporary file in the same folder that is synced and renamed over `path`."""
    for name, (dtype, shape, data) in tensors.items():
        count = 1
        for d in shape:
            count *= d
        if dtype not in DTYPE_BYTES or len(data) != count * DTYPE_BYTES[dtype]:
            raise CheckpointError(f"tensor `{name}`: {len(data)} bytes for {dtype} {shape}")
    meta = dict(metadata)
    meta[FORMAT_KEY] = FORMAT
    meta.pop(CHECKSUM_KEY, None)
    meta[CHECKSUM_KEY] = checksum(tensors, meta)
    header = {"__metadata__": meta}
    offset = 0
    names = sorted(tensors, key=lambda s: s.encode())
    for name in names:
        dtype, shape, data = tensors[name]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    tmp = os.path.join(os.path.dirname(os.path.abspath(path)), f".{os.path.basename(path)}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(head)) + head)
            for name in names:
                f.write(tensors[name][2])
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def read(path):
    """(tensors, metadata) of the adamant checkpoint at `path`, checked: whole, of this format,
    its checksum the one of what was read."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise CheckpointError(f"{path}: {len(raw)} bytes, no safetensors header")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise CheckpointError(f"{path}: the header runs past the end (truncated)")
    try:
        header = json.loads(raw[8 : 8 + n].decode("utf-8"))
    except ValueError as e:
        raise CheckpointError(f"{path}: unreadable header ({e})")
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: the header is no JSON object")
    metadata = header.pop("__metadata__", {}) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise CheckpointError(f"{path}: metadata that is not strings")
    if metadata.get(FORMAT_KEY) not in (FORMAT, FORMAT_1):
        raise CheckpointError(
            f"{path}: format {metadata.get(FORMAT_KEY)!r}, this reads {FORMAT!r} and {FORMAT_1!r}"
        )
    body = raw[8 + n :]
    tensors = {}
    spans = []
    for name, t in header.items():
        try:
            start, end = t["data_offsets"]
            dtype, shape = t["dtype"], tuple(int(d) for d in t["shape"])
        except (KeyError, TypeError, ValueError):
            raise CheckpointError(f"{path}: tensor `{name}` has no dtype, shape and offsets")
        if dtype not in DTYPE_BYTES:
            raise CheckpointError(f"{path}: tensor `{name}` is {dtype}, no type of a state")
        if end > len(body):
            raise CheckpointError(f"{path}: tensor `{name}` runs past the end (truncated)")
        count = 1
        for d in shape:
            count *= d
        if not (0 <= start <= end) or end - start != count * DTYPE_BYTES[dtype]:
            raise CheckpointError(f"{path}: tensor `{name}`: offsets {start}..{end} for {dtype} {list(shape)}")
        spans.append((start, end, name))
        tensors[name] = (dtype, shape, body[start:end])
    # The tensors tile the data exactly, as safetensors requires: no gap, no overlap, nothing
    # after the last (bytes no tensor owns are damage, not padding).
    at = 0
    for start, end, name in sorted(spans):
        if start != at:
            raise CheckpointError(f"{path}: tensor `{name}` starts at {start}, the data before it ends at {at}")
        at = end
    if at != len(body):
        raise CheckpointError(f"{path}: {len(body) - at} bytes after the last tensor (damaged or truncated)")
    computed = checksum(tensors, metadata, pieces=metadata[FORMAT_KEY] == FORMAT)
    if metadata.get(CHECKSUM_KEY) != computed:
        raise CheckpointError(f"{path}: checksum mismatch: the file was changed or damaged after it was written")
    return tensors, metadata


# ---- PyTorch -------------------------------------------------------------------------------


def _torch_dtype_name(t):
    import torch

    names = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}
    if t.dtype not in names:
        raise CheckpointError(f"a {t.dtype} tensor: adamant keeps f32, bf16 and f16")
    return names[t.dtype]


def _tensor_bytes(t):
    import torch

    flat = t.detach().contiguous().reshape(-1).cpu()
    if flat.dtype == torch.float32:
        return flat.view(torch.int32).numpy().astype("<i4").tobytes()
    return flat.view(torch.int16).numpy().astype("<i2").tobytes()


def _from_bytes(dtype, data, like):
    import torch

    if dtype == "F32":
        t = torch.frombuffer(bytearray(data), dtype=torch.int32).view(torch.float32)
    elif dtype in ("BF16", "F16"):
        t = torch.frombuffer(bytearray(data), dtype=torch.int16).view(
            torch.bfloat16 if dtype == "BF16" else torch.float16
        )
    else:
        raise CheckpointError(f"a {dtype} tensor has no PyTorch counterpart")
    return t.reshape(like.shape).to(like.device)


def from_torch(named_params, optimizer, path, kernel):
    """Writes the state of `optimizer` (torch.optim.Adam or AdamW) for `named_params` (an
    iterable of (name, parameter), as model.named_parameters()) as an adamant checkpoint of
    kernel `kernel` (the adamant kernel that will resume it, e.g. attn_adam_kernel for AdamW).
    Every parameter is flattened (adamant tensors are 1-D)."""
    tensors, metadata = {}, {}
    for name, p in named_params:
        state = optimizer.state.get(p, {})
        tensors[name] = (_torch_dtype_name(p), (p.numel(),), _tensor_bytes(p))
        for key in STATE_NAMES:
            if key in state:
                s = state[key]
                tensors[f"{name}.{key}"] = (_torch_dtype_name(s), (s.numel(),), _tensor_bytes(s))
        metadata[f"{name}.kernel"] = kernel
        metadata[f"{name}.step"] = str(int(state["step"])) if "step" in state else "0"
        group = next(g for g in optimizer.param_groups if any(q is p for q in g["params"]))
        for k in ("lr", "eps", "weight_decay"):
            metadata[f"{name}.torch.{k}"] = repr(float(group[k]))
        metadata[f"{name}.torch.betas"] = repr(tuple(float(b) for b in group["betas"]))
    write(path, tensors, metadata)


def to_torch(path, named_params, optimizer):
    """Loads the adamant checkpoint at `path` into `named_params` and the state of `optimizer`
    (torch.optim.Adam or AdamW): the parameters, exp_avg, exp_avg_sq (and max_exp_avg_sq),
    and `step`. A 16-bit weight's remainder or master is not PyTorch's and is left out."""
    import torch

    tensors, metadata = read(path)
    with torch.no_grad():
        for name, p in named_params:
            if name not in tensors:
                raise CheckpointError(f"{path}: tensor `{name}` is missing")
            dtype, shape, data = tensors[name]
            if shape != (p.numel(),):
                raise CheckpointError(f"{path}: tensor `{name}` has shape {shape}, the model {p.numel()}")
            p.copy_(_from_bytes(dtype, data, p))
            state = {}
            for key in STATE_NAMES:
                if f"{name}.{key}" in tensors:
                    d, _, b = tensors[f"{name}.{key}"]
                    state[key] = _from_bytes(d, b, p).clone()
            step = float(metadata.get(f"{name}.step", "0"))
            fused = any(g.get("fused") or g.get("capturable") for g in optimizer.param_groups)
            state["step"] = torch.tensor(step, dtype=torch.float32, device=p.device if fused else "cpu")
            optimizer.state[p] = state


# ---- The GPU test's PyTorch side -----------------------------------------------------------

IN, HIDDEN, SAMPLES = 16, 48, 512
PARAMS = HIDDEN * IN + 2 * HIDDEN + 1  # W1, b1, W2, b2: tests/support/mlp.rs


def _f32(x):
    """`x` rounded to the nearest f32 (each step of `mlp_init` rounds as the Rust test's f32
    arithmetic does: an f64 result of f32 operands, rounded once, is the f32 result)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def mlp_init():
    six = _f32(0.6)
    return [
        _f32(_f32(_f32((i * 2654435761 % 10007) / 10007.0) - 0.5) * six) for i in range(PARAMS)
    ]


def mlp_data(torch):
    xs, ys = [], []
    for s in range(SAMPLES):
        x = [(((s * 31 + j * 17) % 211) / 211.0 - 0.5) * 2.0 for j in range(IN)]
        import math

        smooth = math.sin(0.3 * sum(x)) + 0.5 * x[0] * x[1]
        noise = ((s * 7919 % 1009) / 1009.0 - 0.5) * 0.4
        xs.append(x)
        ys.append(smooth + noise)
    return torch.tensor(xs, dtype=torch.float64), torch.tensor(ys, dtype=torch.float64)


def mlp_loss(torch, w, x, y):
    """tests/support/mlp.rs's loss, in f64, of the f32 weights `w` (flat)."""
    w = w.double()
    w1 = w[: HIDDEN * IN].reshape(HIDDEN, IN)
    b1 = w[HIDDEN * IN : HIDDEN * IN + HIDDEN]
    w2 = w[HIDDEN * IN + HIDDEN : HIDDEN * IN + 2 * HIDDEN]
    b2 = w[HIDDEN * IN + 2 * HIDDEN]
    h = torch.tanh(x @ w1.T + b1)
    err = h @ w2 + b2 - y
    return (err * err).mean()


def mlp_demo(args):
    """AdamW on the MLP in PyTorch: saves its state at `--save-at` as an adamant checkpoint,
    continues to `--steps`; with `--resume FILE` also continues an adamant checkpoint in PyTorch.
    Writes the losses as JSON."""
    import torch

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    x, y = mlp_data(torch)
    x, y = x.to(dev), y.to(dev)

    def run(w, opt, first, last, save=None):
        losses = []
        for step in range(first, last):
            if save is not None and step == args.save_at:
                from_torch([("mlp", w)], opt, save, "attn_adam_kernel")
            wd = w.detach().clone().requires_grad_(True)
            loss = mlp_loss(torch, wd, x, y)
            loss.backward()
            w.grad = wd.grad.float()
            losses.append(loss.item())
            opt.step()
        return losses

    def adamw(w):
        return torch.optim.AdamW([w], lr=args.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=args.wd)

    out = {}
    w = torch.nn.Parameter(torch.tensor(mlp_init(), dtype=torch.float32, device=dev))
    opt = adamw(w)
    out["torch"] = run(w, opt, 0, args.steps, save=args.save)
    if args.resume:
        w = torch.nn.Parameter(torch.zeros(PARAMS, dtype=torch.float32, device=dev))
        opt = adamw(w)
        to_torch(args.resume, [("mlp", w)], opt)
        out["adamant_in_torch"] = run(w, opt, args.save_at, args.steps)
    with open(args.out, "w") as f:
        json.dump(out, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("list").add_argument("file")
    c = sub.add_parser("copy")
    c.add_argument("file")
    c.add_argument("out")
    d = sub.add_parser("mlp-demo")
    d.add_argument("--steps", type=int, default=1500)
    d.add_argument("--save-at", type=int, default=700)
    d.add_argument("--lr", type=float, default=3e-3)
    d.add_argument("--wd", type=float, default=0.01)
    d.add_argument("--save", help="where to write PyTorch's state at --save-at")
    d.add_argument("--resume", help="an adamant checkpoint to continue in PyTorch")
    d.add_argument("--out", required=True)
    args = ap.parse_args()
    try:
        if args.command == "list":
            tensors, metadata = read(args.file)
            for name in sorted(tensors, key=lambda s: s.encode()):
                dtype, shape, _ = tensors[name]
                print(f"tensor {name} {dtype} {list(shape)}")
            for key in sorted(metadata, key=lambda s: s.encode()):
                print(f"meta {key} = {metadata[key]}")
        elif args.command == "copy":
            tensors, metadata = read(args.file)
            write(args.out, tensors, metadata)
        else:
            mlp_demo(args)
    except CheckpointError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
