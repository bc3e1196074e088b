"""bench/eval's experiments: what each one runs, what it measures, and its targets.

An experiment is a set of jobs (one process each) run together in every co-located mode,
and each alone.  A job's command line comes from the run at hand (Run: the build, the
device, the window in seconds, the experiment's parameters, the Python that has PyTorch)
and prints one JSON object on stdout, which its parse() turns into the cell's metrics for
that job.  On the sim a PyTorch job's stand-in (a latflood.c mode printing the same JSON)
runs instead.  Targets are ratios between modes, decided by stats.decide() on their
bootstrap intervals.  docs/evaluation.md says what each experiment measures and why.
"""

import json
import os
import re
import sys

import det
import llm
import modes
from stats import percentile

HERE = os.path.dirname(os.path.abspath(__file__))


class Run:
    """What a job's command line depends on: build directory, device ("sim" or "cuda"),
    window in seconds, the experiment's parameters, the Python with PyTorch, the cell's
    mode and the run's profile."""

    def __init__(self, build, device, secs, params, python, mode="", profile="quick"):
        self.build, self.device, self.secs = build, device, secs
        self.params, self.python, self.mode, self.profile = params, python, mode, profile


class Job:
    """One process of an experiment: its name (DETSHARE_TENANT), its class
    (DETSHARE_CLASS: latency or best-effort), argv(run) -> its command line, parse(stdout)
    -> {metric: number}, sim(run) -> the stand-in's command line on the sim (None: argv's
    own runs there), and whether it should keep the device busy by itself (saturating:
    the calibration checks that it does).  slo(run) -> the SLO in ms the harness tells
    the server for it (detshare-ctl tenant NAME class latency slo MS), or None.  like:
    (experiment, job) whose alone cells stand for its own (the same command line), so
    that an experiment of many copies of a job runs it alone once."""

    def __init__(self, name, klass, argv, parse, sim=None, saturating=False, slo=None,
                 like=None):
        self.name, self.klass, self.argv, self.parse = name, klass, argv, parse
        self.sim, self.saturating, self.slo, self.like = sim, saturating, slo, like

    def command(self, run):
        return (self.sim if run.device == "sim" and self.sim else self.argv)(run)

    def torch(self):
        """Whether it runs PyTorch on a GPU: the jobs with a stand-in on the sim do."""
        return self.sim is not None


class Target:
    """A target on one job's metric (job "*", metric "agg": the experiment's aggregate
    normalised throughput) under detshare's modes (modes: which; default every detshare
    mode of the experiment): the ratio of the mode's figure to a reference's, in the same
    repeat, op ("<=" or ">=") the bound.  The reference is "alone" (the job alone in the
    same environment: alone through detshare for detshare's modes, alone natively for
    native ones), a mode name, "best-native" (in each repeat the best of the native
    modes that ran: the lowest figure for op "<=", the highest for ">=") or "abs" (no
    reference: the figure itself against the bound).  A reference that did not run
    (native modes on the sim, modes left out of the run) leaves the target out, with the
    reason in the report."""

    def __init__(self, label, job, metric, ref, op, bound, modes=None):
        self.label, self.job, self.metric = label, job, metric
        self.ref, self.op, self.bound, self.modes = ref, op, bound, modes


class Calib:
    """How the calibration judges an experiment: its candidate parameters in order (each
    over the experiment's defaults; the first that passes is kept), and for a latency
    experiment the latency job and metric that time-slicing must raise at least
    min_ratio times over alone."""

    def __init__(self, candidates, lat=None, metric=None, min_ratio=1.5):
        self.candidates, self.lat, self.metric = candidates, lat, metric
        self.min_ratio = min_ratio


