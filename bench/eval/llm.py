"""bench/eval's LLM serving job (workloads.py llm-serve; on the sim standin.py's): a
serving loop with continuous batching over a bursty arrival trace, and on a GPU the model
it serves, a Llama-like decoder with random weights.

The trace: requests arriving as a gamma renewal process (coefficient of variation cv, 2 by
default: bursts and lulls rather than Poisson's even spread) at rate a second, each with a
prompt of plen tokens and an answer of olen tokens on average (uniform from half to one
and a half times), from a fixed seed, so that every mode serves the same requests.

The loop (serve_llm) is the plain continuous-batching scheduler of serving engines: at
each iteration the requests that have arrived join the running batch (up to max_batch)
through one batched prefill, which gives each its first token; otherwise every running
request gets its next token from one decode step.  A prefill therefore stalls the running
requests' next token, as it does in such engines.  A request leaves when its answer is
complete; the last row of the batch takes its place (engine.move), so the batch's rows
stay 0..n-1.

What it measures of the requests arriving in the window: TTFT (arrival to first token,
queueing included; a request not started by the window's end counts until then, a lower
bound) and the time per output token (TPOT: each token's time since the request's token
before it, prefill stalls included), and the tokens produced in the window a second.

The engine's interface (the fakes of test_llm.py, the PyTorch decoder below, standin.py's
kernels): prefill(row0, prompt_lens) and decode(n) return once their tokens are on the
host; move(src, dst).  Plain Python down to the decoder.
"""

import random
from collections import deque

from stats import percentile

SEED = 20261127


class Request:
    def __init__(self, arrival, plen, olen):
        self.arrival, self.plen, self.olen = arrival, plen, olen
        self.times = []  # each token's time


