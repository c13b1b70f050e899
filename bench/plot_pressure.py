#!/usr/bin/env python3
"""Plots examples/nan_sentinel's clamp-pressure CSV (ADAMANT_PRESSURE_CSV): the IQN group's
largest raw weight (before the clamp) and how many weights the clamp caught, step by step, with
the clamp off (the state before the seed's fix) and on.

usage: bench/plot_pressure.py CSV PNG [GROUP]
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    path, out = sys.argv[1], sys.argv[2]
    group = sys.argv[3] if len(sys.argv) > 3 else "iqn_online"
    runs = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            if row["group"] != group:
                continue
            r = runs.setdefault(row["run"], {"step": [], "max_raw": [], "clamped": [], "len": 0, "bound": 0.0})
            r["step"].append(int(row["step"]))
            r["max_raw"].append(float(row["max_raw"]))
            r["clamped"].append(int(row["clamped"]))
            r["len"] = int(row["len"])
            r["bound"] = max(r["bound"], float(row["bound"]))
    if not runs:
        sys.exit(f"no rows for group {group} in {path}")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    colors = {"clamp_off": "tab:red", "clamp_on": "tab:blue"}
    for name, r in runs.items():
        label = name.replace("_", " ")
        top.plot(r["step"], r["max_raw"], color=colors.get(name), label=label)
        bottom.plot(r["step"], [c / r["len"] for c in r["clamped"]], color=colors.get(name), label=label)
    bound = max(r["bound"] for r in runs.values())
    if bound > 0:
        top.axhline(bound, color="gray", linestyle="--", linewidth=1, label=f"clamp bound {bound:g}")
    top.axhline(10 * bound if bound > 0 else 1e3, color="black", linestyle=":", linewidth=1,
                label="slot 48 threshold (1e3 x q_abs_ref_eff)")
    top.set_yscale("log")
    top.set_ylabel("max |w| before the clamp")
    top.legend(loc="upper left", fontsize=8)
    bottom.set_ylabel("fraction of weights caught")
    bottom.set_xlabel("step")
    bottom.legend(loc="center right", fontsize=8)
    fig.suptitle(f"examples/nan_sentinel: clamp pressure of `{group}`, from the optimizer's records")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
