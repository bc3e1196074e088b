"""Unit tests of publish.py on a small synthetic run (tests/test_eval_doc.sh runs them with
unittest): every figure it prints is the median of the cells' values with an interval
around it, targets follow the interval rule, one repeat is no claim, an experiment
without GPU cells is listed as not run, and a sim run is left out."""

import json
import os
import shutil
import statistics
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import experiments  # noqa: E402
import publish  # noqa: E402

# latflood's latency tenant's p99 (ms) in each repeat, and its other figures.
P99 = {"alone-native": [2.0, 2.1, 1.9], "alone-detshare": [2.0, 2.0, 2.0],
       "native-mps": [10.0, 9.0, 11.0],
       "detshare-slo-aware": [2.1, 2.2, 2.3],   # 1.05-1.15x alone: met
       "detshare-shared": [3.0, 3.2, 3.4],      # 1.5-1.7x: missed
       "detshare-static": [2.2, 2.6, 2.4]}      # 1.1-1.3x: across 1.2
FLOOD = {"alone-native": [100.0, 101.0, 99.0], "alone-detshare": [100.0, 100.0, 100.0],
         "native-mps": [90.0, 92.0, 91.0], "detshare-slo-aware": [95.0, 94.0, 96.0],
         "detshare-shared": [90.0, 91.0, 89.0], "detshare-static": [60.0, 61.0, 59.0]}


def cell(exp, sc, rep, metrics, busy):
    return {"experiment": exp, "scenario": sc, "repeat": rep, "metrics": metrics, "ok": True,
            "key": "%s@%s@r%d" % (exp, sc, rep), "window": 2, "params": {},
            "cpu_busy": busy, "load_start": 1.0 + rep, "load_end": 1.5 + rep,
            "jobs_cores": 0.5 * rep, "server_cores": 0.25,
            "clocks_start": "%d, 3201, 40, 120.5" % (1900 + rep),
            "clocks_end": "1980, 3201, %d, 300.25" % (40 + rep)}


def latflood_cells():
    out = []
    for sc in P99:
        for i in range(3):
            lat = {"p50_ms": P99[sc][i] / 2, "p99_ms": P99[sc][i]}
            flood = {"kernels_per_s": FLOOD[sc][i]}
            if sc.startswith("alone"):
                out += [cell("latflood", sc + ":lat", i + 1, {"lat": lat}, 0.1 + i / 100),
                        cell("latflood", sc + ":flood", i + 1, {"flood": flood}, 0.2)]
            else:
                out.append(cell("latflood", sc, i + 1, {"lat": lat, "flood": flood},
                                0.3 + i / 100))
    return out


def train_small_cells():
    """One repeat of train-small: its targets are no claim."""
    def steps(lstm, mlp):
        return {"lstm": {"steps_per_s": lstm}, "mlp": {"steps_per_s": mlp}}
    return [cell("train-small", "alone-native:lstm", 1, {"lstm": {"steps_per_s": 100.0}}, 0.1),
            cell("train-small", "alone-native:mlp", 1, {"mlp": {"steps_per_s": 300.0}}, 0.1),
            cell("train-small", "native-timesliced", 1, steps(90.0, 270.0), 0.1),
            cell("train-small", "native-mps", 1, steps(80.0, 240.0), 0.1),
            cell("train-small", "detshare-shared", 1, steps(95.0, 285.0), 0.1)]


def write_run(path, device, cells):
    os.makedirs(path)
    with open(os.path.join(path, "meta.json"), "w") as f:
        json.dump({"profile": "quick", "device": device, "commit": "abc1234", "repeats": 3,
                   "date": "2026-11-27T10:00:00Z", "cpus": 16, "gpu": "Test GPU",
                   "driver": "1.2"}, f)
    with open(os.path.join(path, "cells.jsonl"), "w") as f:
        for c in cells:
            f.write(json.dumps(c) + "\n")


def tables(text):
    """The markdown tables of text: lists of rows, each {header: cell}."""
    out, cur, head = [], None, None
    for line in text.splitlines():
        if not line.startswith("|"):
            cur = None
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cur is None:
            head, cur = cells, []
            out.append(cur)
        elif not all(c == "---" for c in cells):
            cur.append(dict(zip(head, cells)))
    return out


def table_by(text, *first):
    return next(t for t in tables(text) if t and list(t[0])[:len(first)] == list(first))


def section(doc, name):
    return doc.split("## %s\n" % name)[1].split("\n## ")[0]