class Experiment:
    """name, a title and a description for the report, its jobs, the
    CUDA_MPS_ACTIVE_THREAD_PERCENTAGE of each job in the native-mps-part mode, the
    metrics the report tabulates ((job, metric, label) in order) and its targets; params
    (the defaults its jobs' command lines read, which calibration may change), calib
    (None: nothing to calibrate), windows ({profile: seconds}; absent: the profile's),
    modes (None: the standard modes; else {device: its own co-located modes}, with
    alone_envs the environments its jobs run alone in), server_metrics (a function of a
    cell's server log giving metrics under the job name "server"), aggregate (a metric of
    job that has it: the report sums each job's figure relative to itself alone, as metric
    "agg" of job "*"), quick (the co-located modes --quick keeps on a GPU; None: modes.py's
    QUICK, or all of the experiment's own), start_s (a cell's seconds on a GPU beyond its
    window, for run.sh --estimate), poll_status (poll the server's status during its cells:
    harness.py's StatusPoll), derive (a function of the run's cells and device adding
    metrics that compare cells, before the report reads them), ratios (the (job, metric)
    whose ratio to alone the report tabulates; None: every job's metrics but busy)."""

    def __init__(self, name, title, about, jobs, mps_pct, metrics, targets, params=None,
                 calib=None, windows=None, modes=None, alone_envs=None, server_metrics=None,
                 aggregate=None, quick=None, start_s=15, poll_status=False, derive=None,
                 ratios=None):
        self.name, self.title, self.about = name, title, about
        self.jobs, self.mps_pct, self.metrics, self.targets = jobs, mps_pct, metrics, targets
        self.params, self.calib, self.windows = params or {}, calib, windows or {}
        self.modes, self.alone_envs = modes, alone_envs
        self.server_metrics, self.aggregate = server_metrics, aggregate
        self.quick, self.start_s, self.poll_status = quick, start_s, poll_status
        self.derive, self.ratios = derive, ratios

    def torch(self):
        return any(j.torch() for j in self.jobs)


def _latflood(run, *args):
    return ["%s/bench/latflood" % run.build] + ["%g" % a if isinstance(a, float) else str(a)
                                               for a in args]


def _torch(run, job, **kw):
    return [run.python, os.path.join(HERE, "workloads.py"), job, "%g" % run.secs] + \
        ["%s=%s" % (k, v) for k, v in sorted(kw.items())]


def _parse_lat(out):
    ms = json.loads(out)["ms"]
    return {"p50_ms": percentile(ms, 50), "p99_ms": percentile(ms, 99), "kernels": len(ms)}


def _parse_flood(out):
    d = json.loads(out)
    return {"kernels_per_s": d["kernels_per_s"], "busy": d["busy"]}


def _parse_steps(out):
    """A steps job's figures; queue_ms and cpu_ms where the job measures them (PyTorch's
    jobs do, the sim's stand-ins do not)."""
    d = json.loads(out)
    m = {"steps_per_s": d["steps_per_s"], "busy": d["busy"]}
    m.update({k: d[k] for k in ("queue_ms", "cpu_ms") if k in d})
    return m


def _parse_serve(out):
    """Per phase i (from 1): p50 and p99 of the requests' times, requests served a second,
    the rate offered and the share dropped; the rates are also the ones to keep when
    the serve job chose them itself (rates=auto:...)."""
    d = json.loads(out)
    m = {"service_ms": d["service_ms"]}
    for i, p in enumerate(d["phases"], 1):
        n = p["done"] + p["dropped"]
        m.update({"p50_ms_%d" % i: percentile(p["ms"], 50),
                  "p99_ms_%d" % i: percentile(p["ms"], 99),
                  "served_per_s_%d" % i: p["done"] / p["secs"], "rate_%d" % i: p["rate"],
                  "dropped_%d" % i: p["dropped"] / n if n else 0.0})
    return m


def _slo(r):
    """A latency job's SLO once the calibration fixed it (slo=auto:K before): llm's and
    infer's."""
    v = str(r.params.get("slo", ""))
    return None if v.startswith("auto:") or not v else float(v)


