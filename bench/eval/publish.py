#!/usr/bin/env python3
"""docs/evaluation.md from the GPU runs in the tree: bench/eval/evaluation.md.in, whose
marker lines are replaced by tables made from each run's cells.jsonl, calibration.json and
meta.json (report.py's figures and verdicts, so that the published numbers and a run's own
report.md agree).

    bench/eval/publish.py [--doc FILE] [--template FILE] [RESULTS_DIR...]

RESULTS_DIR: run.sh --out directories; by default every lab/results/eval-*/ with a
meta.json.  Runs on the sim are named and left out: the sim models contention, not a
GPU's speed.  Links are written relative to docs/, wherever FILE is, so that a copy
written elsewhere (ctest eval_doc diffs one against docs/evaluation.md) is the same text.

Markers, each alone on its line: @RUNS@ (the runs: device, driver, date, commit),
@HEADLINE@ (every target's verdict, and the experiments no GPU has run), and
@RESULTS NAME@ once for every experiment of experiments.py (its calibration, figures,
each job alone, targets, the host and GPU during its cells, what did not run).
"""

import argparse
import glob
import os
import re
import sys

import calibrate
import experiments
import modes
import report
import stats

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TEMPLATE = os.path.join(HERE, "evaluation.md.in")
DOC = os.path.join(ROOT, "docs", "evaluation.md")
DEVICE = "cuda"
ENV_LABEL = {"alone-native": "alone natively", "alone-native-mps": "alone under MPS",
             "alone-detshare": "alone through detshare"}


