"""bench/coloc's report: [--skip-first-request] RAW_DIR [RAW_DIR...] PREFIX -> PREFIX.json,
PREFIX.md, PREFIX.png.

For every scenario (alone-native, alone-detshare, MODE-JOB+JOB) and job it reads the job's
JSON lines, keeps what a pair measured while both of its jobs ran, and reports decode time
per output token (p50, p99), trainer steps per second, throughput normalised to the job
alone natively, issue 9's targets met or not, and whether each job's hash (its first
losses, or its first tokens) equals the one it had alone natively.  In the bursty LLM
scenario (decode+prefill) the decoder's TPOT SLO is slo_x (meta.txt) times its p50 alone
natively in the same repeat, as run.sh told it to the servers (its slo@rN.txt: whole ms
before 2026-11-28, to the microsecond since), and the report counts the decode steps over
it.

A run may repeat the whole set (REPEATS): a figure is then the median over repeats, and a
target's ratio the median over repeats of that ratio within a repeat (the pair against
the baselines measured in the same repeat), since the baselines move between repeats.
Several raw directories (a run split over several commands) count as further repeats.

--skip-first-request re-scores raw data recorded before jobs.py's decoder had an untimed
request of its own (runs up to 75, 2026-11-23): it drops the decoder's first measured
request (its first 63 steps), whose steps past the 16th ran at 50-75 ms in every such
run, alone as much as co-located.
"""
import json
import os
import statistics
import sys


# Decode steps of one request (64 new tokens); set by --skip-first-request.
SKIP_STEPS = 0


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


def measure(rows, window, slo_ms=None):
    """The job's figures from rows whose time lies in window (None: all); a decoder's
    steps over slo_ms counted when there is one."""
    if SKIP_STEPS:
        steps = [i for i, r in enumerate(rows) if r.get("kind") == "step"]
        drop = set(steps[:SKIP_STEPS])
        rows = [r for i, r in enumerate(rows) if i not in drop]
    inside = [r for r in rows if "t" in r and (window is None or window[0] <= r["t"] <= window[1])]
    h = next((r["hash"] for r in rows if "hash" in r), None)
    steps = [r["tpot_ms"] for r in inside if r.get("kind") == "step"]
    if steps:
        m = {"tpot_p50_ms": pct(steps, 0.5), "tpot_p99_ms": pct(steps, 0.99),
             "tpot_mean_ms": statistics.mean(steps), "steps": len(steps), "hash": h}
        if slo_ms:
            m["slo_ms"] = slo_ms
            m["over_slo"] = sum(t > slo_ms for t in steps) / len(steps)
        return m
    wins = [r["steps_per_s"] for r in inside if r.get("kind") == "window"]
    if wins:
        return {"steps_per_s": statistics.mean(wins), "windows": len(wins), "hash": h}
    bursts = [r["burst_ms"] for r in inside if r.get("kind") == "burst"]
    if bursts:
        return {"burst_p50_ms": pct(bursts, 0.5), "burst_mean_ms": statistics.mean(bursts),
                "bursts": len(bursts), "hash": h}
    return {"failed": True, "hash": h}


def throughput(m):
    if "steps_per_s" in m:
        return m["steps_per_s"]
    if "tpot_mean_ms" in m:
        return 1e3 / m["tpot_mean_ms"]
    if "burst_mean_ms" in m:
        return 1e3 / m["burst_mean_ms"]
    return None


