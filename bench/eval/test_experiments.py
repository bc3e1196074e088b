"""Unit tests of issue 28's later experiments' plain parts, without PyTorch or a server:
llm.py's trace and continuous batching (a fake engine on a fake clock), det.py's
comparisons (fake computations), and report.py's references that the experiments add
(a job standing for its copies alone, the best native baseline, targets on a figure
itself, det's mismatches against native alone).  tests/test_eval.sh runs them."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import det  # noqa: E402
import experiments  # noqa: E402
import llm  # noqa: E402
import modes  # noqa: E402
import report  # noqa: E402


class Clock:
    def __init__(self):
        self.t = 50.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += max(0.0, s)


class Engine:
    """Prefill costs prefill_s a prompt token, a decode step step_s plus row_s a row."""

    def __init__(self, clock, step_s=0.01, row_s=0.0, prefill_s=0.0):
        self.clock, self.step_s, self.row_s, self.prefill_s = clock, step_s, row_s, prefill_s
        self.rows, self.batches = 0, []

    def prefill(self, row0, lens):
        self.rows = row0 + len(lens)  # new requests join after the running ones
        self.clock.t += self.prefill_s * sum(lens)

    def decode(self, n):
        assert n <= self.rows
        self.rows = n
        self.batches.append(n)
        self.clock.t += self.step_s + self.row_s * n

    def move(self, src, dst):
        assert dst < src < self.rows  # the last row fills a hole


class Serving(unittest.TestCase):
    def serve(self, reqs, secs=5.0, max_batch=16, **kw):
        clock = Clock()
        eng = Engine(clock, **kw)
        loop = llm.serve_llm(eng, reqs, clock(), clock() + secs, max_batch, clock, clock.sleep)
        return loop, eng, clock

    def test_the_trace_is_bursty_and_the_same_each_time(self):
        a, b = llm.trace(50, 60), llm.trace(50, 60)
        self.assertEqual([r.arrival for r in a], [r.arrival for r in b])
        self.assertTrue(2400 < len(a) < 3600, len(a))
        gaps = [y.arrival - x.arrival for x, y in zip(a, a[1:])]
        mean = sum(gaps) / len(gaps)
        cv = (sum((g - mean) ** 2 for g in gaps) / len(gaps)) ** 0.5 / mean
        self.assertGreater(cv, 1.5)  # Poisson's would be 1
        self.assertTrue(all(192 <= r.plen <= 576 and 48 <= r.olen <= 144 for r in a))

    def test_requests_get_every_token_and_leave(self):
        reqs = [llm.Request(0.0, 10, 5), llm.Request(0.0, 10, 3), llm.Request(0.001, 10, 4)]
        loop, eng, _ = self.serve(reqs)
        self.assertEqual([len(r.times) for r in reqs], [5, 3, 4])
        self.assertEqual(loop["prefills"], 2)  # two arrived at once, one just after
        # First tokens come from the prefills, the rest one a decode step each.
        self.assertEqual(sum(eng.batches), 5 + 3 + 4 - 3)

    def test_the_batch_is_capped_and_later_arrivals_wait(self):
        reqs = [llm.Request(0.0, 10, 10) for _ in range(6)]
        loop, eng, _ = self.serve(reqs, max_batch=4)
        self.assertEqual(max(eng.batches), 4)
        self.assertTrue(all(len(r.times) == 10 for r in reqs))
        late = reqs[4:]
        self.assertGreater(min(r.times[0] for r in late), max(r.times[0] for r in reqs[:4]))

    def test_a_prefill_stalls_the_running_requests_tokens(self):
        reqs = [llm.Request(0.0, 10, 50), llm.Request(0.2, 1000, 5)]
        self.serve(reqs, prefill_s=0.0001)  # the second prompt takes 0.1 s
        gaps = [b - a for a, b in zip(reqs[0].times, reqs[0].times[1:])]
        self.assertAlmostEqual(min(gaps), 0.01, places=6)
        self.assertGreater(max(gaps), 0.1)

    def test_measure_counts_the_window_and_bounds_the_unstarted(self):
        reqs = [llm.Request(0.5, 10, 3), llm.Request(1.5, 10, 3), llm.Request(2.5, 10, 3)]
        reqs[1].times = [51.6, 51.7, 51.8]
        reqs[2].times = []
        reqs[0].times = [50.6, 50.7, 51.1]
        m = llm.measure(reqs, 50.0, 51.0, 53.0)
        self.assertEqual((m["requests"], m["finished"], m["unstarted"]), (2, 1, 1))
        self.assertEqual(m["ttft_ms"], [100.0, 500.0])
        self.assertEqual(m["tpot_ms"], [100.0, 100.0])
        self.assertAlmostEqual(m["tokens_per_s"], 4 / 2.0)

    def test_the_slo_is_fixed_from_the_tpot_alone(self):
        clock = Clock()

        class NoSync:
            def ready(self):
                pass

            def mark(self, what):
                pass
        out = llm.run(Engine(clock, step_s=0.02), {"rate": 5, "slo": "auto:1.5"}, 10.0, 1.0,
                      NoSync(), clock, clock.sleep)
        self.assertAlmostEqual(out["auto_slo"], 30.0, places=3)
        m = llm.summary(dict(out, slo_ms=15.0))
        self.assertEqual(m["slo_viol"], 1.0)
        self.assertEqual(llm.summary(dict(out, slo_ms=35.0))["slo_viol"], 0.0)
        self.assertEqual(llm.parse_slo("12.5"), ("fixed", 12.5))


def fake_compute(drift_every=0):
    n = [0]

    def compute(sliced):
        n[0] += 1
        off = sliced and drift_every and n[0] % drift_every == 0
        return {"lm": "b" if sliced else "a", "loss": "x", "tokens": [1, 2, 3 if not off else 4],
                "top2": [[1, 0], [2, 0], [3, 4] if not off else [4, 3]],
                "losses": [1.0, 0.5 + (1e-6 if sliced else 0)]}
    return compute


class Determinism(unittest.TestCase):
    def test_the_slicing_baseline_counts_its_drift(self):
        out = det.trials(fake_compute(drift_every=2), 5, 4)
        s = out["sliced"]
        self.assertEqual((s["bitwise"], s["loss_bitwise"]), (5, 0))
        self.assertEqual((s["tokens"], s["token_trials"], s["inversions"]), (5, 5, 5))
        self.assertAlmostEqual(s["loss_drift"], 1e-6)
        m = det.summary(out)
        self.assertEqual((m["lm_distinct"], m["sliced_tokens"]), (1, 5))

    def test_mismatches_against_the_reference(self):
        ref = det.summary(det.trials(fake_compute(), 3, 0))
        cell = dict(ref, lm_prints=["a", "z", "a"], tokens=[1, 9, 3])
        self.assertEqual(det.against(cell, ref),
                         {"vs_native_lm": 1, "vs_native_loss": 0, "vs_native_tokens": 1})
        self.assertNotIn("sliced_bitwise", ref)


def cell(exp, sc, rep, metrics):
    return {"experiment": exp, "scenario": sc, "repeat": rep, "metrics": metrics, "ok": True}


class Reporting(unittest.TestCase):
    def test_copies_of_a_job_use_its_alone_cells(self):
        s4 = experiments.EXPERIMENTS["scale-4"]
        self.assertEqual(modes.scenarios(s4, "sim"), modes.exp_modes(s4, "sim"))
        cells = [cell("scale-2", "alone-detshare:lat1", r, {"lat1": {"p99_ms_1": 10.0}})
                 for r in (1, 2)]
        cells += [cell("scale-2", "alone-detshare:be1", r, {"be1": {"steps_per_s": 100.0}})
                  for r in (1, 2)]
        cells += [cell("scale-4", "detshare-shared", r, {
            "lat1": {"p99_ms_1": 11.0}, "lat2": {"p99_ms_1": 30.0},
            "be1": {"steps_per_s": 40.0}, "be2": {"steps_per_s": 60.0}}) for r in (1, 2)]
        res = report.experiment_results(s4, "sim", cells)
        row = res["rows"][0]
        self.assertAlmostEqual(row["vs_alone"]["lat1.p99_ms_1"]["median"], 1.1)
        self.assertAlmostEqual(row["figures"]["*.agg"]["median"], 1.0)  # be only: 0.4 + 0.6
        t = [t for t in res["targets"] if t["mode"] == "detshare-shared"][0]
        self.assertEqual(t["verdict"], "met")

    def test_the_best_native_baseline_and_figures_against_a_bound(self):
        exp = experiments.LLM
        cells = []
        for r in (1, 2, 3):
            cells += [cell("llm", "native-timesliced", r, {"llm": {"slo_viol": 0.2}}),
                      cell("llm", "native-mps", r, {"llm": {"slo_viol": 0.4}}),
                      cell("llm", "detshare-tpot-first", r, {"llm": {"slo_viol": 0.1}}),
                      cell("llm", "detshare-shared", r, {"llm": {"slo_viol": 0.3}})]
        res = report.experiment_results(exp, "cuda", cells)
        v = {t["mode"]: t for t in res["targets"] if "best native" in t["target"]}
        self.assertEqual(v["detshare-tpot-first"]["per_repeat"], [0.5, 0.5, 0.5])
        self.assertEqual(v["detshare-tpot-first"]["verdict"], "met")
        self.assertEqual(v["detshare-shared"]["verdict"], "missed")
        sim = report.experiment_results(exp, "sim", [c for c in cells
                                                     if c["scenario"].startswith("detshare")])
        self.assertEqual([t["verdict"] for t in sim["targets"] if "best native" in t["target"]],
                         ["not run", "not run"])

    def test_det_mismatches_come_from_the_native_alone_run(self):
        ref = det.summary(det.trials(fake_compute(), 3, 0))
        cells = []
        for r in (1, 2):  # one repeat would be no claim either way
            cells += [cell("determinism", "alone-native:det", r, {"det": dict(ref)}),
                      cell("determinism", "detshare-static", r, {"det": dict(ref)}),
                      cell("determinism", "detshare-shared", r, {
                          "det": dict(ref, lm_prints=["a", "q", "q"])})]
        experiments.det_derive(cells, "cuda")
        res = report.experiment_results(experiments.DETERMINISM, "cuda", cells)
        v = {(t["mode"], t["target"][:5]): t["verdict"] for t in res["targets"]}
        self.assertEqual(v[("detshare-static", "0 LM-")], "met")
        self.assertEqual(v[("detshare-shared", "0 LM-")], "missed")
        md = report.markdown({"device": "cuda", "profile": "quick", "gpu": "g", "driver": "d",
                              "date": "-", "commit": "-", "cpus": 2, "repeats": 1},
                             [res], {}, None, cells, {})
        self.assertIn("| 0 LM-head trials differ from native alone | detshare-shared | 2 ", md)


if __name__ == "__main__":
    unittest.main()
