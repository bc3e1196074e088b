#!/usr/bin/env python3
"""bench/eval's report: OUT/report.md and OUT/report.json from a run's OUT/cells.jsonl
(bench/eval/run.sh --out OUT), with plots (PNG and SVG) when matplotlib is importable.

    bench/eval/report.py OUT [--md FILE]

Every figure is the median over repeats with its 95% bootstrap interval (stats.py); a
ratio is taken within each repeat (a mode against the reference of the same repeat) and
its median and interval are over repeats.  A target is met only when its whole interval
is on the right side, and one repeat is no claim either way.  docs/evaluation.md is made
from these results by publish.py.
"""

import argparse
import json
import os
import sys

import calibrate
import experiments
import modes
import stats


def load(out):
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    cells = {}
    try:
        with open(os.path.join(out, "cells.jsonl")) as f:
            for line in f:
                try:
                    c = json.loads(line)
                except ValueError:
                    continue
                if c.get("ok"):
                    cells[c["key"]] = c  # a retried cell: its last run counts
    except FileNotFoundError:
        pass
    return meta, list(cells.values())


class Cells:
    """A run's finished cells on its device, looked up by experiment and scenario."""

    def __init__(self, cells, device):
        self.cells, self.device = cells, device

    def ran(self, exp, scenario):
        exp, scenario, _ = self.resolve(exp, scenario, None)
        return any(c["experiment"] == exp.name and c["scenario"] == scenario
                   for c in self.cells)

    @staticmethod
    def resolve(exp, scenario, job):
        """(experiment, scenario, job) whose cells hold job's figures in scenario: those of
        the job that stands for it (Job.like) when scenario is it alone."""
        env, _, alone = scenario.partition(":")
        like = next((j.like for j in exp.jobs if j.name == alone and j.like), None)
        if not like:
            return exp, scenario, job
        return experiments.EXPERIMENTS[like[0]], "%s:%s" % (env, like[1]), like[1]

    def by_repeat(self, exp, scenario, job, metric):
        """{repeat: value} of job's metric in scenario; job "*" (metric "agg"): the sum
        over exp's jobs that have that metric of each one's figure relative to itself
        alone (modes.norm_env).  A job alone ("ENV:JOB") whose alone cells another job
        stands for (Job.like) is looked up there; a reference "best-native" is each
        repeat's best native mode (best: "min" or "max", by the target's op)."""
        if job == "*":
            return self.aggregate(exp, scenario)
        exp, scenario, job = self.resolve(exp, scenario, job)
        return {c["repeat"]: c["metrics"][job][metric] for c in self.cells
                if c["experiment"] == exp.name and c["scenario"] == scenario
                and job in c["metrics"] and c["metrics"][job].get(metric) is not None}

    def best_native(self, exp, job, metric, best):
        """{repeat: the best value of job's metric over the native modes that ran}."""
        out = {}
        for m in [m for m in modes.exp_modes(exp, self.device) if m.startswith("native-")]:
            for k, v in self.by_repeat(exp, m, job, metric).items():
                out[k] = v if k not in out else best(out[k], v)
        return out

    def aggregate(self, exp, scenario):
        env = modes.norm_env(self.device)
        parts = []
        for j in exp.jobs:
            num = self.by_repeat(exp, scenario, j.name, exp.aggregate)
            den = self.by_repeat(exp, "%s:%s" % (env, j.name), j.name, exp.aggregate)
            if num or den:
                parts.append({k: num[k] / den[k] for k in num if den.get(k)})
        reps = set.intersection(*[set(p) for p in parts]) if parts else set()
        return {k: sum(p[k] for p in parts) for k in sorted(reps)}


def ref_scenario(ref, mode, job):
    if ref == "alone":
        return "%s:%s" % (modes.alone_env_of(mode), job)
    return ref


def ratio_columns(exp):
    """The (job, metric, label) whose ratio to alone the report tabulates."""
    cols = columns(exp)
    if exp.ratios is not None:
        return [c for c in cols if (c[0], c[1]) in exp.ratios]
    return [(j, m, lbl) for j, m, lbl in cols if j not in ("*", "server", "host")
            and m not in ("busy", "queue_ms", "cpu_ms")]


def columns(exp):
    """The report's figures of exp: (job, metric, label), the aggregate last."""
    cols = list(exp.metrics)
    if exp.aggregate:
        cols.append(("*", "agg", "aggregate (each job vs alone, summed)"))
    return cols