def slo_of(paths, slo_x, told=None):
    """The decoder's TPOT SLO of one repeat: what run.sh told the server (told: its
    slo@rN.txt, whole ms before 2026-11-28), else as run.sh computes it, or None."""
    if told and os.path.exists(told):
        return float(open(told).read().strip())
    steps = sorted(r["tpot_ms"] for r in read(paths.get("decode", "")) if r.get("kind") == "step")
    return max(0.001, round(slo_x * steps[len(steps) // 2], 3)) if steps else None


def scenarios(raw):
    """{(scenario, repeat): {job: path}} from the file names RAW/<scenario>@r<N>-<job>.jsonl
    (RAW/<scenario>-<job>.jsonl before repeats: repeat 1)."""
    found = {}
    for name in sorted(os.listdir(raw)):
        if name.endswith(".jsonl"):
            scen, job = name[:-6].rsplit("-", 1)
            scen, _, rep = scen.partition("@r")
            found.setdefault((scen, int(rep or 1)), {})[job] = os.path.join(raw, name)
    return found


def build_one(raw, tag, slo_x):
    """{repeat: {scenario: {job: figures}}} of one raw directory; tag names its repeats."""
    reps = {}
    found = scenarios(raw)
    for (scen, rep), paths in found.items():
        jobs = list(paths)
        rows = {j: read(p) for j, p in paths.items()}
        window = None
        if len(jobs) > 1 and not scen.startswith("alone-"):
            spans = [span(r) for r in rows.values()]
            if all(spans):
                window = (max(s[0] for s in spans), min(s[1] for s in spans))
        res = reps.setdefault(f"{tag}{rep}", {})
        slo = None
        if scen.endswith("-decode+prefill"):
            slo = slo_of(found.get(("alone-native", rep), {}), slo_x,
                         os.path.join(raw, "slo@r%s.txt" % rep))
        res[scen] = {j: measure(rows[j], window, slo if j == "decode" else None) for j in jobs}
        if window is not None:
            res[scen]["overlap_s"] = max(0.0, window[1] - window[0])
    return reps


def build(raws):
    meta = dict(line.strip().split("=", 1)
                for line in open(os.path.join(raws[0], "meta.txt")) if "=" in line)
    reps = {}
    slo_x = float(meta.get("slo_x", "1.25"))
    for i, raw in enumerate(raws):
        reps.update(build_one(raw, f"{i + 1}." if len(raws) > 1 else "", slo_x))
    meta["repeats"] = str(len(reps))
    return meta, reps


def normalised(jobs, alone, names):
    """Sum over the pair's jobs of throughput relative to the job alone natively."""
    total = 0.0
    for j in names:
        tp, base = throughput(jobs.get(j, {})), throughput(alone.get(j, {}))
        if not tp or not base:
            return None
        total += tp / base
    return total


# Issue 9's targets: (what, ratio bound, the ratio must be at most the bound).
TPOT = ("TPOT p99 <= 1.10x alone", 1.10, True)
TRAINER = ("trainer >= 0.9x native MPS", 0.9, False)
AGG_MPS = ("aggregate >= native MPS", 1.0, False)
AGG_TS = ("aggregate >= 1.2x time-sliced", 1.2, False)
BURSTY = ("TPOT SLO violations <= 0.75x slo-aware's", 0.75, True)


def ratios(res):
    """(scenario, job, target, ratio) for every detshare mode of every pair of one repeat."""
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
                out.append((scen, job, TPOT, m["tpot_p99_ms"] / alone[job]["tpot_p99_ms"]))
            elif "steps_per_s" in m and "steps_per_s" in mps.get(job, {}) and "decode" in names:
                out.append((scen, job, TRAINER, m["steps_per_s"] / mps[job]["steps_per_s"]))
        if pair == "decode+prefill" and scen.startswith("tpot-first-"):
            mine = jobs.get("decode", {}).get("over_slo")
            theirs = res.get(f"slo-aware-{pair}", {}).get("decode", {}).get("over_slo")
            if mine is not None and theirs:
                out.append((scen, "decode", BURSTY, mine / theirs))
        if "decode" in names:
            continue
        a = normalised(jobs, alone, names)
        if a is None:
            continue
        for base, target in ((mps, AGG_MPS), (ts, AGG_TS)):
            b = normalised(base, alone, names)
            if b:
                out.append((scen, "pair", target, a / b))
    return out


def verdicts(reps):
    """Per scenario, job and target: the median ratio over repeats, the ratios, met."""
    found = {}
    for res in reps.values():
        for scen, job, target, r in ratios(res):
            found.setdefault((scen, job, target), []).append(r)
    out = []
    for (scen, job, (what, bound, at_most)), rs in found.items():
        r = statistics.median(rs)
        out.append((scen, job, what, r, rs, r <= bound if at_most else r >= bound))
    return out


def summary(reps):
    """{scenario: {job: figures}}, each figure the median over the repeats that have it,
    with how many repeats had it and whether every repeat's hash equals that repeat's
    hash alone natively."""
    out = {}
    for res in reps.values():
        alone = res.get("alone-native", {})
        for scen, jobs in res.items():
            for job, m in jobs.items():
                if not isinstance(m, dict):
                    continue
                s = out.setdefault(scen, {}).setdefault(job, {"runs": [], "same": []})
                s["runs"].append(m)
                if "overlap_s" in jobs:
                    s.setdefault("overlaps", []).append(jobs["overlap_s"])
                base = alone.get(job, {}).get("hash")
                if m.get("hash") is not None and base is not None:
                    s["same"].append(m["hash"] == base)
                tp, b = throughput(m), throughput(alone.get(job, {}))
                if tp and b:
                    s.setdefault("vs_alone", []).append(tp / b)
    for jobs in out.values():
        for s in jobs.values():
            ok = [m for m in s["runs"] if not m.get("failed")]
            for key in ("tpot_p50_ms", "tpot_p99_ms", "steps_per_s", "over_slo", "slo_ms",
                        "burst_p50_ms"):
                vals = [m[key] for m in ok if key in m]
                if vals:
                    s[key] = statistics.median(vals)
            if s.get("overlaps"):
                s["overlap_s"] = statistics.median(s.pop("overlaps"))
            if s.get("vs_alone"):
                s["vs_alone"] = statistics.median(s["vs_alone"])
            s["failed"] = len(s["runs"]) - len(ok)
            s["repeats"] = len(s["runs"])
    return out


def fmt(v, d=1):
    return "-" if v is None else f"{v:.{d}f}"


def same_text(s):
    if not s["same"]:
        return "-"
    n = sum(s["same"])
    return "yes" if n == len(s["same"]) else f"**no** ({n} of {len(s['same'])})"


def write_md(path, meta, summ, ver):
    with open(path, "w") as f:
        f.write(f"# bench/coloc: {meta.get('gpu', '?')}, driver {meta.get('driver', '?')}, "
                f"{meta.get('date', '?')}\n\ncommit {meta.get('commit', '?')}, PyTorch "
                f"{meta.get('torch', '?')}, each job measured {meta.get('secs', '?')} s after its "
                f"warm-up, {meta.get('repeats', '1')} repeat(s) of the whole set; pairs count only "
                "what both jobs measured together. A figure is the median over repeats; a "
                "target's ratio the median over repeats of the ratio within a repeat, the "
                "repeats' ratios in brackets.\n\n")
        if meta.get("rescored"):
            f.write(f"Re-scored: {meta['rescored']}.\n\n")
        f.write("| scenario | job | repeats | TPOT p50 / p99 ms | over SLO | steps/s | burst p50 ms | vs alone native | overlap s | same hash as alone native |\n")
        f.write("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
        for scen, jobs in summ.items():
            for job, s in jobs.items():
                if s["failed"] == s["repeats"]:
                    f.write(f"| {scen} | {job} | {s['repeats']} | failed | | | | | | |\n")
                    continue
                failed = f" ({s['failed']} failed)" if s["failed"] else ""
                over = s.get("over_slo")
                over = "-" if over is None else f"{100 * over:.1f}% of {s['slo_ms']:.0f} ms"
                f.write(f"| {scen} | {job} | {s['repeats']}{failed} | {fmt(s.get('tpot_p50_ms'), 2)} / "
                        f"{fmt(s.get('tpot_p99_ms'), 2)} | {over} | {fmt(s.get('steps_per_s'), 2)} | "
                        f"{fmt(s.get('burst_p50_ms'))} | "
                        f"{fmt(s.get('vs_alone'), 2)} | {fmt(s.get('overlap_s'))} | {same_text(s)} |\n")
        f.write("\n## Targets (issue 9)\n\n| scenario | job | target | ratio | met |\n| --- | --- | --- | ---: | --- |\n")
        for scen, job, what, r, rs, ok in ver:
            each = f" ({', '.join(f'{x:.2f}' for x in rs)})" if len(rs) > 1 else ""
            f.write(f"| {scen} | {job} | {what} | {r:.2f}{each} | {'yes' if ok else '**no**'} |\n")


def write_png(path, summ):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report: matplotlib is not importable: no plot")
        return
    labels, values = [], []
    for scen, jobs in summ.items():
        for job, s in jobs.items():
            if s.get("vs_alone"):
                labels.append(f"{scen}\n{job}")
                values.append(s["vs_alone"])
    fig, ax = plt.subplots(figsize=(max(6, 0.55 * len(labels)), 4.5))
    ax.bar(range(len(values)), values)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks(range(len(values)), labels, rotation=90, fontsize=6)
    ax.set_ylabel("throughput ÷ alone natively\n(median of repeats)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    global SKIP_STEPS
    args = sys.argv[1:]
    if args and args[0] == "--skip-first-request":
        SKIP_STEPS = 63
        args = args[1:]
    raws, prefix = args[:-1], args[-1]
    meta, reps = build(raws)
    if SKIP_STEPS:
        meta["rescored"] = "the decoder's first measured request dropped (--skip-first-request)"
    ver = verdicts(reps)
    summ = summary(reps)
    with open(prefix + ".json", "w") as f:
        json.dump({"meta": meta, "repeats": reps, "summary": summ,
                   "targets": [dict(scenario=s, job=j, target=w, ratio=r, ratios=rs, met=ok)
                               for s, j, w, r, rs, ok in ver]},
                  f, indent=1)
    write_md(prefix + ".md", meta, summ, ver)
    write_png(prefix + ".png", summ)
    print(open(prefix + ".md").read())


if __name__ == "__main__":
    main()