def trace(rate, secs, seed=SEED, cv=2.0, plen=384, olen=96):
    """Requests arriving over [0, secs) at rate a second on average (gamma gaps of
    coefficient of variation cv), prompt and answer lengths around plen and olen."""
    rng = random.Random(seed)
    shape = 1.0 / (cv * cv)
    out, t = [], 0.0
    while True:
        t += rng.gammavariate(shape, 1.0 / (rate * shape))
        if t >= secs:
            return out
        out.append(Request(t, rng.randint(max(1, plen // 2), plen * 3 // 2),
                           rng.randint(max(2, olen // 2), max(2, olen * 3 // 2))))


def serve_llm(engine, reqs, t0, t1, max_batch, clock, sleep):
    """Serve reqs (arrivals relative to t0) until t1 by continuous batching; returns the
    counts of prefills and decode steps and the decode batches' mean size."""
    waiting, running = deque(), []
    nxt, prefills, steps, batch_sum = 0, 0, 0, 0
    while clock() < t1:
        now = clock()
        while nxt < len(reqs) and t0 + reqs[nxt].arrival <= now:
            waiting.append(reqs[nxt])
            nxt += 1
        if not running and not waiting:
            if nxt >= len(reqs):
                break
            sleep(min(t0 + reqs[nxt].arrival, t1) - now)
            continue
        if waiting and len(running) < max_batch:
            new = [waiting.popleft() for _ in range(min(len(waiting), max_batch - len(running)))]
            engine.prefill(len(running), [r.plen for r in new])
            prefills += 1
            t = clock()
            for r in new:
                r.times.append(t)
            running += new
        else:
            engine.decode(len(running))
            steps += 1
            batch_sum += len(running)
            t = clock()
            for r in running:
                r.times.append(t)
        for i in reversed(range(len(running))):
            if len(running[i].times) >= running[i].olen:
                last = running.pop()
                if i < len(running):
                    running[i] = last
                    engine.move(len(running), i)
    return {"prefills": prefills, "decode_steps": steps,
            "batch_mean": batch_sum / steps if steps else 0.0}


def measure(reqs, t0, w0, t1):
    """The figures of the requests arriving in [w0, t1) (times absolute, arrivals relative
    to t0): {"requests", "finished", "unstarted", "ttft_ms", "tpot_ms"}, and the tokens
    of every request produced in [w0, t1) a second ("tokens_per_s")."""
    mine = [r for r in reqs if w0 <= t0 + r.arrival < t1]
    ttft, tpot = [], []
    for r in mine:
        ttft.append(((r.times[0] if r.times else t1) - (t0 + r.arrival)) * 1e3)
        tpot += [(b - a) * 1e3 for a, b in zip(r.times, r.times[1:])]
    tokens = sum(1 for r in reqs for t in r.times if w0 <= t < t1)
    return {"requests": len(mine), "finished": sum(len(r.times) >= r.olen for r in mine),
            "unstarted": sum(not r.times for r in mine), "tokens_per_s": tokens / (t1 - w0),
            "ttft_ms": [round(x, 3) for x in ttft], "tpot_ms": [round(x, 3) for x in tpot]}


def parse_slo(spec):
    """("auto", k) for "auto:K" (the SLO is K times the TPOT p50 measured), else
    ("fixed", ms), or (None, None) for "none"."""
    if spec in (None, "", "none"):
        return None, None
    if str(spec).startswith("auto:"):
        return "auto", float(spec[5:])
    return "fixed", float(spec)


def run(engine, kw, secs, warm_s, sync, clock, sleep):
    """The whole job around engine: the trace over the warm-up and the window, served;
    the JSON object it prints (workloads.py says its form)."""
    rate, max_batch = float(kw.get("rate", 60)), int(kw.get("max_batch", 16))
    reqs = trace(rate, warm_s + secs, cv=float(kw.get("cv", 2.0)),
                 plen=int(kw.get("plen", 384)), olen=int(kw.get("olen", 96)))
    sync.ready()
    t0 = clock()
    loop = serve_llm(engine, reqs, t0, t0 + warm_s + secs, max_batch, clock, sleep)
    out = measure(reqs, t0, t0 + warm_s, t0 + warm_s + secs)
    sync.mark("done")
    out.update(loop, role="llm", secs=secs, rate=rate, max_batch=max_batch)
    kind, v = parse_slo(kw.get("slo"))
    p50 = percentile(out["tpot_ms"], 50) if out["tpot_ms"] else None
    out["slo_ms"] = v if kind == "fixed" else None
    if kind == "auto" and p50 is not None:
        out["auto_slo"] = round(v * p50, 4)  # what the calibration keeps as slo
    return out


def summary(d):
    """The cell's metrics of an llm job's output d."""
    m = {"ttft_p50_ms": percentile(d["ttft_ms"], 50), "ttft_p99_ms": percentile(d["ttft_ms"], 99),
         "tpot_p50_ms": percentile(d["tpot_ms"], 50), "tpot_p99_ms": percentile(d["tpot_ms"], 99),
         "tokens_per_s": d["tokens_per_s"], "batch_mean": d["batch_mean"],
         "requests": d["requests"], "unstarted": d["unstarted"]}
    if d.get("slo_ms") and d["tpot_ms"]:
        m["slo_viol"] = sum(x > d["slo_ms"] for x in d["tpot_ms"]) / len(d["tpot_ms"])
    if d.get("auto_slo") is not None:
        m["auto_slo"] = d["auto_slo"]
    if m["tpot_p50_ms"] is None:
        raise ValueError("no token after a first one in the window")
    return m


# The decoder (PyTorch).  Llama's shape at about a billion parameters: 16 layers of width
# 2048, 32 query heads over 8 key/value heads (grouped-query attention), SwiGLU of 8192,
# RMSNorm, rotary positions, a 32 000-token vocabulary; bf16, random weights.  Its own
# code rather than transformers' model: its KV cache is one static tensor whose batch rows
# are the serving loop's rows, so a decode step is one fixed sequence of kernels per batch
# size, captured once in a CUDA graph (an eager decode step of a billion parameters is
# hundreds of launches, which left the eager decoder bound by its host).

SHAPE = {"layers": 16, "hidden": 2048, "heads": 32, "kv_heads": 8, "ffn": 8192,
         "vocab": 32000, "max_len": 1024}


class Decoder:
    """The engine serve_llm drives, on the GPU."""

    def __init__(self, torch, max_batch, shape=None, graphs=True):
        s = dict(SHAPE, **(shape or {}))
        self.t, self.s, self.B = torch, s, max_batch
        H, L, D = s["hidden"], s["layers"], s["hidden"] // s["heads"]
        self.D, self.kvh, self.g = D, s["kv_heads"], s["heads"] // s["kv_heads"]
        kv = self.kvh * D
        dev, bf = "cuda", torch.bfloat16

        def w(*shape):
            return (torch.randn(*shape, device=dev) * 0.02).to(bf)
        self.embed, self.head = w(s["vocab"], H), w(H, s["vocab"])
        self.layers = [{"qkv": w(H, H + 2 * kv), "o": w(H, H), "up": w(H, 2 * s["ffn"]),
                        "down": w(s["ffn"], H), "n1": torch.ones(H, device=dev, dtype=bf),
                        "n2": torch.ones(H, device=dev, dtype=bf)} for _ in range(L)]
        self.norm = torch.ones(H, device=dev, dtype=bf)
        self.kc = torch.zeros(L, max_batch, self.kvh, s["max_len"], D, device=dev, dtype=bf)
        self.vc = torch.zeros_like(self.kc)
        inv = 1.0 / (10000 ** (torch.arange(0, D, 2, device=dev).float() / D))
        ang = torch.outer(torch.arange(s["max_len"], device=dev).float(), inv)
        self.cos, self.sin = ang.cos().to(bf), ang.sin().to(bf)
        self.pos = torch.zeros(max_batch, dtype=torch.long)  # each row's length, on the host
        self.last = torch.zeros(max_batch, dtype=torch.long)  # each row's last token
        self.graphs = {}
        self.params_b = sum(x.numel() for x in [self.embed, self.head] +
                            [v for lay in self.layers for v in lay.values()]) / 1e9
        if graphs:
            self.capture()

    def rms(self, x, wt):
        t = self.t
        x32 = x.float()
        return (x32 * t.rsqrt(x32.square().mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * wt

    def rope(self, x, pos):
        """x [..., n, D] at positions pos (broadcast to x's n)."""
        c, s = self.cos[pos], self.sin[pos]
        a, b = x[..., 0::2], x[..., 1::2]
        return self.t.stack((a * c - b * s, a * s + b * c), -1).flatten(-2)

    def mlp(self, x, lay):
        gate, up = (x @ lay["up"]).chunk(2, -1)
        return (self.t.nn.functional.silu(gate) * up) @ lay["down"]

    def step(self, tok, pos):
        """One decode step of rows 0..n-1 (tok, pos: [n] on the device): their next tokens."""
        t, n, kv = self.t, tok.shape[0], self.kvh * self.D
        x = self.embed[tok]
        rows = t.arange(n, device=tok.device)
        mask = t.arange(self.s["max_len"], device=tok.device)[None, :] <= pos[:, None]
        for i, lay in enumerate(self.layers):
            h = self.rms(x, lay["n1"]) @ lay["qkv"]
            q = self.rope(h[:, :-2 * kv].view(n, self.kvh * self.g, self.D), pos[:, None])
            k = self.rope(h[:, -2 * kv:-kv].view(n, self.kvh, self.D), pos[:, None])
            self.kc[i][rows, :, pos] = k
            self.vc[i][rows, :, pos] = h[:, -kv:].view(n, self.kvh, self.D)
            q = q.view(n, self.kvh, self.g, self.D)
            a = (q @ self.kc[i, :n].transpose(-1, -2)).float() * self.D ** -0.5
            a = a.masked_fill(~mask[:, None, None, :], float("-inf")).softmax(-1)
            o = (a.to(q.dtype) @ self.vc[i, :n]).reshape(n, -1)
            x = x + o @ lay["o"]
            x = x + self.mlp(self.rms(x, lay["n2"]), lay)
        return (self.rms(x, self.norm) @ self.head).argmax(-1)

    def capture(self):
        """A CUDA graph of step() for every batch size, on static inputs."""
        t = self.t
        for n in range(1, self.B + 1):
            io = {"tok": t.zeros(n, dtype=t.long, device="cuda"),
                  "pos": t.zeros(n, dtype=t.long, device="cuda")}
            side = t.cuda.Stream()
            side.wait_stream(t.cuda.current_stream())
            with t.cuda.stream(side):
                for _ in range(2):
                    self.step(io["tok"], io["pos"])
            t.cuda.current_stream().wait_stream(side)
            g = t.cuda.CUDAGraph()
            with t.cuda.graph(g):
                io["out"] = self.step(io["tok"], io["pos"])
            self.graphs[n] = (g, io)
        t.cuda.synchronize()

    def prefill(self, row0, lens):
        t, n, T, kv = self.t, len(lens), max(lens), self.kvh * self.D
        gen = t.Generator().manual_seed(row0 * 7919 + T)
        tok = t.randint(0, self.s["vocab"], (n, T), generator=gen).cuda()
        lens_d = t.tensor(lens, device="cuda")
        x = self.embed[tok]
        pos = t.arange(T, device="cuda")
        for i, lay in enumerate(self.layers):
            h = self.rms(x, lay["n1"]) @ lay["qkv"]
            q = self.rope(h[..., :-2 * kv].view(n, T, -1, self.D).transpose(1, 2), pos)
            k = self.rope(h[..., -2 * kv:-kv].view(n, T, self.kvh, self.D).transpose(1, 2), pos)
            v = h[..., -kv:].view(n, T, self.kvh, self.D).transpose(1, 2)
            self.kc[i, row0:row0 + n, :, :T] = k
            self.vc[i, row0:row0 + n, :, :T] = v
            o = t.nn.functional.scaled_dot_product_attention(
                q, k.repeat_interleave(self.g, 1), v.repeat_interleave(self.g, 1), is_causal=True)
            x = x + o.transpose(1, 2).reshape(n, T, -1) @ lay["o"]
            x = x + self.mlp(self.rms(x, lay["n2"]), lay)
        last = x[t.arange(n, device="cuda"), lens_d - 1]
        first = (self.rms(last, self.norm) @ self.head).argmax(-1).cpu()
        self.last[row0:row0 + n] = first
        self.pos[row0:row0 + n] = t.tensor(lens)

    def decode(self, n):
        tok, pos = self.last[:n].clone(), self.pos[:n].clamp(max=self.s["max_len"] - 1)
        if n in self.graphs:
            g, io = self.graphs[n]
            io["tok"].copy_(tok, non_blocking=True)
            io["pos"].copy_(pos, non_blocking=True)
            g.replay()
            out = io["out"].cpu()
        else:
            out = self.step(tok.cuda(), pos.cuda()).cpu()
        self.last[:n] = out
        self.pos[:n] += 1

    def move(self, src, dst):
        self.kc[:, dst].copy_(self.kc[:, src])
        self.vc[:, dst].copy_(self.vc[:, src])
        self.last[dst], self.pos[dst] = self.last[src], self.pos[src]
