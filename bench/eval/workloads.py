"""bench/eval's PyTorch jobs, one per process (the harness starts them; on the sim,
latflood.c's stand-ins take their place and print the same).

    workloads.py JOB SECS [KEY=VALUE...]

Jobs (KEY=VALUE: their sizes, the defaults below):
  serve         ResNet-50 inference (torchvision, random weights, bf16, channels-last),
                or with model=mlp 4 layers of 4096 (bf16), batch=32, requests arriving open-loop (Poisson) at each of rates=R1,R2..
                per second in turn, SECS / rates each; rates=auto:F1,F2.. takes F times
                the requests a second it serves alone, closed-loop, before the window
  gemm          a best-effort flood: count=4 bf16 matrix products of n=8192 a step
  resnet-train  ResNet-50 training, batch=64, bf16 autocast, channels-last, SGD
  mlp-train     a GEMM-heavy MLP: layers=4 of width=8192, batch=8192, bf16 autocast, SGD
  triad         a bandwidth-bound loop: kernels=8 triads (a = b + 2c) over mib=1024 MiB
                float arrays a step
  adam          Adam steps (foreach) over mparams=256 million float parameters
  lstm-train    a 2-layer LSTM (hidden 256, sequence 64, batch 32) with Adam: small kernels
  small-mlp     8 layers of 256, batch 64, with Adam: small kernels
  llm-serve     LLM serving (llm.py): a Llama-like decoder of about a billion parameters
                (random weights, bf16, decode steps in CUDA graphs) serving a bursty
                trace at rate=60 requests a second, continuous batching up to
                max_batch=16, prompts of plen=384 and answers of olen=96 tokens on
                average; slo=auto:K (K times its TPOT p50, for the calibration) or MS
  det           determinism trials (det.py): trials=20 of an LM head and a 20-step
                training run, each also computed with its products split in slices=4

What a job prints, one JSON object on stdout:
  steps jobs  {"role": "steps", "secs", "steps", "steps_per_s", "busy"}: steps finished in
              the window and the device's busy share of it (its steps' time on the
              device's clock, from timed events, over the window's), which tells a job
              that keeps the device fed from one that leaves it waiting on the host;
  serve       {"role": "serve", "secs", "service_ms", "phases": [{"rate", "secs", "done",
              "dropped", "ms": [...]}]}: per rate, each request's time from its arrival to
              its result; a request still waiting when its phase ends is dropped and
              counts as having taken until then (a lower bound), so an overloaded phase
              ends on time and still shows in its tail;
  llm-serve   {"role": "llm", "secs", "requests", "finished", "unstarted", "tokens_per_s",
              "ttft_ms": [...], "tpot_ms": [...], "prefills", "decode_steps",
              "batch_mean", "slo_ms", "auto_slo" (with slo=auto:K), "graphs", "params_b"};
  det         {"role": "det", "secs", "trials", "lm": [fingerprints], "loss": [...],
              "tokens": [the first trial's], "sliced": {the slicing baseline's counts}}.

Starting together: with DS_EVAL_SYNC="DIR N" a job leaves DIR/ready.PID once set up and
waited for (models built, warm-up done), waits for N of them (at most SYNC_WAIT_S, else it
fails), runs WARM_S unmeasured beside the others and then its window; after it, it leaves
DIR/done.PID, and a steps job keeps stepping until N of those are there (at most
LINGER_S), so no job's window sees another gone.

Everything but the jobs themselves is plain Python (test_workloads.py tests it without
PyTorch).
"""

import json
import os
import random
import sys
import time

WARM_S = 1.0
SYNC_WAIT_S = 100.0
LINGER_S = 30.0
SEED = 20261127