# latflood, the sim example: kernels of 264 000 blocks of 256 threads take 1 ms
# on the sim's 132 SMs (1000 waves of 2 blocks an SM); the flood's 200 000-block kernels
# keep every SM busy.  On a GPU each block spins 4 us (about 1 ms for the latency kernel
# on an H100, 1056 blocks at once); the calibration checks the pair contends.
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
            lambda r: _latflood(r, "lat", r.secs, LAT_BLOCKS, BLOCK_NS, GAP_MS), _parse_lat),
        Job("flood", "best-effort",
            lambda r: _latflood(r, "flood", r.secs, FLOOD_BLOCKS, BLOCK_NS), _parse_flood,
            saturating=True),
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
    calib=Calib([{}], lat="lat", metric="p99_ms"),
)


# infer: the GPU-bound service.  On the sim, a request is 4 kernels of 1 ms and the
# flood's steps 4 kernels of 200 000 blocks.
def _infer_be(r):
    p = r.params
    if p["be"] == "resnet-train":
        return _torch(r, "resnet-train", batch=64)
    return _torch(r, "gemm", n=p["n"], count=p["count"])


INFER = Experiment(
    name="infer",
    title="ResNet-50 inference at Poisson arrivals beside a saturating best-effort job",
    about="A latency-critical inference service (ResNet-50, torchvision, random weights, "
    "bf16, channels-last) serves requests of one batch arriving open-loop (Poisson) at two "
    "rates in turn, set by the calibration as fractions of what it serves alone natively; "
    "a best-effort job floods the device (bf16 matrix products, or ResNet-50 training).  "
    "Latency: each request's time from its arrival to its result, queueing included.  "
    "SLO: 1.2 x the service's p99 alone natively at rate 2, fixed by the calibration and "
    "told to the server (runs calibrated before 2026-11-28 told none).  "
    "Best-effort: steps finished per second.",
    jobs=[
        Job("lat", "latency",
            lambda r: _torch(r, "serve", batch=r.params["batch"], rates=r.params["rates"]),
            _parse_serve,
            sim=lambda r: _latflood(r, "serve", r.secs, LAT_BLOCKS, BLOCK_NS, 4,
                                    r.params["rates"]), slo=_slo),
        Job("be", "best-effort", _infer_be, _parse_steps,
            sim=lambda r: _latflood(r, "steps", r.secs, FLOOD_BLOCKS, BLOCK_NS, 4),
            saturating=True),
    ],
    mps_pct={"lat": 50, "be": 50},
    metrics=[("lat", "p50_ms_1", "p50 ms, rate 1"), ("lat", "p99_ms_1", "p99 ms, rate 1"),
             ("lat", "p50_ms_2", "p50 ms, rate 2"), ("lat", "p99_ms_2", "p99 ms, rate 2"),
             ("lat", "served_per_s_2", "served/s, rate 2"),
             ("be", "steps_per_s", "best-effort steps/s")],
    targets=[
        Target("p99 at rate 1 <= 1.2x alone", "lat", "p99_ms_1", "alone", "<=", 1.2),
        Target("p99 at rate 2 <= 1.2x alone", "lat", "p99_ms_2", "alone", "<=", 1.2),
        Target("p99 at rate 2 <= 1/3 of native MPS's", "lat", "p99_ms_2", "native-mps", "<=",
               1 / 3),
        Target("best-effort >= 0.9x its native MPS rate", "be", "steps_per_s", "native-mps",
               ">=", 0.9),
    ],
    params={"batch": 32, "be": "gemm", "n": 8192, "count": 4, "rates": "auto:0.3,0.6",
            "slo": "auto:1.2"},
    calib=Calib([{}, {"n": 16384, "count": 1}, {"batch": 64, "n": 16384, "count": 1},
                 {"be": "resnet-train"}], lat="lat", metric="p99_ms_2"),
    windows={"quick": 6, "full": 16},
)


