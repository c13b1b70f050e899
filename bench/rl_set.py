"""Writes rl_set.json: the realistic RL parameter set the benchmarks use (100 fp32 tensors,
about 5.2 M elements), one entry per model with the optimizer kernel that updates it. Layer sizes
follow the seed's architecture: DQN trunk and distributional heads, an IQN head, IQL critics,
attention and TLOB blocks, a curiosity model and a decision transformer.
Both bench/torch_bench.py and examples/bench.rs read the JSON, so the shapes have one source."""
import json, math, os

def linear(prefix, i, o):
    return [(f"{prefix}.weight", [o, i]), (f"{prefix}.bias", [o])]

def mlp(prefix, dims):
    out = []
    for k, (i, o) in enumerate(zip(dims, dims[1:])):
        out += linear(f"{prefix}.{k}", i, o)
    return out

def block(prefix, d, ff):
    t = []
    for n in ["q", "k", "v", "o"]:
        t += linear(f"{prefix}.{n}", d, d)
    t += [(f"{prefix}.ln1.weight", [d]), (f"{prefix}.ln1.bias", [d])]
    t += linear(f"{prefix}.ff1", d, ff) + linear(f"{prefix}.ff2", ff, d)
    t += [(f"{prefix}.ln2.weight", [d]), (f"{prefix}.ln2.bias", [d])]
    return t

MODELS = [
    ("dqn_trunk", "dqn_adam_update_kernel", mlp("trunk", [256, 1024, 1024, 512])),
    ("dqn_heads", "dqn_adam_update_kernel", mlp("value", [512, 256, 51]) + mlp("adv", [512, 256, 9 * 51])),
    ("iqn_head", "iqn_adam_kernel", linear("cos_embed", 64, 512) + mlp("iqn", [512, 512, 256, 9])),
    ("iql", "iql_adam_kernel", mlp("value", [256, 512, 512, 1]) + mlp("q1", [265, 512, 256, 1]) + mlp("q2", [265, 512, 256, 1])),
    ("attention", "attn_adam_kernel", block("attn0", 256, 1024)),
    ("tlob", "attn_adam_kernel", block("tlob0", 128, 512)),
    ("curiosity", "curiosity_adam_step", mlp("fwd", [265, 512, 512, 256]) + mlp("inv", [512, 256, 9])),
    ("decision_transformer", "attn_adam_kernel", block("dt0", 128, 512) + linear("dt_embed", 265, 128) + linear("dt_out", 128, 9)),
]

# The NaN/max-abs check benchmark: 49 slots of skewed sizes (a few whole-model buffers, many
# small activations and heads), about 4.4 M elements in all.
CHECK_SLOTS = (
    [1_837_568, 400_000, 789_760, 429_577]            # large: trunk, IQL value, attention, IQN
    + [131_072] * 2 + [65_536] * 4 + [32_768] * 6     # medium: heads, layer outputs
    + [16_384] * 10 + [4_096] * 12 + [1_024] * 6      # small: activations, biases
    + [51, 9, 1, 1, 1]                                # tiny: value heads, scalars
)

def main():
    models = [{"model": m, "kernel": k, "tensors": [{"name": n, "shape": s} for n, s in t]}
              for m, k, t in MODELS]
    count = sum(len(m["tensors"]) for m in models)
    total = sum(math.prod(t["shape"]) for m in models for t in m["tensors"])
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rl_set.json")
    with open(out, "w") as f:
        json.dump({"tensors": count, "elements": total, "models": models,
                   "check_slots": CHECK_SLOTS}, f, indent=1)
    print(f"{out}: {count} tensors, {total} elements; {len(CHECK_SLOTS)} check slots, "
          f"{sum(CHECK_SLOTS)} elements")

if __name__ == "__main__":
    main()
