"""bench/eval's calibration (run.sh --calibrate): per experiment, parameters under which
it measures what it claims to, on the device at hand, kept in OUT/calibration.json.

For each candidate of the experiment's Calib in order (each over its defaults):
  1. the latency job alone (natively; on the sim through detshare), which also fixes the
     serve job's arrival rates where they are given as fractions ("auto:"), and any other
     "auto:" parameter P whose value the job reports as metric auto_P (llm's SLO), or else
     "auto:K" as K times the latency metric measured alone (infer's SLO);
  2. each saturating job alone, which must keep the device busy: its steps' time on the
     device's clock over the window's (from timed events) at least BUSY_MIN; on a GPU
     NVML's utilisation (nvidia-smi, every 200 ms) and the SM clock are kept beside it;
  3. all jobs together under native time-slicing (on the sim: detshare's shared policy),
     where the latency job's metric must reach min_ratio times its value alone.
The first candidate that passes is kept; when none does, the one whose latency suffered
most (else the first) is kept and the calibration says it did not pass.  An experiment
calibrated once keeps its parameters: cells run with them, and recalibrating takes
another --out.
"""

import json
import os
import subprocess
import tempfile
import threading
import time

import experiments

BUSY_MIN = 0.9
FILE = "calibration.json"


def load(out):
    """OUT's calibration: {experiment: its entry}, empty when there is none."""
    try:
        with open(os.path.join(out, FILE)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def save(out, cal):
    tmp = os.path.join(out, FILE + ".new")
    with open(tmp, "w") as f:
        json.dump(cal, f, indent=1)
    os.replace(tmp, os.path.join(out, FILE))


class NvmlSampler:
    """nvidia-smi's GPU utilisation and SM clock every 200 ms while a trial runs."""

    def start(self):
        self.rows, self.p = [], None
        try:
            self.p = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu,clocks.sm",
                                       "--format=csv,noheader,nounits", "-lms", "200"],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      text=True)
        except OSError:
            return  # no nvidia-smi: the events' busy share stands alone
        self.t = threading.Thread(target=self.read, daemon=True)
        self.t.start()

    def read(self):
        for line in self.p.stdout:
            try:
                self.rows.append([float(x) for x in line.split(",")[:2]])
            except ValueError:
                pass

    def stop(self):
        if self.p is None:
            return {"nvml_samples": 0}
        self.p.terminate()
        self.p.wait()
        self.t.join(5)
        rows = self.rows
        if not rows:
            return {"nvml_samples": 0}
        return {"nvml_samples": len(rows), "nvml_util_mean": sum(r[0] for r in rows) / len(rows),
                "sm_clock_mean": sum(r[1] for r in rows) / len(rows)}


def run(args, done, run_cell, window, begun):
    """Calibrate args.experiments not yet in OUT's calibration; 0 when done, 2 when an
    experiment already has cells, 3 when out of --budget, 1 when a calibration failed."""
    cal = load(args.out)
    has_cells = {k.split("@")[0] for k in done}
    with tempfile.TemporaryDirectory(prefix="ds-calib-") as tmp:
        for name in args.experiments:
            exp = experiments.EXPERIMENTS[name]
            if exp.calib is None or name in cal:
                continue
            if name in has_cells:
                print("run.sh: %s already has cells in %s, run with its default parameters: "
                      "calibrate into another --out" % (name, args.out), flush=True)
                return 2
            entry = Calibration(args, exp, run_cell, window(args, exp), tmp, begun).run()
            if entry is None:
                print("run.sh: out of --budget while calibrating %s; run again to go on"
                      % name, flush=True)
                return 3
            if any(str(v).startswith("auto:") for v in entry["params"].values()):
                print("run.sh: calibrating %s failed: no run of its latency job alone "
                      "finished (raw/calib@%s@*)" % (name, name), flush=True)
                return 1
            cal[name] = entry
            save(args.out, cal)
            print("run.sh: calibrated %s: %s, parameters %s" % (
                name, "passed" if entry["ok"] else "NOT PASSED (kept the closest)",
                json.dumps(entry["params"], sort_keys=True)), flush=True)
    return 0


