"""bench/eval's experiments: what each one runs, what it measures, and its targets.

An experiment is a set of jobs (one process each) run together in every co-located mode,
and each alone.  A job's command gets the measured window in seconds and prints one JSON
object on stdout; its parse() turns that into the cell's metrics for that job.  Targets
are ratios between modes, decided by stats.decide() on their bootstrap intervals.
"""

import json

from stats import percentile


class Job:
    """One process of an experiment: its name (DETSHARE_TENANT), its class
    (DETSHARE_CLASS: latency or best-effort), its command line for a window of SECS
    seconds (argv(build, secs)), and parse(stdout) -> {metric: number}."""

    def __init__(self, name, klass, argv, parse):
        self.name, self.klass, self.argv, self.parse = name, klass, argv, parse


class Target:
    """A target on one job's metric under every detshare mode: the ratio of the mode's
    figure to a reference's, in the same repeat, op ("<=" or ">=") the bound.  The
    reference is "alone" (the job alone in the same environment: alone through detshare
    for detshare's modes, alone natively for native ones) or a mode name.  A reference
    the device lacks (native modes on the sim) leaves the target out, with the reason in
    the report."""

    def __init__(self, label, job, metric, ref, op, bound):
        self.label, self.job, self.metric = label, job, metric
        self.ref, self.op, self.bound = ref, op, bound


class Experiment:
    """name, a title and a description for the report, its jobs, the
    CUDA_MPS_ACTIVE_THREAD_PERCENTAGE of each job in the native-mps-part mode, the
    metrics the report tabulates ((job, metric, label) in order) and its targets."""

    def __init__(self, name, title, about, jobs, mps_pct, metrics, targets):
        self.name, self.title, self.about = name, title, about
        self.jobs, self.mps_pct, self.metrics, self.targets = jobs, mps_pct, metrics, targets


def _latflood_bin(build):
    return "%s/bench/latflood" % build


def _parse_lat(out):
    ms = json.loads(out)["ms"]
    return {"p50_ms": percentile(ms, 50), "p99_ms": percentile(ms, 99), "kernels": len(ms)}


def _parse_flood(out):
    d = json.loads(out)
    return {"kernels_per_s": d["kernels_per_s"]}


# The sim example: kernels of 264 000 blocks of 256 threads take 1 ms on the sim's
# 132 SMs (1000 waves of 2 blocks an SM); the flood's 200 000-block kernels keep every SM
# busy.  On a GPU each block spins 4 us, about 1 ms for the latency kernel on an H100
# (1056 blocks at once); calibrating them on the device at hand is still to be done.
LAT_BLOCKS, FLOOD_BLOCKS, BLOCK_NS, GAP_MS = 264000, 200000, 4000, 1

LATFLOOD = Experiment(
    name="latflood",
    title="Latency-critical 1 ms kernels beside a best-effort flood",
    about="A latency-critical tenant launches one 1 ms kernel (%d blocks of 256 threads), "
    "waits for it and idles %d ms, over and over; a best-effort tenant floods the device "
    "with %d-block kernels back to back.  Latency: each kernel's time from launch to "
    "completion.  Flood: kernels finished per second." % (LAT_BLOCKS, GAP_MS, FLOOD_BLOCKS),
    jobs=[
        Job("lat", "latency",
            lambda build, secs: [_latflood_bin(build), "lat", str(secs), str(LAT_BLOCKS),
                                 str(BLOCK_NS), str(GAP_MS)], _parse_lat),
        Job("flood", "best-effort",
            lambda build, secs: [_latflood_bin(build), "flood", str(secs), str(FLOOD_BLOCKS),
                                 str(BLOCK_NS)], _parse_flood),
    ],
    mps_pct={"lat": 50, "flood": 50},
    metrics=[("lat", "p50_ms", "latency p50 (ms)"), ("lat", "p99_ms", "latency p99 (ms)"),
             ("flood", "kernels_per_s", "flood kernels/s")],
    targets=[
        Target("latency p99 <= 1.2x alone", "lat", "p99_ms", "alone", "<=", 1.2),
        Target("latency p99 <= 1/3 of native MPS's", "lat", "p99_ms", "native-mps", "<=",
               1 / 3),
        Target("flood >= 0.9x its native MPS rate", "flood", "kernels_per_s", "native-mps",
               ">=", 0.9),
    ],
)

EXPERIMENTS = {e.name: e for e in [LATFLOOD]}
