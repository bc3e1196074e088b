"""bench/coloc's report: RAW_DIR PREFIX -> PREFIX.json, PREFIX.md, PREFIX.png.

For every scenario (alone-native, alone-detshare, MODE-JOB+JOB) and job it reads the job's
JSON lines, keeps what a pair measured while both of its jobs ran, and reports decode time
per output token (p50, p99), trainer steps per second, throughput normalised to the job
alone natively, issue 9's targets met or not, and whether each job's hash (its first
losses, or its first tokens) equals the one it had alone natively.
"""
import json
import os
import statistics
import sys


def read(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return rows


def span(rows):
    ts = [r["t"] for r in rows if "t" in r]
    return (min(ts), max(ts)) if ts else None


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(len(v) * q))] if v else None


def measure(rows, window):
    """The job's figures from rows whose time lies in window (None: all)."""
    inside = [r for r in rows if "t" in r and (window is None or window[0] <= r["t"] <= window[1])]
    h = next((r["hash"] for r in rows if "hash" in r), None)
    steps = [r["tpot_ms"] for r in inside if r.get("kind") == "step"]
    if steps:
        return {"tpot_p50_ms": pct(steps, 0.5), "tpot_p99_ms": pct(steps, 0.99),
                "tpot_mean_ms": statistics.mean(steps), "steps": len(steps), "hash": h}
    wins = [r["steps_per_s"] for r in inside if r.get("kind") == "window"]
    if wins:
        return {"steps_per_s": statistics.mean(wins), "windows": len(wins), "hash": h}
    return {"failed": True, "hash": h}


def throughput(m):
    if "steps_per_s" in m:
        return m["steps_per_s"]
    if "tpot_mean_ms" in m:
        return 1e3 / m["tpot_mean_ms"]
    return None


def scenarios(raw):
    """{scenario: [jobs]} from the file names RAW/<scenario>-<job>.jsonl."""
    found = {}
    for name in sorted(os.listdir(raw)):
        if name.endswith(".jsonl"):
            scen, job = name[:-6].rsplit("-", 1)
            found.setdefault(scen, []).append(job)
    return found


def build(raw):
    meta = dict(line.strip().split("=", 1) for line in open(os.path.join(raw, "meta.txt")) if "=" in line)
    res = {}
    for scen, jobs in scenarios(raw).items():
        rows = {j: read(os.path.join(raw, f"{scen}-{j}.jsonl")) for j in jobs}
        window = None
        if len(jobs) > 1 and not scen.startswith("alone-"):
            spans = [span(r) for r in rows.values()]
            if all(spans):
                window = (max(s[0] for s in spans), min(s[1] for s in spans))
        res[scen] = {j: measure(rows[j], window) for j in jobs}
        if window is not None:
            res[scen]["overlap_s"] = max(0.0, window[1] - window[0])
    return meta, res


def normalised(jobs, alone, names):
    """Sum over the pair's jobs of throughput relative to the job alone natively."""
    total = 0.0
    for j in names:
        tp, base = throughput(jobs.get(j, {})), throughput(alone.get(j, {}))
        if not tp or not base:
            return None
        total += tp / base
    return total


def verdicts(res):
    """Issue 9's targets, for every detshare mode of every pair."""
    alone = res.get("alone-native", {})
    out = []
    for scen, jobs in res.items():
        if scen.startswith(("alone-", "native-")):
            continue
        pair = scen.rsplit("-", 1)[1]
        names = pair.split("+")
        mps = res.get(f"native-mps-{pair}", {})
        ts = res.get(f"native-timesliced-{pair}", {})
        for job in names:
            m = jobs.get(job, {})
            if "tpot_p99_ms" in m and "tpot_p99_ms" in alone.get(job, {}):
                r = m["tpot_p99_ms"] / alone[job]["tpot_p99_ms"]
                out.append((scen, job, "TPOT p99 <= 1.10x alone", r, r <= 1.10))
            elif "steps_per_s" in m and "steps_per_s" in mps.get(job, {}) and "decode" in names:
                r = m["steps_per_s"] / mps[job]["steps_per_s"]
                out.append((scen, job, "trainer >= 0.9x native MPS", r, r >= 0.9))
        if "decode" in names:
            continue
        a = normalised(jobs, alone, names)
        if a is None:
            continue
        b = normalised(mps, alone, names)
        if b:
            out.append((scen, "pair", "aggregate >= native MPS", a / b, a >= b))
        b = normalised(ts, alone, names)
        if b:
            out.append((scen, "pair", "aggregate >= 1.2x time-sliced", a / b, a >= 1.2 * b))
    return out