class Sync:
    """The start barrier and the end marks of DS_EVAL_SYNC (absent: a job alone)."""

    def __init__(self, spec, clock=time.monotonic, sleep=time.sleep):
        self.dir, self.n = None, 0
        if spec:
            d, _, n = spec.rpartition(" ")
            self.dir, self.n = d, int(n)
        self.clock, self.sleep = clock, sleep

    def mark(self, what):
        if self.dir:
            with open(os.path.join(self.dir, "%s.%d" % (what, os.getpid())), "w"):
                pass

    def count(self, what):
        return sum(1 for f in os.listdir(self.dir) if f.startswith(what + "."))

    def ready(self):
        """Mark ready and wait for the others; RuntimeError when they never come."""
        self.mark("ready")
        end = self.clock() + SYNC_WAIT_S
        while self.dir and self.count("ready") < self.n:
            if self.clock() > end:
                raise RuntimeError("the cell's other jobs were not ready within %.0f s"
                                   % SYNC_WAIT_S)
            self.sleep(0.005)

    def others_measuring(self):
        return bool(self.dir) and self.count("done") < self.n


def parse_rates(spec):
    """("auto" or "fixed", [numbers]) from "R1,R2" or "auto:F1,F2"; ValueError if bad."""
    kind = "auto" if spec.startswith("auto:") else "fixed"
    rates = [float(x) for x in spec[5 if kind == "auto" else 0:].split(",")]
    if not rates or any(not r > 0 for r in rates):
        raise ValueError("bad rates %r" % spec)
    return kind, rates


def serve_phase(request, rate, t0, t1, rng, clock=time.monotonic, sleep=time.sleep):
    """Requests arriving at rate (Poisson) from t0 to t1, served in order, each as soon as
    it has arrived and the one before has finished: {"rate", "secs", "done", "dropped",
    "ms"}."""
    ms, dropped = [], 0
    nxt = t0 + rng.expovariate(rate)
    while nxt < t1:
        wait = nxt - clock()
        if wait > 0:
            sleep(wait)
        if clock() >= t1:
            ms.append((t1 - nxt) * 1e3)
            dropped += 1
        else:
            request()
            ms.append((clock() - nxt) * 1e3)
        nxt += rng.expovariate(rate)
    return {"rate": rate, "secs": t1 - t0, "done": len(ms) - dropped, "dropped": dropped,
            "ms": ms}


