"""bench/eval's runner (run.sh starts it): runs experiments as cells, resumably.

A cell is one scenario (a job alone in one environment, or all the experiment's jobs in
one co-located mode) of one experiment in one repeat.  Each finished cell is appended to
OUT/cells.jsonl as it ends; a start with the same OUT skips the cells found there, so a
run cut short goes on where it stopped.  A cell that failed is recorded (ok false) and
run again by the next start.  OUT/meta.json holds the run's profile and device, which a
later start must match.  With --calibrate, the experiments not calibrated in OUT yet are
calibrated first (calibrate.py), and every cell runs with the parameters kept there.  A
cell's jobs get DS_EVAL_SYNC ("DIR N"), the barrier at which they start their windows
together (workloads.py says how).
"""

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time

import calibrate
import experiments
import modes
import report

PROFILES = {
    # (repeats, measured seconds per cell)
    "quick": (3, 2),
    "full": (5, 10),
}
# Beyond the window, before a job that has not ended is killed: PyTorch's start through
# detshare (modules, cuDNN's benchmark) takes tens of seconds.
SETTLE_S = 150
# Where the GPU boxes keep PyTorch when the interpreter running this has none.
TORCH_VENV = "/opt/torch/.venv/bin/python3"


class Stop(Exception):
    """SIGTERM or SIGINT: end the cell's processes and leave it unrecorded."""


def on_signal(signum, frame):
    raise Stop()


class Deferred:
    """Holds SIGTERM and SIGINT back while processes are being ended, so that a stop
    does not cut the ending short and leave a server running; a held signal is taken
    (Stop raised) once the block is left."""

    SIGS = {signal.SIGTERM, signal.SIGINT}

    def __enter__(self):
        signal.pthread_sigmask(signal.SIG_BLOCK, self.SIGS)

    def __exit__(self, *exc):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, self.SIGS)


