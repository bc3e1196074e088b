"""bench/eval's determinism job (workloads.py det; on the sim standin.py's): trials of
two computations whose results are compared bit for bit across processes and modes, and
the same computations sliced, as kernel-slicing systems run them.

A trial is
  - an LM head: bf16 hidden states [tokens, hidden] times a bf16 vocabulary matrix
    [hidden, vocab], the logits in fp32, softmax, and each token's argmax;
  - a training run: 20 SGD steps of a small MLP from fixed weights on fixed data, its
    loss after each step.
Each gives a fingerprint of its exact bits (logits and probabilities; the 20 losses).  The
job prints every trial's fingerprints and the first trial's tokens; report.py compares
them with the native alone run's (experiments.py's det_derive): under any sharing that
changes nothing a kernel computes, every trial of every mode has the same bits.

The slicing baseline, in every trial beside it: the same LM head with the product's
reduction (K) split into `slices` chunks computed by separate products and summed, and the
same training with its first layer's product split so; a slicing system that splits a
kernel's work into launches changes the summation order in this way.  Against the unsliced
result of the same trial it counts the trials whose bits differ, the tokens whose argmax
differs (token mismatches), the tokens whose top two swapped places (argmax inversions,
a subset of those), and the largest loss difference.

Compute functions (PyTorch's below, standin.py's numpy ones) return, for sliced=False or
True, {"lm": fingerprint, "loss": fingerprint, "tokens": [...], "top2": [[a, b]...],
"losses": [...]}.
"""


def trials(compute, n, sliced):
    """Run n trials of compute; the job's output (less role and secs)."""
    out = {"trials": n, "lm": [], "loss": [], "tokens": None, "slices": sliced}
    drift = {"bitwise": 0, "loss_bitwise": 0, "tokens": 0, "token_trials": 0,
             "inversions": 0, "loss_drift": 0.0}
    for i in range(n):
        a = compute(False)
        out["lm"].append(a["lm"])
        out["loss"].append(a["loss"])
        if i == 0:
            out["tokens"] = list(a["tokens"])
        if sliced:
            b = compute(True)
            compare(a, b, drift)
    if sliced:
        out["sliced"] = drift
    return out


def compare(a, b, drift):
    """Add b's (sliced) differences from a (unsliced) to drift."""
    drift["bitwise"] += a["lm"] != b["lm"]
    drift["loss_bitwise"] += a["loss"] != b["loss"]
    miss = sum(x != y for x, y in zip(a["tokens"], b["tokens"]))
    drift["tokens"] += miss
    drift["token_trials"] += miss > 0
    drift["inversions"] += sum(x[0] == y[1] and x[1] == y[0] for x, y in zip(a["top2"], b["top2"]))
    drift["loss_drift"] = max([drift["loss_drift"]] +
                              [abs(x - y) for x, y in zip(a["losses"], b["losses"])])


def summary(d):
    """The cell's metrics of a det job's output d: the slicing baseline's counts, how many
    distinct fingerprints its own trials gave, and the fingerprints themselves (for
    det_derive to compare with the reference's)."""
    m = {"trials": d["trials"], "lm_distinct": len(set(d["lm"])),
         "loss_distinct": len(set(d["loss"])), "lm_prints": d["lm"], "loss_prints": d["loss"],
         "tokens": d["tokens"]}
    for k, v in (d.get("sliced") or {}).items():
        m["sliced_" + k] = v
    return m


def against(cell, ref):
    """Mismatches of a cell's det metrics against the reference cell's (its first trial):
    trials whose LM-head bits differ, whose loss bits differ, and the first trial's tokens
    whose argmax differs."""
    lm0, loss0 = ref["lm_prints"][0], ref["loss_prints"][0]
    return {"vs_native_lm": sum(x != lm0 for x in cell["lm_prints"]),
            "vs_native_loss": sum(x != loss0 for x in cell["loss_prints"]),
            "vs_native_tokens": sum(x != y for x, y in zip(cell["tokens"], ref["tokens"]))}


# The computations (PyTorch).

SHAPE = {"tokens": 512, "hidden": 2048, "vocab": 32000, "width": 1024, "batch": 256,
         "steps": 20}
LR = 0.005


def fingerprint(torch, *xs):
    """A 64-bit fingerprint of the tensors' exact bits, computed on the device: their
    32-bit words times fixed odd multipliers, summed modulo 2^64 (one changed word changes
    it)."""
    total = 0
    for x in xs:
        w = x.contiguous().view(-1).view(torch.int32).to(torch.int64)
        g = torch.Generator(device=w.device).manual_seed(w.numel())
        mult = torch.randint(0, 2 ** 62, w.shape, device=w.device, generator=g) * 2 + 1
        total = (total + int((w * mult).sum().item())) % 2 ** 64
    return "%016x" % total


class TorchCompute:
    """The trial's two computations on the GPU (fixed inputs, built once)."""

    def __init__(self, torch, slices, shape=None):
        s = dict(SHAPE, **(shape or {}))
        self.t, self.s, self.k = torch, s, slices
        g = torch.Generator(device="cuda").manual_seed(1)
        self.x = (torch.randn(s["tokens"], s["hidden"], device="cuda", generator=g)).to(torch.bfloat16)
        self.w = (torch.randn(s["hidden"], s["vocab"], device="cuda", generator=g) * 0.02).to(torch.bfloat16)
        self.data = torch.randn(s["batch"], s["width"], device="cuda", generator=g)
        self.target = torch.randn(s["batch"], 1, device="cuda", generator=g)
        self.w0 = [torch.randn(s["width"], s["width"], device="cuda", generator=g) * 0.03,
                   torch.randn(s["width"], 1, device="cuda", generator=g) * 0.03]

    def mm(self, a, b, sliced):
        """a @ b, in one product or as the sum of self.k products over chunks of K."""
        if not sliced:
            return a @ b
        out = None
        for ka, kb in zip(a.chunk(self.k, -1), b.chunk(self.k, 0)):
            part = (ka @ kb).float()
            out = part if out is None else out + part
        return out.to(a.dtype)

    def __call__(self, sliced):
        t = self.t
        logits = self.mm(self.x, self.w, sliced).float()
        probs = logits.softmax(-1)
        top2 = probs.topk(2, -1).indices
        w1, w2 = [p.clone().requires_grad_() for p in self.w0]
        losses = []
        for _ in range(self.s["steps"]):
            h = t.relu(self.mm(self.data, w1, sliced))
            loss = (h @ w2 - self.target).square().mean()
            g1, g2 = t.autograd.grad(loss, [w1, w2])
            # 0.005: at 0.05 the losses grew to ~1e15 (H200, 2026-11-27), and a drift
            # between runs that diverge says nothing; at 0.005 the loss falls (1.7 to 0.4).
            with t.no_grad():
                w1 -= LR * g1
                w2 -= LR * g2
            losses.append(loss.detach())
        lt = t.stack(losses)
        return {"lm": fingerprint(t, logits, probs), "loss": fingerprint(t, lt),
                "tokens": top2[:, 0].tolist(), "top2": top2.tolist(), "losses": lt.tolist()}