class Calibration:
    """One experiment's calibration; run() returns its entry, or None out of budget."""

    def __init__(self, args, exp, run_cell, secs, tmp, begun):
        self.args, self.exp, self.run_cell, self.secs = args, exp, run_cell, secs
        self.tmp, self.begun = tmp, begun
        cuda = args.device == "cuda"
        self.alone = "alone-native" if cuda else "alone-detshare"
        self.contended = "native-timesliced" if cuda else "detshare-shared"
        self.cache = {}

    def trial(self, scenario, params, label, sampler=False):
        """A cell outside the plan (raw/calib@EXP@LABEL@...): its record, reused for the
        same scenario and command lines; None out of budget."""
        env, _, alone = scenario.partition(":")
        run = experiments.Run(self.args.build, self.args.device, self.secs, params,
                              self.args.torch_python, env, getattr(self.args, "profile", "quick"))
        jobs = [j for j in self.exp.jobs if not alone or j.name == alone]
        what = json.dumps([scenario] + [j.command(run) for j in jobs])
        if what in self.cache:
            return self.cache[what]
        if self.args.budget and time.time() + self.secs + 20 > self.begun + self.args.budget:
            return None
        key = "calib@%s@%s@%s" % (self.exp.name, label, scenario.replace(":", "@"))
        t0 = time.time()
        try:
            rec = self.run_cell(self.args, self.exp, scenario, key, self.tmp, params, self.secs,
                                NvmlSampler() if sampler else None)
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            rec = {"ok": False, "errors": [str(e)], "metrics": {}}
        print("calibrate %s %s %s: %s in %.1f s" % (
            self.exp.name, label, scenario,
            "ok" if rec["ok"] else "FAILED (%s)" % "; ".join(rec.get("errors", [])),
            time.time() - t0), flush=True)
        self.cache[what] = rec
        return rec

    def candidate(self, i, over):
        """Trials of candidate i; its summary, or None out of budget."""
        c = self.exp.calib
        params = dict(self.exp.params, **over)
        label = "c%d" % i
        res = {"candidate": i, "over": over, "busy": {}, "device": {}, "errors": []}
        if c.lat:
            rec = self.trial("%s:%s" % (self.alone, c.lat), params, label)
            if rec is None:
                return None
            m = rec["metrics"].get(c.lat, {})
            if rec["ok"] and str(params.get("rates", "")).startswith("auto:"):
                n = sum(1 for k in m if k.startswith("rate_"))
                params["rates"] = ",".join("%.4g" % m["rate_%d" % k] for k in range(1, n + 1))
                res["service_ms"] = m.get("service_ms")
            for k in [k for k, v in params.items() if str(v).startswith("auto:")]:
                if rec["ok"] and m.get("auto_" + k) is not None:
                    params[k] = m["auto_" + k]  # fixed by the job itself (llm's slo)
                elif rec["ok"] and m.get(c.metric) is not None:
                    # K times the latency measured alone (infer's slo: its p99 alone)
                    params[k] = round(float(str(params[k])[5:]) * m[c.metric], 3)
            res["alone"] = m.get(c.metric)
            res["errors"] += rec.get("errors", [])
        for j in [j for j in self.exp.jobs if j.saturating]:
            rec = self.trial("%s:%s" % (self.alone, j.name), params, label,
                             sampler=self.args.device == "cuda")
            if rec is None:
                return None
            res["busy"][j.name] = rec["metrics"].get(j.name, {}).get("busy")
            res["device"][j.name] = rec.get("device")
            res["errors"] += rec.get("errors", [])
        if c.lat and res["alone"] is not None:
            rec = self.trial(self.contended, params, label)
            if rec is None:
                return None
            res["contended"] = rec["metrics"].get(c.lat, {}).get(c.metric)
            res["errors"] += rec.get("errors", [])
        res["params"] = params
        busy_ok = all(b is not None and b >= BUSY_MIN for b in res["busy"].values())
        res["ratio"] = res["contended"] / res["alone"] if res.get("contended") and \
            res.get("alone") else None
        lat_ok = not c.lat or (res["ratio"] is not None and res["ratio"] >= c.min_ratio)
        res["ok"] = busy_ok and lat_ok and not res["errors"]
        return res

    def run(self):
        tried = []
        for i, over in enumerate(self.exp.calib.candidates, 1):
            res = self.candidate(i, over)
            if res is None:
                return None
            tried.append(res)
            if res["ok"]:
                break
        ok = [r for r in tried if r["ok"]]
        if ok:
            pick = ok[0]
        elif self.exp.calib.lat:
            pick = max(tried, key=lambda r: r["ratio"] or 0)
        else:
            pick = tried[0]
        return {"params": pick["params"], "ok": bool(ok), "chosen": pick["candidate"],
                "candidates": tried, "alone": self.alone, "contended": self.contended,
                "lat": self.exp.calib.lat, "metric": self.exp.calib.metric,
                "min_ratio": self.exp.calib.min_ratio, "busy_min": BUSY_MIN,
                "window": self.secs, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
