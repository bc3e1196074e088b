"""Unit tests of workloads.py's loops, which the sim never runs (its jobs are latflood
stand-ins): driven here by a fake clock, fake requests and fake device events, without
PyTorch.  Also the experiments' command lines and the calibration's verdicts.
tests/test_eval.sh runs them with unittest."""

import json
import os
import random
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import calibrate  # noqa: E402
import experiments  # noqa: E402
import modes  # noqa: E402
import workloads  # noqa: E402


class Clock:
    """Time that passes only when sleep() or the fakes advance it."""

    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += max(0.0, s)


class NoSync(workloads.Sync):
    def __init__(self):
        super().__init__(None)


class Serving(unittest.TestCase):
    def serve(self, service_s, rate, secs=10.0):
        clock = Clock()

        def request():
            clock.t += service_s
        return workloads.serve_phase(request, rate, clock(), clock() + secs,
                                     random.Random(1), clock, clock.sleep), clock

    def test_an_idle_server_answers_each_request_in_its_service_time(self):
        p, _ = self.serve(0.002, 50)
        self.assertEqual(p["dropped"], 0)
        self.assertTrue(400 < p["done"] < 600, p["done"])  # Poisson: 500 expected
        self.assertTrue(all(abs(ms - 2.0) < 1e-6 or ms > 2.0 for ms in p["ms"]))
        self.assertLess(sorted(p["ms"])[len(p["ms"]) // 2], 2.5)

    def test_an_overloaded_phase_ends_on_time_with_its_backlog_dropped(self):
        p, clock = self.serve(0.05, 50)  # 2.5 times what it can serve
        self.assertGreater(p["dropped"], 0)
        self.assertEqual(p["done"] + p["dropped"], len(p["ms"]))
        self.assertLessEqual(clock(), 100.0 + 10.0 + 0.05)
        self.assertGreater(max(p["ms"]), 1000)  # queueing shows in the tail

    def test_rates(self):
        self.assertEqual(workloads.parse_rates("12.5,25"), ("fixed", [12.5, 25.0]))
        self.assertEqual(workloads.parse_rates("auto:0.3,0.6"), ("auto", [0.3, 0.6]))
        for bad in ["", "auto:", "1,-2", "x"]:
            with self.assertRaises(ValueError):
                workloads.parse_rates(bad)

    def test_auto_rates_are_fractions_of_the_closed_loop_rate(self):
        clock = Clock()

        def request():
            clock.t += 0.004
        out = workloads.serve(request, 2.0, "auto:0.25,0.5", NoSync(), clock, clock.sleep)
        self.assertAlmostEqual(out["service_ms"], 4.0)
        self.assertEqual([round(p["rate"], 6) for p in out["phases"]], [62.5, 125.0])


class Event:
    t = None


class Timer:
    """Device events stamped with the fake clock; wait() costs the host gap (a
    synchronising round trip during which the device has nothing queued)."""

    def __init__(self, clock, gap):
        self.clock, self.gap = clock, gap

    def event(self):
        return Event()

    def record(self, e):
        e.t = self.clock()

    def wait(self, e):
        self.clock.t += self.gap

    def elapsed(self, a, b):
        return (b.t - a.t) * 1e3


class Stepping(unittest.TestCase):
    def steps(self, gap):
        clock = Clock()

        def step():
            clock.t += 0.010
        return workloads.run_steps(step, 5.0, NoSync(), Timer(clock, gap), clock)

    def test_a_fed_device_is_busy_throughout(self):
        out = self.steps(0.0)
        self.assertAlmostEqual(out["busy"], 1.0, places=6)
        self.assertAlmostEqual(out["steps_per_s"], 100.0, delta=1.0)

    def test_host_gaps_show_as_idle_device_time(self):
        out = self.steps(0.010)
        self.assertAlmostEqual(out["busy"], 0.5, delta=0.01)
        self.assertAlmostEqual(out["steps_per_s"], 50.0, delta=1.0)

    def test_the_hosts_queueing_time_is_counted_per_step(self):
        # Each step() takes 10 ms of the fake clock to queue; the thread's CPU clock
        # advances 4 ms a step (a stand-in for time.thread_time).
        clock = Clock()
        cpu = Clock()

        def step():
            clock.t += 0.010
            cpu.t += 0.004
        out = workloads.run_steps(step, 5.0, NoSync(), Timer(clock, 0.010), clock,
                                  lambda: cpu.t)
        self.assertAlmostEqual(out["queue_ms"], 10.0, places=6)
        self.assertAlmostEqual(out["cpu_ms"], 4.0, delta=0.1)


class Barrier(unittest.TestCase):
    def test_waits_for_every_job_of_the_cell_and_gives_up_at_the_limit(self):
        with tempfile.TemporaryDirectory() as d:
            clock = Clock()
            open(os.path.join(d, "ready.1"), "w").close()
            workloads.Sync("%s 2" % d, clock, clock.sleep).ready()  # the other one is there
            with self.assertRaises(RuntimeError):
                workloads.Sync("%s 3" % d, clock, clock.sleep).ready()
            s = workloads.Sync("%s 2" % d, clock, clock.sleep)
            s.mark("done")
            self.assertTrue(s.others_measuring())
            open(os.path.join(d, "done.1"), "w").close()
            self.assertFalse(s.others_measuring())


class Commands(unittest.TestCase):
    def test_every_job_has_a_command_on_both_devices(self):
        cal = {"infer": {"rates": "50,100"}}
        for exp in experiments.EXPERIMENTS.values():
            params = dict(exp.params, **cal.get(exp.name, {}))
            for dev in ("sim", "cuda"):
                run = experiments.Run("/b", dev, 6.0, params, "/py")
                for j in exp.jobs:
                    argv = j.command(run)
                    self.assertTrue(all(isinstance(a, str) for a in argv), argv)
                    if dev == "cuda" and j.torch():
                        self.assertEqual(argv[:4], ["/py", os.path.join(
                            experiments.HERE, "workloads.py"), argv[2], "6"])
                        self.assertIn(argv[2], workloads.JOBS)
                    elif argv[0] == sys.executable:  # standin.py's Python stand-ins
                        self.assertEqual(argv[1:5], [os.path.join(
                            experiments.HERE, "standin.py"), argv[2], "6",
                            "/b/bench/eval/spin.fatbin"])
                    else:
                        self.assertEqual(argv[0], "/b/bench/latflood")
            for sc in modes.scenarios(exp, "cuda") + modes.scenarios(exp, "sim"):
                env = sc.partition(":")[0]
                self.assertTrue(env in modes.alone_envs("cuda") + modes.pair_modes("cuda")
                                or experiments.pulse_of(env), sc)

    def test_pulse_modes_give_the_beat(self):
        self.assertEqual(experiments.pulse_of("detshare-pulse-flip-100"), ("flip", 10))
        self.assertEqual(experiments.pulse_of("detshare-pulse-flip-200"), ("flip", 5))
        self.assertEqual(experiments.pulse_of("detshare-pulse-fixed")[0], "fixed")
        self.assertIsNone(experiments.pulse_of("detshare-shared"))

    def test_quick_keeps_the_alone_runs_its_ratios_need(self):
        exp = experiments.EXPERIMENTS["train-small"]
        envs = modes.exp_alone_envs(exp, "cuda", ["detshare-shared"])
        self.assertEqual(set(envs), {"alone-native", "alone-detshare"})


class Calibrating(unittest.TestCase):
    """The calibration's choice, from trials faked by their scenario."""

    def calibrate(self, contended_p99, busy):
        exp = experiments.EXPERIMENTS["infer"]

        class Args:
            device, build, budget, torch_python, out = "cuda", "/b", 0, "/py", "/tmp"

        def cell(args, e, scenario, key, tmp, params, secs, sampler=None):
            if scenario == "alone-native:lat":
                m = {"lat": {"p99_ms_2": 10.0, "rate_1": 60.0, "rate_2": 120.0,
                             "service_ms": 5.0}}
            elif scenario == "alone-native:be":
                m = {"be": {"busy": busy(params)}}
            else:
                m = {"lat": {"p99_ms_2": contended_p99(params)}}
            return {"ok": True, "metrics": m}
        return calibrate.Calibration(Args, exp, cell, 6, "/tmp", 0).run()

    def test_the_first_candidate_that_contends_is_kept(self):
        e = self.calibrate(lambda p: 20.0 if p["n"] == 16384 else 11.0, lambda p: 0.97)
        self.assertTrue(e["ok"])
        self.assertEqual(e["chosen"], 2)
        self.assertEqual(e["params"]["rates"], "60,120")
        self.assertEqual(len(e["candidates"]), 2)
        # The SLO the server is told: 1.2 times the p99 alone at rate 2 (10 ms).
        self.assertAlmostEqual(e["params"]["slo"], 12.0)
        self.assertEqual(experiments.INFER.jobs[0].slo(type("R", (), {"params": e["params"]})),
                         12.0)

    def test_an_idle_flood_does_not_pass_and_the_closest_is_kept(self):
        e = self.calibrate(lambda p: 30.0 if p["batch"] == 64 else 12.0, lambda p: 0.5)
        self.assertFalse(e["ok"])
        self.assertEqual(len(e["candidates"]), len(experiments.INFER.calib.candidates))
        self.assertEqual(e["params"]["batch"], 64)
        json.dumps(e)


if __name__ == "__main__":
    unittest.main()