def fmt(v, d=1):
    return "-" if v is None else f"{v:.{d}f}"


def write_md(path, meta, res, ver):
    alone = res.get("alone-native", {})
    with open(path, "w") as f:
        f.write(f"# bench/coloc: {meta.get('gpu', '?')}, driver {meta.get('driver', '?')}, "
                f"{meta.get('date', '?')}\n\ncommit {meta.get('commit', '?')}, PyTorch "
                f"{meta.get('torch', '?')}, each job measured {meta.get('secs', '?')} s after its "
                "warm-up; pairs count only what both jobs measured together.\n\n")
        f.write("| scenario | job | TPOT p50 / p99 ms | steps/s | vs alone native | overlap s | same hash as alone native |\n")
        f.write("| --- | --- | ---: | ---: | ---: | ---: | --- |\n")
        for scen, jobs in res.items():
            for job, m in jobs.items():
                if not isinstance(m, dict):
                    continue
                if m.get("failed"):
                    f.write(f"| {scen} | {job} | failed | | | | |\n")
                    continue
                tp = throughput(m)
                base = throughput(alone.get(job, {})) if job in alone else None
                same = "-" if m.get("hash") is None or job not in alone else \
                    ("yes" if m["hash"] == alone[job].get("hash") else "**no**")
                f.write(f"| {scen} | {job} | {fmt(m.get('tpot_p50_ms'), 2)} / {fmt(m.get('tpot_p99_ms'), 2)} "
                        f"| {fmt(m.get('steps_per_s'), 2)} | {fmt(tp / base if tp and base else None, 2)} "
                        f"| {fmt(jobs.get('overlap_s'))} | {same} |\n")
        f.write("\n## Targets (issue 9)\n\n| scenario | job | target | ratio | met |\n| --- | --- | --- | ---: | --- |\n")
        for scen, job, what, r, ok in ver:
            f.write(f"| {scen} | {job} | {what} | {r:.2f} | {'yes' if ok else '**no**'} |\n")


def write_png(path, res):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib is not importable: no plot")
        return
    alone = res.get("alone-native", {})
    labels, values = [], []
    for scen, jobs in res.items():
        for job, m in jobs.items():
            if isinstance(m, dict) and throughput(m) and job in alone and throughput(alone[job]):
                labels.append(f"{scen}\n{job}")
                values.append(throughput(m) / throughput(alone[job]))
    fig, ax = plt.subplots(figsize=(max(6, 0.55 * len(labels)), 4.5))
    ax.bar(range(len(values)), values)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks(range(len(values)), labels, rotation=90, fontsize=6)
    ax.set_ylabel("throughput vs the job alone natively")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    raw, prefix = sys.argv[1], sys.argv[2]
    meta, res = build(raw)
    ver = verdicts(res)
    with open(prefix + ".json", "w") as f:
        json.dump({"meta": meta, "results": res,
                   "targets": [dict(scenario=s, job=j, target=w, ratio=r, met=ok) for s, j, w, r, ok in ver]},
                  f, indent=1)
    write_md(prefix + ".md", meta, res, ver)
    write_png(prefix + ".png", res)
    print(open(prefix + ".md").read())


if __name__ == "__main__":
    main()
