#!/usr/bin/env python3
"""Combine copy_bench runs (native and detshare, same machine, same session) into one
JSON, a Markdown table of ratios and a plot.
Usage: report_copy.py NATIVE.jsonl DETSHARE.jsonl OUT_PREFIX "device, date"
"""
import json
import sys


def load(path):
    rows, device = {}, None
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        if d["op"] == "device":
            device = d["name"]
        else:
            rows[(d["op"], d["bytes"])] = d["seconds"]
    return rows, device


def main():
    native, dev_n = load(sys.argv[1])
    ds, dev_d = load(sys.argv[2])
    prefix, where = sys.argv[3], sys.argv[4]
    keys = [k for k in native if k in ds]
    out = {"device": dev_n, "device_through_detshare": dev_d, "where": where,
           "rows": [{"op": op, "bytes": n, "native_s": native[(op, n)],
                     "detshare_s": ds[(op, n)], "ratio": ds[(op, n)] / native[(op, n)]}
                    for op, n in keys]}
    json.dump(out, open(prefix + ".json", "w"), indent=1)
    with open(prefix + ".md", "w") as f:
        f.write(f"Copy and call costs, native driver vs detshare, {where} ({dev_n}).\n\n")
        f.write("| op | bytes | native µs | detshare µs | detshare / native |\n")
        f.write("| --- | ---: | ---: | ---: | ---: |\n")
        for r in out["rows"]:
            f.write(f"| {r['op']} | {r['bytes']} | {r['native_s'] * 1e6:.1f} | "
                    f"{r['detshare_s'] * 1e6:.1f} | {r['ratio']:.2f} |\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot")
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    for op in ("htod", "dtoh", "dtod"):
        rs = [r for r in out["rows"] if r["op"] == op]
        ax.plot([r["bytes"] for r in rs], [r["ratio"] for r in rs], marker="o", label=op)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes per copy (synchronous)")
    ax.set_ylabel("time through detshare / native")
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_title(f"detshare copy overhead, {dev_n}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=120)


if __name__ == "__main__":
    main()