# Training pairs: each job's steps a second alone and together, and the pair's aggregate
# normalised throughput (issue 9's targets: at least native MPS's, 1.2x time-slicing's).
TRAIN_TARGETS = [
    Target("aggregate >= native MPS's", "*", "agg", "native-mps", ">=", 1.0),
    Target("aggregate >= 1.2x time-slicing's", "*", "agg", "native-timesliced", ">=", 1.2),
]


def _train(name, title, about, a, b, sim_a, sim_b, params, candidates):
    return Experiment(
        name=name, title=title, about=about,
        jobs=[Job(a[0], "best-effort", a[1], _parse_steps, sim=sim_a, saturating=a[2]),
              Job(b[0], "best-effort", b[1], _parse_steps, sim=sim_b, saturating=b[2])],
        mps_pct={a[0]: 50, b[0]: 50},
        metrics=[(a[0], "steps_per_s", "%s steps/s" % a[0]),
                 (b[0], "steps_per_s", "%s steps/s" % b[0]),
                 (a[0], "busy", "%s busy" % a[0]), (b[0], "busy", "%s busy" % b[0]),
                 (a[0], "queue_ms", "%s ms queueing a step" % a[0]),
                 (b[0], "queue_ms", "%s ms queueing a step" % b[0]),
                 (a[0], "cpu_ms", "%s CPU ms a step" % a[0]),
                 (b[0], "cpu_ms", "%s CPU ms a step" % b[0])],
        targets=TRAIN_TARGETS, params=params, calib=Calib(candidates),
        windows={"quick": 5, "full": 15}, aggregate="steps_per_s")


TRAIN_COMPUTE = _train(
    "train-compute", "Two compute-bound trainers",
    "A GEMM-heavy MLP (4 layers of 8192, batch 8192, bf16 autocast, SGD) beside ResNet-50 "
    "training (batch 64, bf16 autocast, channels-last, SGD): steps a second of each, and "
    "their sum relative to each alone (aggregate normalised throughput).",
    ("mlp", lambda r: _torch(r, "mlp-train", batch=r.params["mlp_batch"]), True),
    ("resnet", lambda r: _torch(r, "resnet-train", batch=r.params["resnet_batch"]), True),
    lambda r: _latflood(r, "steps", r.secs, FLOOD_BLOCKS, BLOCK_NS, 8),
    lambda r: _latflood(r, "steps", r.secs, LAT_BLOCKS, BLOCK_NS, 4),
    {"mlp_batch": 8192, "resnet_batch": 64},
    [{}, {"mlp_batch": 16384, "resnet_batch": 128}])

TRAIN_MEMORY = _train(
    "train-memory", "Two memory-bound jobs",
    "Bandwidth-bound loops: triads (a = b + 2c) over 1 GiB float arrays beside Adam steps "
    "over 256 million parameters: steps a second of each, and their sum relative to each "
    "alone.  (The sim models no memory bandwidth: its stand-ins are kernels of other sizes.)",
    ("triad", lambda r: _torch(r, "triad", mib=r.params["mib"]), True),
    ("adam", lambda r: _torch(r, "adam", mparams=r.params["mparams"]), True),
    lambda r: _latflood(r, "steps", r.secs, 132000, BLOCK_NS, 4),
    lambda r: _latflood(r, "steps", r.secs, 66000, BLOCK_NS, 8),
    {"mib": 1024, "mparams": 256},
    [{}, {"mib": 2048, "mparams": 512}])

TRAIN_SMALL = _train(
    "train-small", "Two small-kernel trainers",
    "An LSTM (2 layers, hidden 256, sequence 64, batch 32) and a small MLP (8 layers of "
    "256, batch 64), both with Adam: kernels of microseconds, so each leaves the device "
    "waiting on its host and a neighbour can fill the gaps.  Their busy share is shown, "
    "not required.",
    ("lstm", lambda r: _torch(r, "lstm-train"), False),
    ("mlp", lambda r: _torch(r, "small-mlp"), False),
    lambda r: _latflood(r, "steps", r.secs, 264, BLOCK_NS, 50),
    lambda r: _latflood(r, "steps", r.secs, 528, BLOCK_NS, 30),
    {}, [{}])