def experiment_results(exp, device, cells):
    """The experiment's figures: per scenario that ran and metric a summary, per pair
    mode each job's ratio to itself alone, and every target under detshare's modes."""
    db = Cells(cells, device)
    res = {"name": exp.name, "title": exp.title, "about": exp.about, "rows": [],
           "targets": [], "window": sorted({c.get("window") for c in cells
                                           if c["experiment"] == exp.name} - {None}),
           "params": next((c.get("params") for c in cells if c["experiment"] == exp.name),
                          None)}
    for sc in modes.scenarios(exp, device):
        if not db.ran(exp, sc):
            continue
        env, _, alone = sc.partition(":")
        row = {"scenario": sc, "figures": {}, "vs_alone": {}}
        for job, metric, label in columns(exp):
            if alone and job != alone:
                continue
            row["figures"]["%s.%s" % (job, metric)] = stats.summary(
                db.by_repeat(exp, sc, job, metric).values())
            if not alone and (job, metric, label) in ratio_columns(exp):
                r = stats.paired_ratios(
                    db.by_repeat(exp, sc, job, metric),
                    db.by_repeat(exp, ref_scenario("alone", sc, job), job, metric))
                row["vs_alone"]["%s.%s" % (job, metric)] = stats.summary(r)
        res["rows"].append(row)
    pair = [m for m in modes.exp_modes(exp, device) if db.ran(exp, m)]
    for t in exp.targets:
        for mode in [m for m in pair if m.startswith("detshare-")
                     and (t.modes is None or m in t.modes)]:
            res["targets"].append(target_entry(db, exp, t, mode, device))
    return res


def target_entry(db, exp, t, mode, device):
    """A target's verdict under mode: on the figure itself (ref "abs") or on its ratio to
    the reference, repeat by repeat."""
    ref = ref_scenario(t.ref, mode, t.job)
    entry = {"target": t.label, "mode": mode, "op": t.op, "bound": t.bound, "reference": ref}
    num = db.by_repeat(exp, mode, t.job, t.metric)
    if ref == "abs":
        r = [num[k] for k in sorted(num)]
    elif ref == "best-native":
        den = db.best_native(exp, t.job, t.metric, min if t.op == "<=" else max)
        if not den:
            return dict(entry, verdict="not run", why="no native mode's cells (%s)" % (
                "no native driver on the sim" if device == "sim" else "not in this run"))
        r = stats.paired_ratios(num, den)
        if not r:
            return dict(entry, verdict="no data", why="the best native baseline's figure is 0 "
                        "in every repeat (no ratio to it)")
    elif not db.ran(exp, ref):
        return dict(entry, verdict="not run", why="no %s cells (%s)" % (
            ref, "no native driver on the sim" if device == "sim" and "native" in ref
            else "not in this run"))
    else:
        r = stats.paired_ratios(num, db.by_repeat(exp, ref, t.job, t.metric))
    return dict(entry, ratio=stats.summary(r), per_repeat=r,
                verdict=stats.verdict(r, t.op, t.bound))


def fmt(s, digits=3):
    if not s or s["median"] is None:
        return "-"
    m, (lo, hi) = s["median"], s["ci"]
    return "%.*g [%.*g, %.*g]" % (digits, m, digits, lo, digits, hi)


def edge(t):
    """The end of a missed target's interval nearest its bound: what is missed by."""
    lo, hi = t["ratio"]["ci"]
    return lo if t["op"] == "<=" else hi


def verdict_text(t):
    """A target's verdict as the report words it: by how much a ratio misses its bound or
    where its median lies when the interval is across it; the reason when it did not run."""
    if "ratio" not in t:
        return "%s: %s" % (t["verdict"], t["why"])
    scaled = t["reference"] != "abs"  # else the figure itself, maybe against 0
    if t["verdict"] == "no claim":
        return "no claim (one repeat)"
    if scaled and t["verdict"] == "missed":
        return "missed by %.2fx (median %.2fx the bound)" % (
            edge(t) / t["bound"], t["ratio"]["median"] / t["bound"])
    if scaled and t["verdict"] == "inconclusive":
        return "inconclusive (median %.2fx the bound, the interval across it)" % (
            t["ratio"]["median"] / t["bound"])
    return t["verdict"]