def service_ms(request, secs, clock=time.monotonic):
    """The median time of a request served closed-loop for secs."""
    ms, end = [], clock() + secs
    while clock() < end:
        t = clock()
        request()
        ms.append((clock() - t) * 1e3)
    ms.sort()
    return ms[len(ms) // 2]


def serve(request, secs, rates_spec, sync, clock=time.monotonic, sleep=time.sleep):
    """The serve job's loop around request() (which waits for its result)."""
    kind, rates = parse_rates(rates_spec)
    med = service_ms(request, 2.0 if kind == "auto" else 0.2, clock)
    if kind == "auto":
        rates = [f * 1e3 / med for f in rates]
    sync.ready()
    rng = random.Random(SEED)
    start = clock()
    serve_phase(request, rates[0], start, start + WARM_S, rng, clock, sleep)
    length = secs / len(rates)
    phases = [serve_phase(request, r, start + WARM_S + i * length,
                          start + WARM_S + (i + 1) * length, rng, clock, sleep)
              for i, r in enumerate(rates)]
    sync.mark("done")
    return {"role": "serve", "secs": secs, "service_ms": med, "phases": phases}


class Stepper:
    """Steps kept two deep on the device, each between two timed events (timer: event(),
    record(e), wait(e), elapsed(a, b) in ms), counting those of the window.  It also
    counts the host's time inside step(), queueing the step's work: a job whose queueing
    takes as long as its steps is bound by its host thread, not by the device, which is
    what a job faster alone through detshare than natively must show (issue 28)."""

    def __init__(self, step, timer, clock=time.monotonic):
        self.step, self.timer, self.clock = step, timer, clock
        self.s = [timer.event(), timer.event()]
        self.e = [timer.event(), timer.event()]
        self.w0 = timer.event()
        self.i, self.busy_ms, self.wall_ms, self.done = 0, 0.0, 0.0, 0
        self.queue_s, self.queued = 0.0, 0

    def once(self, counted):
        """Launch a step and wait for the one before; count that one when counted."""
        cur = self.i % 2
        prev = 1 - cur
        self.timer.record(self.s[cur])
        t = self.clock()
        self.step()
        if counted:
            self.queue_s += self.clock() - t
            self.queued += 1
        self.timer.record(self.e[cur])
        self.i += 1
        if self.i == 1:
            return
        self.timer.wait(self.e[prev])
        if counted:
            self.busy_ms += self.timer.elapsed(self.s[prev], self.e[prev])
            self.wall_ms = self.timer.elapsed(self.w0, self.e[prev])
            self.done += 1


def run_steps(step, secs, sync, timer, clock=time.monotonic, cpu=time.thread_time):
    """The steps job's loop around step() (which only queues work).  queue_ms: the host's
    time queueing a step; cpu_ms: the CPU time the loop's thread spent a step."""
    p = Stepper(step, timer, clock)
    p.once(False)
    sync.ready()
    start = clock()
    t0, c0, opened = None, None, 0
    while clock() < start + WARM_S + secs:
        if t0 is None and clock() >= start + WARM_S:
            # The window opens behind the step in flight: the first step counted is the
            # next, and the wall time starts where it was queued.
            timer.record(p.w0)
            t0, c0 = clock(), cpu()
        opened += t0 is not None
        p.once(opened > 1)
    if t0 is None:
        raise RuntimeError("no step ended within the window: make it longer")
    took, cpu_s = clock() - t0, cpu() - c0
    sync.mark("done")
    end = clock() + LINGER_S
    while sync.others_measuring() and clock() < end:
        p.once(False)
    return {"role": "steps", "secs": took, "steps": p.done, "steps_per_s": p.done / took,
            "busy": p.busy_ms / p.wall_ms if p.wall_ms > 0 else 0.0,
            "queue_ms": 1e3 * p.queue_s / p.queued if p.queued else 0.0,
            "cpu_ms": 1e3 * cpu_s / p.done if p.done else 0.0}


# The jobs (PyTorch from here on).


class CudaTimer:
    def __init__(self, torch):
        self.torch = torch

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def record(self, e):
        e.record()

    def wait(self, e):
        e.synchronize()

    def elapsed(self, a, b):
        return a.elapsed_time(b)


def _sgd_step(torch, loss_of, opt):
    def step():
        with torch.autocast("cuda", torch.bfloat16):
            loss = loss_of()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def job_serve(torch, kw):
    b = int(kw.get("batch", 32))
    if kw.get("model") == "mlp":
        # scale's light service: no cuDNN, a quick start for many tenants at once.
        layers = []
        for _ in range(4):
            layers += [torch.nn.Linear(4096, 4096), torch.nn.ReLU()]
        m = torch.nn.Sequential(*layers).cuda().to(torch.bfloat16).eval()
        x = torch.randn(b, 4096, device="cuda", dtype=torch.bfloat16)
    else:
        import torchvision

        torch.backends.cudnn.benchmark = True
        m = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
        m = m.to(torch.bfloat16).eval()
        x = torch.randn(b, 3, 224, 224, device="cuda", dtype=torch.bfloat16)
        x = x.contiguous(memory_format=torch.channels_last)

    def request():
        with torch.inference_mode():
            m(x)
        torch.cuda.synchronize()

    for _ in range(10):
        request()
    return "serve", request


def job_gemm(torch, kw):
    n, count = int(kw.get("n", 8192)), int(kw.get("count", 4))
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)

    def step():
        for _ in range(count):
            torch.mm(a, b, out=c)
    return "steps", step


def job_resnet_train(torch, kw):
    import torchvision

    torch.backends.cudnn.benchmark = True
    b = int(kw.get("batch", 64))
    m = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x = torch.randn(b, 3, 224, 224, device="cuda").contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (b,), device="cuda")
    return "steps", _sgd_step(torch, lambda: torch.nn.functional.cross_entropy(m(x), y), opt)


def job_mlp_train(torch, kw):
    w, b, n = int(kw.get("width", 8192)), int(kw.get("batch", 8192)), int(kw.get("layers", 4))
    layers = []
    for _ in range(n):
        layers += [torch.nn.Linear(w, w, device="cuda"), torch.nn.ReLU()]
    m = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(m.parameters(), lr=1e-4)
    x = torch.randn(b, w, device="cuda")
    return "steps", _sgd_step(torch, lambda: m(x).float().square().mean(), opt)