# overhead: one tenant moved between the two halves of the SM groups at a fixed rate by
# bench/sharing's measuring policy (eval_pulse.so), against the same tenant kept on one
# half.  The policy's tick is at least DS_SCHED_SAMPLE_MS (5 ms): 200 moves a second at
# most; 1000 would need a faster tick or a move command in the admin API.
MOVE_RATES = [1, 10, 100, 200]
PULSE_FIXED = "detshare-pulse-fixed"


def pulse_modes():
    return [PULSE_FIXED] + ["detshare-pulse-flip-%d" % n for n in MOVE_RATES]


def pulse_of(mode):
    """(DS_PULSE, DS_PULSE_MS) of a pulse mode, or None for another mode."""
    if mode == PULSE_FIXED:
        return "fixed", 1000
    m = re.fullmatch(r"detshare-pulse-flip-(\d+)", mode)
    return ("flip", 1000 // int(m.group(1))) if m else None


def _moves(log):
    """The moves an executor logged ("now runs on ... (moved in N us, M us after the
    decision)"): how many, what each took, and how long after the policy's decision each
    tenant moved (at its next kernel)."""
    us = sorted(int(x) for x in re.findall(r"moved in (\d+) us", log))
    lag = sorted(int(x) for x in re.findall(r"(\d+) us after the decision", log))
    return {"moves": len(us), "move_us_p50": percentile(us, 50) if us else None,
            "move_us_p90": percentile(us, 90) if us else None,
            "lag_us_p50": percentile(lag, 50) if lag else None,
            "lag_us_p99": percentile(lag, 99) if lag else None}


OVERHEAD = Experiment(
    name="overhead",
    title="What moves cost: one tenant moved between two halves of the SMs",
    about="One best-effort tenant (triads over 64 MiB float arrays, 16 kernels a step; on the "
    "sim, steps of 16 kernels of 0.1 ms) alone through detshare on every SM, then kept on one "
    "half of the SM groups (pulse-fixed), then moved between the two halves 1, 10, 100 and "
    "200 times a second (pulse-flip-N; as many SMs either way, so a slowdown is the moves' "
    "cost).  Moves: those its executor logged, and each one's time.  1000 moves a second "
    "need a policy tick under 5 ms, which the server does not have.",
    jobs=[Job("mover", "best-effort", lambda r: _torch(r, "triad", mib=64, kernels=16),
              _parse_steps, sim=lambda r: _latflood(r, "steps", r.secs, 26400, BLOCK_NS, 16))],
    mps_pct={"mover": 100},
    metrics=[("mover", "steps_per_s", "steps/s"), ("server", "moves", "moves"),
             ("server", "move_us_p50", "move p50 (us)"),
             ("server", "move_us_p90", "move p90 (us)")],
    targets=[Target("steps/s >= 0.97x kept on one half", "mover", "steps_per_s",
                    PULSE_FIXED, ">=", 0.97,
                    modes=["detshare-pulse-flip-%d" % n for n in MOVE_RATES[:3]])],
    windows={"quick": 5, "full": 15},
    modes={"sim": pulse_modes(), "cuda": pulse_modes()},
    alone_envs=["alone-detshare"],
    server_metrics=_moves,
)

def _standin(r, job, **kw):
    """standin.py's job on the sim (the harness's own Python: numpy, no PyTorch)."""
    return [sys.executable, os.path.join(HERE, "standin.py"), job, "%g" % r.secs,
            "%s/bench/eval/spin.fatbin" % r.build] + ["%s=%s" % kv for kv in sorted(kw.items())]


def _llm_kw(r):
    p = r.params
    return {k: p[k] for k in ("rate", "max_batch", "plen", "olen", "cv", "slo")}


DS_MODES = modes.pair_modes("sim")
NATIVE_MODES = modes.NATIVE
TPOT_K = 1.5

# llm: serving beside saturating training.  On the sim a decode step is one kernel whose
# grid grows with the batch (about 0.2 ms + 0.02 ms a request), a prefill 0.006 ms a prompt
# token, and the trainer's stand-in train-compute's.
LLM = Experiment(
    name="llm",
    title="LLM serving (continuous batching, bursty arrivals) beside saturating training",
    about="A latency-critical LLM server (llm.py: a Llama-like decoder of about a billion "
    "parameters, random weights, bf16, 16 layers of 2048, grouped-query attention, decode "
    "steps in CUDA graphs) serves a bursty trace (gamma arrivals, coefficient of variation "
    "2, fixed seed) with continuous batching up to 16 requests: each iteration prefills the "
    "requests that arrived or decodes one token of every running one.  Beside it a trainer "
    "(the GEMM-heavy MLP of train-compute) keeps the device busy.  TTFT: arrival to first "
    "token.  TPOT: each output token's time since the request's token before it (prefill "
    "stalls included).  SLO: %g x the server's TPOT p50 alone natively, fixed by the "
    "calibration (the parameters' slo, in ms) and told to the server (detshare-ctl tenant "
    "llm class latency slo MS); violations: the share of tokens over it.  Best-effort: "
    "training steps a second." % TPOT_K,
    jobs=[
        Job("llm", "latency", lambda r: _torch(r, "llm-serve", **_llm_kw(r)),
            lambda out: llm.summary(json.loads(out)),
            sim=lambda r: _standin(r, "llm", **_llm_kw(r)), slo=_slo),
        Job("train", "best-effort", lambda r: _torch(r, "mlp-train", batch=r.params["be_batch"]),
            _parse_steps, sim=lambda r: _latflood(r, "steps", r.secs, FLOOD_BLOCKS, BLOCK_NS, 8),
            saturating=True),
    ],
    mps_pct={"llm": 50, "train": 50},
    metrics=[("llm", "ttft_p50_ms", "TTFT p50 ms"), ("llm", "ttft_p99_ms", "TTFT p99 ms"),
             ("llm", "tpot_p50_ms", "TPOT p50 ms"), ("llm", "tpot_p99_ms", "TPOT p99 ms"),
             ("llm", "slo_viol", "TPOT SLO violations"), ("llm", "tokens_per_s", "tokens/s"),
             ("llm", "batch_mean", "decode batch"), ("train", "steps_per_s", "train steps/s")],
    targets=[
        Target("TPOT p99 <= 1.2x alone", "llm", "tpot_p99_ms", "alone", "<=", 1.2),
        Target("training >= 0.8x alone", "train", "steps_per_s", "alone", ">=", 0.8),
        Target("TPOT SLO violations <= 0.75x the best native baseline's", "llm", "slo_viol",
               "best-native", "<=", 0.75),
    ],
    params={"rate": 60, "max_batch": 16, "plen": 384, "olen": 96, "cv": 2.0,
            "slo": "auto:%g" % TPOT_K, "be_batch": 8192},
    # 60 requests a second suits the sim; on an H200 the decoder serves about 13 a second
    # at batch 16 (1234 tokens/s alone), so there the first candidate's window only
    # queues (its cells fail: no request of the window past its first token) and the
    # next ones, under that capacity, are taken.
    calib=Calib([{}, {"rate": 10}, {"rate": 6}], lat="llm", metric="tpot_p99_ms"),
    windows={"quick": 6, "full": 16},
    modes={"sim": DS_MODES, "cuda": NATIVE_MODES + DS_MODES},
    quick=["native-timesliced", "native-mps", "detshare-slo-aware", "detshare-tpot-first"],
    start_s=15,
    ratios=[("llm", "ttft_p99_ms"), ("llm", "tpot_p50_ms"), ("llm", "tpot_p99_ms"),
            ("llm", "tokens_per_s"), ("train", "steps_per_s")],
)


def det_derive(cells, device):
    """Each det cell's mismatches against the same repeat's native alone run (on the sim,
    alone through detshare: the only alone there), as metrics vs_native_*."""
    ref_env = "alone-native" if device == "cuda" else "alone-detshare"
    refs = {c["repeat"]: c["metrics"]["det"] for c in cells
            if c["experiment"] == DETERMINISM.name and c["scenario"] == ref_env + ":det"
            and "det" in c["metrics"]}
    for c in cells:
        m = c["metrics"].get("det")
        if c["experiment"] == DETERMINISM.name and m and c["repeat"] in refs:
            m.update(det.against(m, refs[c["repeat"]]))


def _det_kw(r):
    p = r.params
    return {"trials": p["trials_full"] if r.profile == "full" else p["trials_quick"],
            "slices": p["slices"]}


DETERMINISM = Experiment(
    name="determinism",
    title="Semantic determinism: bitwise results alone, co-located, moved, and sliced",
    about="Trials of an LM head (bf16 [512 x 2048] x [2048 x 32000], fp32 logits, softmax, "
    "argmax) and of a 20-step training run (a 1024-wide MLP, fp32, SGD) (det.py), beside "
    "a GEMM flood, in every mode, and moved between the two halves of the SMs 100 times a "
    "second (detshare-pulse-flip-100).  Each trial's fingerprint of its exact bits is "
    "compared with the native alone run's of the same repeat (on the sim: alone through "
    "detshare): trials whose logits or losses differ, and the first trial's tokens whose "
    "argmax differs.  The kernel-slicing baseline, in every trial: the same products split "
    "into 4 slices along K, computed by separate launches and summed (what slicing a "
    "kernel's work into launches does to the summation order), against the unsliced "
    "result: trials whose bits differ, token mismatches, argmax inversions (the top two "
    "swapped) and the largest loss difference.  On the sim the inputs go through the "
    "device and back each trial and numpy computes on the host.",
    jobs=[
        Job("det", "latency", lambda r: _torch(r, "det", **_det_kw(r)),
            lambda out: det.summary(json.loads(out)),
            sim=lambda r: _standin(r, "det", **_det_kw(r))),
        Job("be", "best-effort", lambda r: _torch(r, "gemm", n=8192, count=4), _parse_steps,
            sim=lambda r: _latflood(r, "steps", r.secs, FLOOD_BLOCKS, BLOCK_NS, 4),
            saturating=True),
    ],
    mps_pct={"det": 50, "be": 50},
    metrics=[("det", "trials", "trials"), ("det", "vs_native_lm", "LM trials != native"),
             ("det", "vs_native_loss", "loss trials != native"),
             ("det", "vs_native_tokens", "tokens != native"),
             ("det", "sliced_bitwise", "sliced: LM trials != unsliced"),
             ("det", "sliced_tokens", "sliced: token mismatches"),
             ("det", "sliced_inversions", "sliced: argmax inversions"),
             ("det", "sliced_loss_bitwise", "sliced: loss trials != unsliced"),
             ("det", "sliced_loss_drift", "sliced: max loss drift"), ("server", "moves", "moves")],
    targets=[
        Target("0 LM-head trials differ from native alone", "det", "vs_native_lm", "abs",
               "<=", 0),
        Target("0 training trials differ from native alone", "det", "vs_native_loss", "abs",
               "<=", 0),
        Target("the slicing baseline drifts (>= 1 trial differs)", "det", "sliced_bitwise",
               "abs", ">=", 1),
    ],
    params={"trials_quick": 20, "trials_full": 200, "slices": 4},
    windows={"quick": 3, "full": 10},
    modes={"sim": DS_MODES + ["detshare-pulse-flip-100"],
           "cuda": NATIVE_MODES + DS_MODES + ["detshare-pulse-flip-100"]},
    quick=["native-mps", "detshare-shared", "detshare-slo-aware", "detshare-pulse-flip-100"],
    start_s=10,
    derive=det_derive,
    ratios=[],
    server_metrics=_moves,
)


# scale: 2, 4 and 8 tenants, half latency-critical (an inference service at a fixed rate:
# a small MLP on a GPU, 1 ms requests on the sim) and half best-effort (GEMM steps).  The
# copies of a job run alone once, in scale-2.
SCALE_RATE = 100


def _scale_lat(r):
    return _torch(r, "serve", model="mlp", batch=256, rates=SCALE_RATE)


def _scale_lat_sim(r):
    return _latflood(r, "serve", r.secs, LAT_BLOCKS, BLOCK_NS, 1, str(SCALE_RATE))


def _scale_be(r):
    return _torch(r, "gemm", n=4096, count=8)


def _scale_be_sim(r):
    return _latflood(r, "steps", r.secs, FLOOD_BLOCKS, BLOCK_NS, 4)


def _scale(n):
    jobs = []
    for i in range(1, n // 2 + 1):
        jobs.append(Job("lat%d" % i, "latency", _scale_lat, _parse_serve, sim=_scale_lat_sim,
                        like=("scale-2", "lat1") if n > 2 else None))
        jobs.append(Job("be%d" % i, "best-effort", _scale_be, _parse_steps, sim=_scale_be_sim,
                        saturating=True, like=("scale-2", "be1") if n > 2 else None))
    return Experiment(
        name="scale-%d" % n,
        title="%d tenants of mixed classes" % n,
        about="%d tenants at once: %d latency-critical services (a 4-layer MLP of width 4096, "
        "batch 256, requests arriving at %d a second, Poisson; on the sim 1 ms requests) "
        "and %d best-effort GEMM floods (8 products of 4096^3 a step).  How the policies "
        "scale: the services' p99, the floods' aggregate throughput (each relative to itself "
        "alone, summed), the control process's answer time to status requests polled every "
        "250 ms and the time the tenants spent at closed gates (its admin API), the moves the "
        "executors logged and how long after the policy's decision each came, and the host "
        "cores the server and its executors used, and the policy's own decision time (the "
        "status's policy_decisions: mean and longest callback)." % (
            n, n // 2, SCALE_RATE, n // 2),
        jobs=jobs,
        mps_pct={j.name: 100 // n for j in jobs},
        metrics=[("lat1", "p99_ms_1", "lat1 p99 ms"), ("be1", "steps_per_s", "be1 steps/s"),
                 ("server", "admin_ms_p50", "status answer p50 ms"),
                 ("server", "admin_ms_p99", "status answer p99 ms"),
                 ("server", "gated_share", "gated share"), ("server", "moves", "moves"),
                 ("server", "lag_us_p50", "move after decision p50 us"),
                 ("server", "decision_us_mean", "policy decision mean us"),
                 ("server", "decision_us_max", "policy decision max us"),
                 ("host", "server_cores", "server cores")],
        targets=[Target("lat1 p99 <= 1.2x alone", "lat1", "p99_ms_1", "alone", "<=", 1.2)],
        windows={"quick": 3, "full": 10},
        quick=["native-mps", "detshare-slo-aware"],
        start_s=8 + n // 2,
        ratios=[("lat1", "p99_ms_1"), ("be1", "steps_per_s")],
        poll_status=True,
        server_metrics=_moves,
        aggregate="steps_per_s",
    )


SCALE = [_scale(n) for n in (2, 4, 8)]

EXPERIMENTS = {e.name: e for e in [LATFLOOD, INFER, TRAIN_COMPUTE, TRAIN_MEMORY, TRAIN_SMALL,
                                   OVERHEAD, LLM, DETERMINISM] + SCALE}
# Names that stand for several experiments on the command line.
GROUPS = {"trainpair": ["train-compute", "train-memory", "train-small"],
          "scale": [e.name for e in SCALE]}
# What a run without experiment names runs: --quick leaves out latflood (uncalibrated on
# GPUs so far) and the memory-bound pair, so that it fits 30 minutes of a GPU.
DEFAULT = {"quick": ["infer", "train-compute", "train-small", "overhead"],
           "full": list(EXPERIMENTS)}