def sh(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def gpu_info(device):
    if device == "sim":
        return {"gpu": "detshare sim (132 SMs)", "driver": "none"}
    q = sh(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    name, _, driver = q.splitlines()[0].partition(", ") if q else ("unknown", "", "unknown")
    return {"gpu": name, "driver": driver}


def meta_of(args, repo):
    commit = os.environ.get("COMMIT") or sh(["git", "-C", repo, "rev-parse", "--short", "HEAD"])
    m = {"profile": args.profile, "device": args.device, "commit": commit or "unknown",
         "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
         "cpus": os.cpu_count(), "repeats": args.repeats}
    m.update(gpu_info(args.device))
    return m


def load_state(out, meta):
    """meta.json (written now when new) and the keys of the cells finished (ok) so far."""
    path = os.path.join(out, "meta.json")
    if os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
        for k in ("profile", "device"):
            if old[k] != meta[k]:
                sys.exit("run.sh: %s holds a %s run on %s; this one is %s on %s: use another "
                         "--out" % (out, old["profile"], old["device"], meta["profile"],
                                    meta["device"]))
    else:
        with open(path, "w") as f:
            json.dump(meta, f, indent=1)
    done = set()
    cells = os.path.join(out, "cells.jsonl")
    if os.path.exists(cells):
        with open(cells) as f:
            for line in f:
                try:
                    c = json.loads(line)
                except ValueError:
                    continue  # a line cut by a kill during the write
                if c.get("ok"):
                    done.add(c["key"])
    return done


def cpu_times():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3] + v[4]  # total, idle + iowait


def children_cpu_s():
    """CPU seconds of the processes this one has waited for (and of theirs): the jobs,
    and the server with the executors it reaped."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def gpu_clocks(device):
    if device == "sim":
        return None
    q = sh(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw",
            "--format=csv,noheader,nounits"])
    return q.splitlines()[0] if q else None


class Env:
    """What a mode runs under: nothing, a private native MPS daemon, or a detshare server
    with one policy; start() before the jobs, stop() after (also on a signal)."""

    def __init__(self, args, tmp, raw, key):
        self.args, self.tmp, self.raw, self.key = args, tmp, raw, key
        self.server = self.mps = None
        self.served = False  # whether a server ran (its log is raw/KEY-server.log)
        self.vars = {}

    def start(self, mode):
        pulse = experiments.pulse_of(mode)
        if mode in ("native-mps", "native-mps-part", "alone-native-mps"):
            self.start_mps()
        elif pulse:
            # overhead's moving policy, a file of the build (bench/sharing/policy_pulse.c).
            self.start_server("%s/bench/eval_pulse.so" % self.args.build,
                              {"DS_PULSE": pulse[0], "DS_PULSE_MS": str(pulse[1])})
        elif mode.startswith("detshare-") or mode == modes.ALONE_DS:
            self.start_server("shared" if mode == modes.ALONE_DS else mode[len("detshare-"):])

    def start_mps(self):
        self.mps = os.path.join(self.tmp, "native-mps")
        os.makedirs(self.mps + "/pipe", exist_ok=True)
        os.makedirs(self.mps + "/log", exist_ok=True)
        self.vars = {"CUDA_MPS_PIPE_DIRECTORY": self.mps + "/pipe",
                     "CUDA_MPS_LOG_DIRECTORY": self.mps + "/log"}
        subprocess.run(["nvidia-cuda-mps-control", "-d"], env=dict(os.environ, **self.vars),
                       check=True)

    def start_server(self, policy, env=None):
        sock = os.path.join(self.tmp, "ds.sock")
        argv = ["%s/server/detshare-server" % self.args.build, "--device", self.args.device,
                "--policy", policy, "--listen", "unix:" + sock]
        if self.args.device == "cuda":
            argv += ["--warm", "2", "--mps-dir", os.path.join(self.tmp, "mps")]
        log = open(os.path.join(self.raw, self.key + "-server.log"), "w")
        self.served = True
        self.server = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True,
                                       env=dict(os.environ, **(env or {})))
        log.close()
        for _ in range(600):
            if os.path.exists(sock) or self.server.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(sock):
            raise RuntimeError("the server did not start (%s-server.log)" % self.key)
        self.vars = {"DETSHARE_SERVER": "unix:" + sock,
                     "LD_LIBRARY_PATH": "%s/client:%s" % (self.args.build,
                                                          os.environ.get("LD_LIBRARY_PATH", ""))}

    def stop(self):
        if self.server is not None:
            kill_group(self.server, signal.SIGTERM, 20)
            self.server = None
        if self.mps is not None:
            subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", text=True,
                           env=dict(os.environ, **self.vars))
            # Executors started within seconds of a native daemon's quit ran without MPS
            # on the H100 (bench/coloc, runs 98-100): wait for its server to be gone.
            for _ in range(100):
                if not sh(["pgrep", "-f", "nvidia-cuda-mps-server"]):
                    break
                time.sleep(0.1)
            time.sleep(5)
            self.mps = None


class Ctl:
    """detshare-ctl against a cell's server, in a thread while the cell's jobs run:
    telling the server each job's SLO once its tenant is there (Job.slo), and with the
    experiment's poll_status, polling its status every POLL_S for how long it takes to
    answer and how long each tenant was held at its gate.  stop() -> the figures:
    {"told": {job: seconds after the start it took, or None}, and when polled
    "admin_ms_p50", "admin_ms_p99", "polls", "gated_share" (the tenants' time at closed
    gates, summed, over the tenants' time connected, summed, as far as seen),
    "decision_us_mean", "decision_us_max" (the policy's callbacks, from the status)}."""

    POLL_S = 0.25
    TELL_S = 0.05

    def __init__(self, args, env_vars, exp, run):
        self.argv = ["%s/server/detshare-ctl" % args.build]
        self.env = dict(os.environ, **env_vars)
        self.slos = {j.name: j.slo(run) for j in exp.jobs if j.slo and j.slo(run)}
        self.poll = exp.poll_status
        self.told = {n: None for n in self.slos}
        self.ms, self.gated, self.seen, self.decisions = [], {}, {}, None
        self.last_error = None
        self.done = threading.Event()
        self.t = threading.Thread(target=self.loop, daemon=True)

    def ctl(self, *args):
        r = subprocess.run(self.argv + list(args), capture_output=True, text=True,
                           env=self.env, timeout=10)
        if r.returncode != 0:
            self.last_error = (r.stdout + r.stderr).strip()[-300:]
        return r.returncode, r.stdout

    def untold(self):
        return any(v is None for v in self.told.values())

    def loop(self):
        t0 = time.time()
        # An SLO is told as soon as its tenant is there: a short cell (the sim's 1 s
        # windows, on a loaded machine) may end before a quarter-second poll finds it.
        while not self.done.wait(self.TELL_S if self.untold() else self.POLL_S):
            try:
                for name, ms in self.slos.items():
                    # detshare-ctl takes milliseconds to the microsecond (three
                    # decimals), from 0.001.
                    if self.told[name] is None and self.ctl(
                            "tenant", name, "class", "latency", "slo",
                            "%.3f" % max(0.001, round(ms, 3)))[0] == 0:
                        self.told[name] = round(time.time() - t0, 2)
                if self.poll:
                    self.status(time.time())
            except (OSError, subprocess.SubprocessError, ValueError) as e:
                self.last_error = repr(e)[-300:]
                continue  # the server not up yet, or gone: the next poll tries again

    def status(self, now):
        t = time.perf_counter()
        rc, out = self.ctl("status", "--json")
        if rc != 0:
            return
        self.ms.append((time.perf_counter() - t) * 1e3)
        st = json.loads(out)
        # The server's own count since it started: the last poll's is the cell's.
        self.decisions = st.get("policy_decisions") or self.decisions
        for tn in st["tenants"]:
            first = self.seen.setdefault(tn["id"], now)
            self.gated[tn["id"]] = (tn["gated_ms"], (now - first) * 1e3)

    def start(self):
        if self.slos or self.poll:
            self.t.start()
        return self

    def stop(self):
        self.done.set()
        if self.t.is_alive():
            self.t.join(15)

    def figures(self):
        out = {"told": self.told} if self.slos else {}
        if self.slos and self.untold():
            out["tell_error"] = self.last_error  # why, as the last try said
        if self.poll:
            ms = sorted(self.ms)
            conn = sum(c for _, c in self.gated.values())
            out.update(polls=len(ms), admin_ms_p50=ms[len(ms) // 2] if ms else None,
                       admin_ms_p99=ms[min(len(ms) - 1, int(len(ms) * 0.99))] if ms else None,
                       gated_share=sum(g for g, _ in self.gated.values()) / conn if conn else None,
                       decision_us_mean=(self.decisions or {}).get("mean_us"),
                       decision_us_max=(self.decisions or {}).get("max_us"))
        return out


def kill_group(p, sig, wait_s):
    """Signal p's process group, then SIGKILL it if p has not ended within wait_s."""
    try:
        os.killpg(p.pid, sig)
        p.wait(timeout=wait_s)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


def job_env(base, exp, job, mode, sync):
    env = dict(os.environ, **base)
    env.update(DETSHARE_TENANT=job.name, DETSHARE_CLASS=job.klass, DS_EVAL_SYNC=sync,
               PYTHONUNBUFFERED="1", DS_EVAL_MODE=mode)
    if mode == "native-mps-part":
        env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(exp.mps_pct[job.name])
    return env


def run_cell(args, exp, scenario, key, tmp, params, secs, sampler=None):
    """Run one cell of exp with params and a window of secs; return its record (without
    key and timing).  sampler (optional) runs while the jobs do: start() and stop() ->
    figures for the record's "device" entry."""
    env_mode, _, alone = scenario.partition(":")
    jobs = [j for j in exp.jobs if j.name == alone] if alone else exp.jobs
    raw = os.path.join(args.out, "raw")
    env = Env(args, tmp, raw, key)
    run = experiments.Run(args.build, args.device, secs, params, args.torch_python, env_mode,
                          args.profile)
    sync = tempfile.mkdtemp(prefix="sync-", dir=tmp)
    procs = []
    ctl = None
    load0, cpu0 = os.getloadavg()[0], cpu_times()
    rec = {"clocks_start": gpu_clocks(args.device), "params": params, "window": secs}
    used0 = children_cpu_s()
    t0 = time.time()
    try:
        env.start(env_mode)
        if sampler:
            sampler.start()
        for j in jobs:
            out = open(os.path.join(raw, "%s-%s.out" % (key, j.name)), "w")
            err = open(os.path.join(raw, "%s-%s.err" % (key, j.name)), "w")
            procs.append((j, subprocess.Popen(
                j.command(run), stdout=out, stderr=err, start_new_session=True,
                env=job_env(env.vars, exp, j, env_mode, "%s %d" % (sync, len(jobs))))))
            out.close()
            err.close()
        if env.served:
            ctl = Ctl(args, env.vars, exp, run).start()
        deadline = time.time() + secs + SETTLE_S
        for _, p in procs:
            try:
                p.wait(timeout=max(1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                kill_group(p, signal.SIGKILL, 5)
    finally:
        with Deferred():
            if ctl is not None:
                ctl.stop()
            for _, p in procs:
                if p.poll() is None:
                    kill_group(p, signal.SIGTERM, 5)
            used1, t1 = children_cpu_s(), time.time()
            if sampler:
                rec["device"] = sampler.stop()
            env.stop()
    cpu1 = cpu_times()
    # Cores used on average while the jobs ran: the jobs' own, and the server's with its
    # executors (counted once the server has ended; spinning executors compete with the
    # jobs' threads for the host's cores).
    rec.update(jobs_cores=(used1 - used0) / max(t1 - t0, 1e-3),
               server_cores=(children_cpu_s() - used1) / max(t1 - t0, 1e-3))
    rec.update(load_start=load0, load_end=os.getloadavg()[0],
               cpu_busy=1 - (cpu1[1] - cpu0[1]) / max(1, cpu1[0] - cpu0[0]),
               clocks_end=gpu_clocks(args.device), exits={},
               metrics={"host": {k: rec[k] for k in ("server_cores", "jobs_cores")}})
    for j, p in procs:
        rec["exits"][j.name] = p.returncode
        try:
            with open(os.path.join(raw, "%s-%s.out" % (key, j.name))) as f:
                rec["metrics"][j.name] = j.parse(f.read())
        except (ValueError, KeyError, OSError) as e:
            rec.setdefault("errors", []).append("%s: %s" % (j.name, e))
    if exp.server_metrics and env.served:
        try:
            with open(os.path.join(raw, key + "-server.log"), errors="replace") as f:
                rec["metrics"]["server"] = exp.server_metrics(f.read())
        except OSError as e:
            rec.setdefault("errors", []).append("server log: %s" % e)
    if ctl is not None:
        rec["metrics"].setdefault("server", {}).update(ctl.figures())
    rec["ok"] = all(p.returncode == 0 for _, p in procs) and \
        all(j.name in rec["metrics"] for j, _ in procs)
    return rec


def plan(args):
    """Every cell of the run, in order: (experiment, scenario, repeat, key)."""
    cells = []
    for rep in range(1, args.repeats + 1):
        for name in args.experiments:
            exp = experiments.EXPERIMENTS[name]
            scs = modes.scenarios(exp, args.device, only_modes(args, exp))
            for sc in modes.repeat_order(scs, rep, args.repeats):
                cells.append((exp, sc, rep, "%s@%s@r%d" % (name, sc.replace(":", "@"), rep)))
    return cells


def only_modes(args, exp):
    """The co-located modes the run keeps of exp's (None: all of them)."""
    if args.modes:
        return args.modes
    if args.profile == "quick" and args.device == "cuda":
        return exp.quick or (None if exp.modes else modes.QUICK)
    return None


def window(args, exp):
    """A cell's measured seconds: --secs, else the experiment's for the profile, else
    the profile's."""
    return args.secs or exp.windows.get(args.profile) or PROFILES[args.profile][1]


def params_of(args, exp):
    """exp's parameters in this run: the calibration's choice when there is one (in
    OUT/calibration.json), else the defaults."""
    cal = calibrate.load(args.out).get(exp.name)
    return cal["params"] if cal else dict(exp.params)


def torch_python(args):
    """An interpreter with PyTorch for the jobs: TORCH_PYTHON, else this one when it has
    PyTorch, else TORCH_VENV when it exists."""
    if os.environ.get("TORCH_PYTHON"):
        return os.environ["TORCH_PYTHON"]
    probe = [sys.executable, "-c", "import torch"]
    if subprocess.run(probe, capture_output=True).returncode == 0:
        return sys.executable
    return TORCH_VENV if os.path.exists(TORCH_VENV) else sys.executable


def check_torch(python):
    """None when python has PyTorch, torchvision and a GPU, else why not."""
    r = subprocess.run([python, "-c", "import torch, torchvision; "
                        "assert torch.cuda.is_available(), 'no GPU'; "
                        "print(torch.__version__, torchvision.__version__)"],
                       capture_output=True, text=True)
    if r.returncode:
        return (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
    return None


def pick_experiments(names, profile, ap):
    out = []
    for n in names or experiments.DEFAULT[profile]:
        for e in experiments.GROUPS.get(n, [n]):
            if e not in experiments.EXPERIMENTS:
                ap.error("no experiment %s (there are: %s; and %s)" % (
                    e, " ".join(experiments.EXPERIMENTS), " ".join(experiments.GROUPS)))
            if e not in out:
                out.append(e)
    return out


def estimate(args, cells, cal):
    """Seconds each experiment's cells (and its calibration when asked for and not done
    yet: one candidate's trials) take on a GPU, from their windows and Experiment.start_s
    (the setup seen beyond the window): {experiment: (cells, seconds)}."""
    out = {}
    for exp, _, _, _ in cells:
        n, t = out.get(exp.name, (0, 0.0))
        out[exp.name] = (n + 1, t + window(args, exp) + 1 + exp.start_s)
    for name in args.experiments:
        exp = experiments.EXPERIMENTS[name]
        if args.calibrate and exp.calib and name not in cal:
            trials = bool(exp.calib.lat) * 2 + sum(j.saturating for j in exp.jobs)
            n, t = out.get(name, (0, 0.0))
            out[name] = (n, t + trials * (window(args, exp) + 1 + exp.start_s))
    return out


def print_estimate(args, cells, done):
    est = estimate(args, [c for c in cells if c[3] not in done], calibrate.load(args.out))
    for name, (n, t) in est.items():
        print("%-14s %4d cells  %s" % (name, n, fmt_s(t)))
    print("%-14s %4d cells  %s (on a GPU; --budget splits it into calls)" % (
        "total", sum(n for n, _ in est.values()), fmt_s(sum(t for _, t in est.values()))))


def fmt_s(s):
    s = int(round(s))
    return "%dm%02ds" % (s // 60, s % 60) if s >= 60 else "%ds" % s


def main():
    ap = argparse.ArgumentParser(prog="run.sh", description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", dest="profile", action="store_const", const="quick")
    g.add_argument("--full", dest="profile", action="store_const", const="full")
    ap.add_argument("--device", choices=["sim", "cuda"], default="cuda")
    ap.add_argument("--out", default=None)
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    ap.add_argument("--budget", type=float, default=0,
                    help="seconds this start may take: it starts no cell that the estimate "
                    "says would end later, so that a long run fits device calls (0: none)")
    ap.add_argument("--calibrate", action="store_true",
                    help="calibrate the experiments not calibrated yet in OUT, then run them")
    ap.add_argument("--calibrate-only", action="store_true",
                    help="calibrate the experiments not calibrated yet in OUT, and stop")
    ap.add_argument("--modes", type=lambda v: v.split(","), default=None,
                    help="keep only these co-located modes (comma-separated)")
    ap.add_argument("--repeats", type=int, default=0, help="instead of the profile's")
    ap.add_argument("--secs", type=float, default=0,
                    help="every cell's window, instead of the experiment's or profile's")
    ap.add_argument("--estimate", action="store_true",
                    help="print the cells left to run and the GPU time they take, and stop")
    ap.add_argument("experiments", nargs="*",
                    help="experiments or groups (trainpair); default: the profile's set")
    args = ap.parse_args()
    args.profile = args.profile or "quick"
    args.experiments = pick_experiments(args.experiments, args.profile, ap)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args.build = os.path.abspath(args.build)
    args.out = os.path.abspath(args.out or os.path.join(
        repo, "lab", "results", "eval-%s-%s" % (args.device, args.profile)))
    args.repeats = args.repeats or PROFILES[args.profile][0]
    args.torch_python = torch_python(args)
    if args.estimate:
        print_estimate(args, plan(args), load_state(args.out, meta_of(args, repo))
                       if os.path.exists(os.path.join(args.out, "meta.json")) else set())
        return 0
    os.makedirs(os.path.join(args.out, "raw"), exist_ok=True)
    if args.device == "sim":
        print("run.sh: on the sim only detshare's modes run (%s): native time-slicing and "
              "MPS need a GPU; PyTorch jobs run as latflood stand-ins"
              % ", ".join(modes.pair_modes("sim")), flush=True)
    elif any(experiments.EXPERIMENTS[e].torch() for e in args.experiments):
        why = check_torch(args.torch_python)
        if why:
            sys.exit("run.sh: %s cannot run the PyTorch jobs (%s): set TORCH_PYTHON"
                     % (args.torch_python, why))
    done = load_state(args.out, meta_of(args, repo))
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        rc = calibrate_then_run(args, done)
    except Stop:
        print("run.sh: stopped; run again to go on", flush=True)
        rc = 130
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            md = report.write_report(args.out) if os.path.exists(os.path.join(
                args.out, "cells.jsonl")) or calibrate.load(args.out) else None
            print("run.sh: report %s" % (md or "not written: nothing finished"), flush=True)
        except Exception as e:  # the cells are safe in cells.jsonl: say so, keep the status
            print("run.sh: no report (%s); bench/eval/report.py %s makes it" % (e, args.out),
                  flush=True)
    return rc


def calibrate_then_run(args, done):
    begun = time.time()
    if args.calibrate or args.calibrate_only:
        rc = calibrate.run(args, done, run_cell, window, begun)
        if rc or args.calibrate_only:
            return rc
    for name in args.experiments:
        bad = [k for k, v in params_of(args, experiments.EXPERIMENTS[name]).items()
               if str(v).startswith("auto:")]
        if bad:
            print("run.sh: %s needs its calibration first (its %s): run with --calibrate"
                  % (name, ", ".join(bad)), flush=True)
            return 2
    cells = plan(args)
    todo = [c for c in cells if c[3] not in done]
    print("run.sh: %d cells, %d finished before, %d to run; results in %s"
          % (len(cells), len(cells) - len(todo), len(todo), args.out), flush=True)
    return run_cells(args, cells, todo, begun)


def run_cells(args, cells, todo, begun):
    """Run the cells of todo (of cells, the whole plan); 0 when all finished well, 1
    when some failed, 3 when out of --budget; Stop (a signal) ends it anywhere."""
    took = []
    failed = 0
    invocation = "%d-%d" % (time.time(), os.getpid())  # tells a resumed run's cells apart
    with tempfile.TemporaryDirectory(prefix="ds-eval-") as tmp:
        for i, (exp, sc, rep, key) in enumerate(todo):
            t0 = time.time()
            secs = window(args, exp)
            guess = sum(took) / len(took) if took else secs + 5
            if args.budget and t0 + guess > begun + args.budget:
                print("run.sh: out of --budget; %d cells left, run again to go on"
                      % (len(todo) - i), flush=True)
                return 3
            try:
                rec = run_cell(args, exp, sc, key, tmp, params_of(args, exp), secs)
            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                rec = {"ok": False, "errors": [str(e)]}
            took.append(time.time() - t0)
            rec.update(key=key, experiment=exp.name, scenario=sc, repeat=rep,
                       started=t0, secs=took[-1], invocation=invocation)
            with Deferred(), open(os.path.join(args.out, "cells.jsonl"), "a") as f:
                f.write(json.dumps(rec) + "\n")
            failed += not rec["ok"]
            left = sum(took) / len(took) * (len(todo) - i - 1)
            print("[%d/%d] %s %s r%d: %s in %.1f s, est. %s left"
                  % (len(cells) - len(todo) + i + 1, len(cells), exp.name, sc, rep,
                     "ok" if rec["ok"] else "FAILED (%s)" % "; ".join(rec.get("errors", [])),
                     took[-1], fmt_s(left)), flush=True)
    print("run.sh: done, %d cells failed%s" % (failed, " (run again to retry them)" if failed
                                                 else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