def conditions(cells, name, cpus):
    """What the host and the device did during the experiment's cells."""
    mine = [c for c in cells if c["experiment"] == name]
    busy = stats.summary([c["cpu_busy"] for c in mine if c.get("cpu_busy") is not None])
    load = [c[k] for c in mine for k in ("load_start", "load_end") if c.get(k) is not None]
    clocks = sorted({c[k] for c in mine for k in ("clocks_start", "clocks_end") if c.get(k)})
    cores = {k: stats.summary([c[k] for c in mine if c.get(k) is not None])
             for k in ("jobs_cores", "server_cores")}
    text = "Host during its %d cells: CPU busy %s of all %s cores; load average %s; cores " \
        "used by the jobs %s, by the server and its executors %s." % (
            len(mine), fmt(busy, 2), cpus, "%.2f-%.2f" % (min(load), max(load)) if load
            else "-", fmt(cores["jobs_cores"], 2), fmt(cores["server_cores"], 2))
    if clocks:
        text += "  GPU SM clock, memory clock, temperature, power (at cell starts and " \
                "ends): %s." % "; ".join(clocks[:4] + (["..."] if len(clocks) > 4 else []))
    return text


def fmt_params(p):
    return ", ".join("%s=%s" % kv for kv in sorted(p.items())) if p else "-"