class Run:
    """One results directory: its meta.json, finished cells, calibration and, per
    experiment it has cells of, report.py's results."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        self.name = os.path.basename(self.path.rstrip("/"))
        self.meta, self.cells = report.load(self.path)
        self.cal = calibrate.load(self.path)
        names = [n for n in experiments.EXPERIMENTS
                 if any(c["experiment"] == n for c in self.cells)]
        for n in names:
            if experiments.EXPERIMENTS[n].derive:
                experiments.EXPERIMENTS[n].derive(self.cells, self.meta["device"])
        self.results = {n: report.experiment_results(experiments.EXPERIMENTS[n],
                                                     self.meta["device"], self.cells)
                        for n in names}

    def link(self, name):
        return os.path.relpath(os.path.join(self.path, name), os.path.join(ROOT, "docs"))


def num(x):
    """A figure as the doc prints it: three significant digits, whole numbers from 1000."""
    if x is None:
        return "-"
    return "%.0f" % x if abs(x) >= 999.5 else "%.3g" % x


def fig(s):
    """A summary: its median and 95% interval, or the one value of a single repeat."""
    if not s or s["median"] is None:
        return "-"
    if s["n"] == 1:
        return num(s["median"])
    return "%s [%s, %s]" % (num(s["median"]), num(s["ci"][0]), num(s["ci"][1]))


def span(values):
    """min-max of values (the value when they agree), "-" when there are none."""
    v = [x for x in values if x is not None]
    if not v:
        return "-"
    lo, hi = num(min(v)), num(max(v))
    return lo if lo == hi else "%s-%s" % (lo, hi)


def table(head, rows):
    return ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)] + \
        ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def runs_md(runs, left_out):
    rows = [[r.name, r.meta.get("gpu", "-"), r.meta.get("driver", "-"), r.meta["cpus"],
             r.meta["profile"], r.meta["repeats"], r.meta["date"], r.meta["commit"],
             len(r.cells), ", ".join(r.results) or "-"] for r in runs]
    out = table(["run", "device", "driver", "CPU cores", "profile", "repeats asked", "date",
                 "commit", "cells", "experiments"], rows)
    out += ["", "Each run's own report, plots and raw outputs: " + ", ".join(
        "[%s](%s)" % (r.name, r.link("report.md")) for r in runs) + "." if runs else
        "No GPU run is in the tree yet."]
    if left_out:
        out += ["", "Left out (runs on the sim, which check the harness, not detshare): " +
                ", ".join(left_out) + "."]
    return out


def headline_md(runs):
    rows, count = [], {}
    for name in experiments.EXPERIMENTS:
        for r in runs:
            for t in r.results.get(name, {"targets": []})["targets"]:
                count[t["verdict"]] = count.get(t["verdict"], 0) + 1
                rows.append([name, t["target"], t["mode"], r.name, fig(t.get("ratio")),
                             len(t.get("per_repeat", [])), report.verdict_text(t)])
    out = table(["experiment", "target", "mode", "run", "ratio (or figure)", "repeats",
                 "verdict"], rows) if rows else ["No target has been measured on a GPU yet."]
    if rows:
        out += ["", "%d verdicts: %s." % (len(rows), ", ".join(
            "%d %s" % (count[v], v) for v in sorted(count)))]
    never = [n for n in experiments.EXPERIMENTS if not any(n in r.results for r in runs)]
    if never:
        out += ["", "Not run on a GPU yet: %s." % ", ".join("`%s`" % n for n in never)]
    return out


def calibration_line(exp, cal):
    if exp.calib is None:
        return "Calibration: none (nothing to calibrate)."
    e = cal.get(exp.name)
    if not e:
        return "Calibration: not calibrated in this run (its default parameters)."
    c = next(c for c in e["candidates"] if c["candidate"] == e["chosen"])
    text = "Calibration: **%s** (candidate %d kept of %d tried: %s)." % (
        "passed" if e["ok"] else "not passed", e["chosen"], len(e["candidates"]),
        report.fmt_params(c["params"]))
    busy = ["%s %.3f%s" % (j, b, report.nvml(c["device"].get(j)))
            for j, b in c["busy"].items() if b is not None]
    if busy:
        text += "  Busy alone (events; NVML %%, SM MHz): %s." % "; ".join(busy)
    if e["lat"]:
        text += "  %s of %s alone %s, under %s %s: %sx (at least %gx needed)." % (
            e["metric"], e["lat"], num(c.get("alone")), e["contended"],
            num(c.get("contended")), num(c.get("ratio")), e["min_ratio"])
    return text


def figures_md(exp, db, res):
    cols = report.columns(exp)
    ratio_cols = report.ratio_columns(exp)
    pair = [row for row in res["rows"] if ":" not in row["scenario"]]
    out = table(["mode", "repeats"] + [lbl for _, _, lbl in cols],
                [[row["scenario"], len(cells_of(db, exp, row["scenario"]))] +
                 [fig(row["figures"].get("%s.%s" % (j, m))) for j, m, _ in cols]
                 for row in pair])
    if ratio_cols and pair:
        out += ["", "Each job against itself alone (in the same environment and repeat):", ""]
        out += table(["mode"] + ["%s vs alone" % lbl for _, _, lbl in ratio_cols],
                     [[row["scenario"]] + [fig(row["vs_alone"].get("%s.%s" % (j, m)))
                                           for j, m, _ in ratio_cols] for row in pair])
    return out


def alone_md(exp, db):
    """Each job's figures alone in every environment the experiment has, and through
    detshare against natively, repeat by repeat."""
    envs = modes.exp_alone_envs(exp, DEVICE)
    both = "alone-native" in envs and modes.ALONE_DS in envs
    rows = []
    for job in [j for j in exp.jobs if not j.like]:
        for j, m, lbl in report.columns(exp):
            if j != job.name:
                continue
            per = {e: db.by_repeat(exp, "%s:%s" % (e, j), j, m) for e in envs}
            row = [lbl]
            for e in envs:
                s = stats.summary(per[e].values())
                row.append("%s (%d)" % (fig(s), s["n"]) if s["n"] else "not run")
            if both:
                row.append(fig(stats.summary(stats.paired_ratios(
                    per[modes.ALONE_DS], per["alone-native"]))))
            rows.append(row)
    if not rows:
        return ["Its jobs alone: those of `%s`, whose alone cells stand for theirs." %
                exp.jobs[0].like[0]]
    head = ["job alone (repeats)"] + [ENV_LABEL.get(e, e) for e in envs]
    return table(head + (["detshare / native"] if both else []), rows)


def targets_md(res):
    if not res["targets"]:
        return ["No target of this experiment applies to the modes that ran."]
    return table(["target", "mode", "reference", "ratio (or figure)", "repeats", "per repeat",
                  "verdict"],
                 [[t["target"], t["mode"], t["reference"], fig(t.get("ratio")),
                   len(t.get("per_repeat", [])),
                   ", ".join(num(x) for x in t.get("per_repeat", [])) or "-",
                   report.verdict_text(t)] for t in res["targets"]])


def cells_of(db, exp, scenario):
    e, sc, _ = db.resolve(exp, scenario, None)
    return [c for c in db.cells if c["experiment"] == e.name and c["scenario"] == sc]


def clocks(cells, i):
    """Field i of the cells' "SM MHz, memory MHz, degrees C, W" samples at start and end."""
    out = []
    for c in cells:
        for k in ("clocks_start", "clocks_end"):
            f = (c.get(k) or "").split(",")
            if len(f) == 4:
                try:
                    out.append(float(f[i]))
                except ValueError:
                    pass
    return out