class Publish(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        gpu, sim = os.path.join(cls.tmp, "eval-cuda-quick"), os.path.join(cls.tmp, "eval-sim")
        write_run(gpu, "cuda", latflood_cells() + train_small_cells())
        write_run(sim, "sim", [])
        template = "@RUNS@\n\n@HEADLINE@\n" + "".join(
            "\n## %s\n\n@RESULTS %s@\n" % (n, n) for n in experiments.EXPERIMENTS)
        cls.doc = publish.render(template, [publish.Run(gpu)], ["eval-sim (sim)"])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def check_figure(self, text, values):
        """text is values' median, with an interval within them around it (to the three
        digits printed)."""
        med, _, ci = text.partition(" [")
        self.assertEqual(med, publish.num(statistics.median(values)))
        lo, hi = [float(x) for x in ci.rstrip("]").split(", ")]
        m, slack = statistics.median(values), 0.005 * max(abs(v) for v in values)
        self.assertTrue(min(values) - slack <= lo <= m + slack and
                        m - slack <= hi <= max(values) + slack, (text, values))

    def test_every_figure_is_the_median_of_its_cells(self):
        sec = section(self.doc, "latflood")
        rows = {r["mode"]: r for r in table_by(sec, "mode", "repeats")}
        self.assertEqual(sorted(rows), sorted(sc for sc in P99 if not sc.startswith("alone")))
        for sc, r in rows.items():
            self.assertEqual(r["repeats"], "3")
            self.check_figure(r["latency p99 (ms)"], P99[sc])
            self.check_figure(r["latency p50 (ms)"], [v / 2 for v in P99[sc]])
            self.check_figure(r["flood kernels/s"], FLOOD[sc])
        alone = {r["job alone (repeats)"]: r for r in table_by(sec, "job alone (repeats)")}
        nat = alone["latency p99 (ms)"]["alone natively"]
        self.assertTrue(nat.endswith(" (3)"), nat)
        self.check_figure(nat[:-4], P99["alone-native"])
        self.assertEqual(alone["latency p99 (ms)"]["alone under MPS"], "not run")
        self.check_figure(alone["flood kernels/s"]["detshare / native"],
                          [a / b for a, b in zip(FLOOD["alone-detshare"], FLOOD["alone-native"])])

    def test_targets_follow_the_interval_rule(self):
        sec = section(self.doc, "latflood")
        v = {(r["target"], r["mode"]): r for r in table_by(sec, "target")}
        p99 = "latency p99 <= 1.2x alone"
        self.assertEqual(v[p99, "detshare-slo-aware"]["verdict"], "met")
        self.assertTrue(v[p99, "detshare-shared"]["verdict"].startswith("missed by"))
        self.assertTrue(v[p99, "detshare-static"]["verdict"].startswith("inconclusive"))
        ratios = [a / b for a, b in zip(P99["detshare-static"], P99["alone-detshare"])]
        self.assertEqual(v[p99, "detshare-static"]["per repeat"],
                         ", ".join(publish.num(x) for x in ratios))
        self.check_figure(v[p99, "detshare-static"]["ratio (or figure)"], ratios)
        self.assertEqual(v["flood >= 0.9x its native MPS rate", "detshare-static"]["verdict"]
                         .split()[0], "missed")
        head = {(r["experiment"], r["target"], r["mode"]): r["verdict"]
                for r in table_by(self.doc, "experiment", "target")}
        self.assertEqual(head["latflood", p99, "detshare-slo-aware"], "met")

    def test_one_repeat_is_no_claim(self):
        sec = section(self.doc, "train-small")
        rows = table_by(sec, "target")
        self.assertEqual(len(rows), 2)
        for r in rows:
            self.assertEqual((r["repeats"], r["verdict"]), ("1", "no claim (one repeat)"))
        agg = {r["mode"]: r for r in table_by(sec, "mode", "repeats")}
        self.assertEqual(agg["detshare-shared"]["aggregate (each job vs alone, summed)"],
                         publish.num(95 / 100 + 285 / 300))

    def test_experiments_without_gpu_cells_are_listed_as_not_run(self):
        never = [n for n in experiments.EXPERIMENTS if n not in ("latflood", "train-small")]
        line = [ln for ln in self.doc.splitlines() if ln.startswith("Not run on a GPU yet")]
        self.assertEqual(line, ["Not run on a GPU yet: %s." % ", ".join(
            "`%s`" % n for n in never)])
        for n in never:
            self.assertEqual(section(self.doc, n).strip(), "*Not run on a GPU yet.*")
        self.assertIn("Not in this run: alone-native-mps:lat, alone-native-mps:flood, "
                      "native-timesliced, native-mps-part, detshare-temporal, "
                      "detshare-tpot-first.", section(self.doc, "latflood"))

    def test_the_host_and_device_beside_each_mode(self):
        rows = {r["cells of"]: r for r in table_by(section(self.doc, "latflood"), "cells of")}
        r = rows["detshare-shared"]
        self.assertEqual((r["cells"], r["CPU busy (share of 16 cores)"], r["load average"],
                          r["cores used by the jobs"], r["by the server and executors"]),
                         ("3", "0.3-0.32", "2-4.5", "0.5-1.5", "0.25"))
        self.assertEqual((r["SM MHz"], r["memory MHz"], r["GPU C"], r["GPU W"]),
                         ("1901-1980", "3201", "40-43", "120-300"))

    def test_runs_and_what_is_left_out(self):
        runs = table_by(self.doc, "run", "device")
        self.assertEqual([(r["run"], r["driver"], r["commit"], r["CPU cores"], r["cells"])
                          for r in runs], [("eval-cuda-quick", "1.2", "abc1234", "16", "29")])
        self.assertIn("Left out (runs on the sim, which check the harness, not detshare): "
                      "eval-sim (sim).", self.doc)
        self.assertIn("Calibration: not calibrated in this run", section(self.doc, "latflood"))

    def test_the_template_must_place_every_experiment_once(self):
        full = "".join("@RESULTS %s@\n" % n for n in experiments.EXPERIMENTS)
        publish.render(full, [])
        with self.assertRaises(ValueError):
            publish.render(full.replace("@RESULTS llm@\n", ""), [])
        with self.assertRaises(ValueError):
            publish.render(full + "@RESULTS infer@\n", [])
        with self.assertRaises(ValueError):
            publish.render(full + "@RESULTS nosuch@\n", [])


if __name__ == "__main__":
    unittest.main()