def calibration_md(cal):
    """The calibration's table: every candidate tried, its figures and verdict."""
    out = ["", "## Calibration", "",
           "Each experiment's candidates in order until one passes (calibrate.py): every "
           "saturating job alone must keep the device busy (its steps' device time over the "
           "window's, from timed events; NVML's utilisation and the SM clock beside it), and "
           "the latency job's figure under the contended mode must reach its bound times "
           "its figure alone.", "",
           "| experiment | candidate | parameters | busy alone (events; NVML %, SM MHz) | "
           "latency alone | contended | ratio | verdict |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, e in cal.items():
        for c in e["candidates"]:
            busy = "; ".join("%s %.3f%s" % (j, b if b is not None else float("nan"),
                                            nvml(c["device"].get(j)))
                             for j, b in c["busy"].items()) or "-"
            verdict = "passed" if c["ok"] else "not passed"
            if c["errors"]:
                verdict += " (%s)" % "; ".join(c["errors"])[:200]
            if c["candidate"] == e["chosen"]:
                verdict += ", **kept**"
            lat = "-"
            if e["lat"]:
                lat = "%s %s" % (e["metric"], num(c.get("alone")))
            out.append("| %s | %d | %s | %s | %s | %s | %s | %s |" % (
                name, c["candidate"], fmt_params(c["params"]), busy, lat,
                "%s %s" % (e["contended"], num(c.get("contended"))) if e["lat"] else "-",
                "%s (>= %s)" % (num(c.get("ratio")), e["min_ratio"]) if e["lat"] else "-",
                verdict))
    return out


def num(x):
    return "%.3g" % x if isinstance(x, (int, float)) else "-"


def nvml(d):
    if not d or not d.get("nvml_samples"):
        return ""
    return " (%.0f%%, %.0f MHz)" % (d["nvml_util_mean"], d["sm_clock_mean"])


def markdown(meta, results, plots, plot_note, cells, cal):
    out = ["# detshare evaluation (%s, %s)" % (meta["device"], meta["profile"]), "",
           "| | |", "| --- | --- |",
           "| device | %s |" % meta["gpu"], "| driver | %s |" % meta["driver"],
           "| date | %s |" % meta["date"], "| commit | %s |" % meta["commit"],
           "| CPU cores | %s |" % meta["cpus"], "| repeats | %s |" % meta["repeats"], "",
           "Figures: median over repeats [95% bootstrap interval].  Ratios are taken within "
           "each repeat.  A target is **met** only when its whole interval is on the right "
           "side; *inconclusive* when the interval straddles the bound."]
    if meta["device"] == "sim":
        out += ["", "On the sim only detshare's modes run: native time-slicing and MPS need a "
                "GPU, so targets against them are not run.  PyTorch jobs run as latflood "
                "stand-ins: the figures check the harness, not detshare."]
    if cal:
        out += calibration_md(cal)
    for r in results:
        out += ["", "## %s: %s" % (r["name"], r["title"]), "", r["about"], "",
                "Window: %s s a cell.  Parameters: %s." % (
                    ", ".join("%g" % w for w in r["window"]) or "-", fmt_params(r["params"])),
                ""]
        cols = columns(experiments.EXPERIMENTS[r["name"]])
        ratio_cols = ratio_columns(experiments.EXPERIMENTS[r["name"]])
        head = ["scenario"] + [lbl for _, _, lbl in cols] + \
               ["%s vs alone" % lbl for _, _, lbl in ratio_cols]
        out += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        for row in r["rows"]:
            c = [row["scenario"]]
            c += [fmt(row["figures"].get("%s.%s" % (j, m))) for j, m, _ in cols]
            c += [fmt(row["vs_alone"].get("%s.%s" % (j, m))) for j, m, _ in ratio_cols]
            out.append("| " + " | ".join(c) + " |")
        out += ["", "| target | mode | ratio (or figure) | per repeat | verdict |",
                "| --- | --- | --- | --- | --- |"]
        for t in r["targets"]:
            if "ratio" in t:
                out.append("| %s | %s | %s | %s | %s |" % (
                    t["target"], t["mode"], fmt(t["ratio"]),
                    ", ".join("%.3g" % x for x in t["per_repeat"]), verdict_text(t)))
            else:
                out.append("| %s | %s | - | - | %s |" % (t["target"], t["mode"],
                                                       verdict_text(t)))
        out += ["", conditions(cells, r["name"], meta["cpus"])]
        for p in plots.get(r["name"], []):
            out += ["", "![%s](%s)" % (r["name"], p)]
    if plot_note:
        out += ["", plot_note]
    return "\n".join(out) + "\n"


def plot(out, r):
    """Each job's ratio to itself alone per pair mode, with intervals: PNG and SVG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [row for row in r["rows"] if row["vs_alone"]]
    keys = list(rows[0]["vs_alone"]) if rows else []
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(rows)), 4))
    w = 0.8 / max(1, len(keys))
    for i, k in enumerate(keys):
        med = [row["vs_alone"][k]["median"] or 0 for row in rows]
        err = [[m - (row["vs_alone"][k]["ci"] or [m, m])[0] for m, row in zip(med, rows)],
               [(row["vs_alone"][k]["ci"] or [m, m])[1] - m for m, row in zip(med, rows)]]
        ax.bar([x + i * w for x in range(len(rows))], med, w, yerr=err, capsize=3, label=k)
    ax.axhline(1, color="grey", linewidth=0.8)
    ax.set_yscale("log")  # a policy that starves a job is off by 10x and more
    ax.set_xticks([x + w * (len(keys) - 1) / 2 for x in range(len(rows))])
    ax.set_xticklabels([row["scenario"] for row in rows], rotation=30, ha="right")
    ax.set_ylabel("relative to alone (median, 95% CI)")
    ax.set_title(r["title"])
    ax.legend()
    fig.tight_layout()
    names = []
    for ext in ("png", "svg"):
        name = "%s.%s" % (r["name"], ext)
        fig.savefig(os.path.join(out, name))
        names.append(name)
    plt.close(fig)
    return names[:1]


def write_report(out, md=None):
    """Write OUT/report.json, the markdown (OUT/report.md unless md) and the plots from
    OUT's cells and calibration; returns the markdown's path, or None when neither has
    anything yet."""
    meta, cells = load(out)
    cal = calibrate.load(out)
    names = []
    for c in cells:
        if c["experiment"] not in names and c["experiment"] in experiments.EXPERIMENTS:
            names.append(c["experiment"])
    if not names and not cal:
        return None
    for n in names:
        if experiments.EXPERIMENTS[n].derive:
            experiments.EXPERIMENTS[n].derive(cells, meta["device"])
    results = [experiment_results(experiments.EXPERIMENTS[n], meta["device"], cells)
               for n in names]
    plots, note = {}, None
    try:
        import matplotlib  # noqa: F401
        for r in results:
            plots[r["name"]] = plot(out, r)
    except ImportError:
        note = "(No plots: matplotlib is not installed here.)"
    except Exception as e:  # the tables matter more than the pictures
        note = "(No plots: matplotlib failed: %s.)" % e
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump({"meta": meta, "calibration": cal, "experiments": results}, f, indent=1)
    md = md or os.path.join(out, "report.md")
    with open(md, "w") as f:
        f.write(markdown(meta, results, plots, note, cells, cal))
    return md


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="a run's --out directory")
    ap.add_argument("--md", help="where the markdown goes (default OUT/report.md)")
    args = ap.parse_args()
    md = write_report(args.out, args.md)
    print("report: %s" % (md or "nothing yet: no cell has finished in %s" % args.out))
    return 0 if md else 1


if __name__ == "__main__":
    sys.exit(main())