def conditions_md(exp, db, res, cpus):
    rows = []
    for row in res["rows"]:
        mine = cells_of(db, exp, row["scenario"])
        rows.append([row["scenario"], len(mine),
                     span(c.get("cpu_busy") for c in mine),
                     span(c.get(k) for c in mine for k in ("load_start", "load_end")),
                     span(c.get("jobs_cores") for c in mine),
                     span(c.get("server_cores") for c in mine)] +
                    [span(clocks(mine, i)) for i in range(4)])
    return table(["cells of", "cells", "CPU busy (share of %s cores)" % cpus, "load average",
                  "cores used by the jobs", "by the server and executors", "SM MHz",
                  "memory MHz", "GPU C", "GPU W"], rows)


def results_md(name, runs):
    exp = experiments.EXPERIMENTS[name]
    mine = [r for r in runs if name in r.results]
    if not mine:
        return ["*Not run on a GPU yet.*"]
    out = []
    for r in mine:
        res, db = r.results[name], report.Cells(r.cells, DEVICE)
        missing = [sc for sc in modes.scenarios(exp, DEVICE) if not db.ran(exp, sc)]
        out += ["**Run %s** (%s, %s profile, %s); window %s s a cell; parameters: %s." % (
            r.name, r.meta.get("gpu", "-"), r.meta["profile"], r.meta["date"][:10],
            ", ".join("%g" % w for w in res["window"]) or "-",
            report.fmt_params(res["params"])), "", calibration_line(exp, r.cal), ""]
        out += figures_md(exp, db, res) + [""] + alone_md(exp, db) + [""]
        out += targets_md(res) + ["", "Host and GPU during the cells (ranges over them; "
                                  "clocks, temperature and power at each cell's start and "
                                  "end):", ""]
        out += conditions_md(exp, db, res, r.meta["cpus"])
        out += ["", "Not in this run: %s." % (", ".join(missing) if missing else "nothing")]
        png = os.path.join(r.path, name + ".png")
        if os.path.exists(png):
            out += ["", "![%s: each job against itself alone, with intervals](%s)" % (
                name, r.link(name + ".png"))]
        out.append("")
    return out[:-1]


MARKER = re.compile(r"^@(RUNS|HEADLINE|RESULTS ([a-z0-9-]+))@$")


def render(template, runs, left_out=()):
    """The doc: template's text with its markers replaced.  ValueError when a marker names
    no experiment, or an experiment has no @RESULTS@ or two."""
    seen, out = [], []
    for line in template.splitlines():
        m = MARKER.match(line)
        if not m:
            out.append(line)
        elif m.group(1) == "RUNS":
            out += runs_md(runs, left_out)
        elif m.group(1) == "HEADLINE":
            out += headline_md(runs)
        elif m.group(2) not in experiments.EXPERIMENTS or m.group(2) in seen:
            raise ValueError("template: %s names no experiment, or a second time" % line)
        else:
            seen.append(m.group(2))
            out += results_md(m.group(2), runs)
    lost = [n for n in experiments.EXPERIMENTS if n not in seen]
    if lost:
        raise ValueError("template: no @RESULTS NAME@ for %s" % ", ".join(lost))
    return "\n".join(out) + "\n"


def discover():
    return sorted(os.path.dirname(p) for p in
                  glob.glob(os.path.join(ROOT, "lab", "results", "eval-*", "meta.json")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", help="results directories (default: %s)" %
                    "lab/results/eval-*/")
    ap.add_argument("--doc", default=DOC, help="where the doc goes (default docs/evaluation.md)")
    ap.add_argument("--template", default=TEMPLATE)
    args = ap.parse_args()
    runs, left_out = [], []
    for d in args.dirs or discover():
        r = Run(d)
        if r.meta["device"] == DEVICE:
            runs.append(r)
        else:
            left_out.append("%s (%s)" % (r.name, r.meta["device"]))
    runs.sort(key=lambda r: r.meta["date"])
    with open(args.template) as f:
        text = render(f.read(), runs, left_out)
    with open(args.doc, "w") as f:
        f.write(text)
    print("publish: %s from %d run(s)" % (args.doc, len(runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