def job_triad(torch, kw):
    elems = int(kw.get("mib", 1024)) * (1 << 20) // 4
    k = int(kw.get("kernels", 8))
    a = torch.empty(elems, device="cuda")
    b, c = torch.rand(elems, device="cuda"), torch.rand(elems, device="cuda")

    def step():
        for _ in range(k):
            torch.add(b, c, alpha=2.0, out=a)
    return "steps", step


def job_adam(torch, kw):
    total = int(kw.get("mparams", 256)) * 1000000
    params = [torch.nn.Parameter(torch.rand(total // 8, device="cuda")) for _ in range(8)]
    for p in params:
        p.grad = torch.rand_like(p)
    opt = torch.optim.Adam(params, lr=1e-3, foreach=True)
    return "steps", opt.step


def job_lstm_train(torch, kw):
    lstm = torch.nn.LSTM(128, 256, num_layers=2, batch_first=True, device="cuda")
    head = torch.nn.Linear(256, 128, device="cuda")
    opt = torch.optim.Adam(list(lstm.parameters()) + list(head.parameters()), lr=1e-3)
    x = torch.randn(32, 64, 128, device="cuda")

    def step():
        out, _ = lstm(x)
        loss = (head(out) - x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return "steps", step


def job_small_mlp(torch, kw):
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
    m = torch.nn.Sequential(*layers).cuda()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    x = torch.randn(64, 256, device="cuda")

    def step():
        loss = m(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return "steps", step


def job_llm_serve(torch, kw):
    import llm

    try:
        eng = llm.Decoder(torch, int(kw.get("max_batch", 16)))
    except RuntimeError as e:  # a capture the driver refused: eager steps, said so
        print("llm-serve: no CUDA graphs (%s)" % e, file=sys.stderr, flush=True)
        torch.cuda.synchronize()
        eng = llm.Decoder(torch, int(kw.get("max_batch", 16)), graphs=False)
    eng.prefill(0, [int(kw.get("plen", 384))] * 2)  # kernels loaded, cuBLAS's choices made
    for _ in range(3):
        eng.decode(2)
    torch.cuda.synchronize()
    return "llm", eng


def job_det(torch, kw):
    import det

    comp = det.TorchCompute(torch, int(kw.get("slices", 4)))
    comp(False)
    comp(True)
    return "det", comp


JOBS = {"serve": job_serve, "gemm": job_gemm, "resnet-train": job_resnet_train,
        "mlp-train": job_mlp_train, "triad": job_triad, "adam": job_adam,
        "lstm-train": job_lstm_train, "small-mlp": job_small_mlp, "llm-serve": job_llm_serve,
        "det": job_det}


def main(argv):
    if len(argv) < 3 or argv[1] not in JOBS:
        sys.exit("usage: workloads.py %s SECS [KEY=VALUE...]" % "|".join(JOBS))
    secs = float(argv[2])
    kw = dict(a.split("=", 1) for a in argv[3:])
    import torch

    torch.manual_seed(0)
    kind, fn = JOBS[argv[1]](torch, kw)
    sync = Sync(os.environ.get("DS_EVAL_SYNC"))
    if kind == "serve":
        out = serve(fn, secs, kw.get("rates", "auto:0.3,0.6"), sync)
    elif kind == "llm":
        import llm

        out = llm.run(fn, kw, secs, WARM_S, sync, time.monotonic, time.sleep)
        out.update(graphs=bool(fn.graphs), params_b=round(fn.params_b, 3))
    elif kind == "det":
        import det

        sync.ready()
        t0 = time.monotonic()
        out = det.trials(fn, int(kw.get("trials", 20)), int(kw.get("slices", 4)))
        sync.mark("done")
        out.update(role="det", secs=time.monotonic() - t0)
    else:
        # Warm-up: cuDNN's benchmark, cuBLAS's heuristics, the caching allocator.
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        out = run_steps(fn, secs, sync, CudaTimer(torch))
    out["job"] = argv[1]
    out["args"] = kw
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
