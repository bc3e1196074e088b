"""Semantic determinism on SM partitions: an LM head (GEMM onto a 128 256-token
vocabulary, softmax, argmax) in bf16 and fp16, repeated over many trials with inputs
that change from trial to trial.  Prints one JSON line per trial with a digest of the
logits' bytes and the argmax tokens, so runs on different partitions (or moved between
them mid-run) can be compared trial by trial with a native run.

Usage: python3 determinism.py lmhead [TRIALS]     the trials, then "done"
       python3 determinism.py idle                 a tenant that only holds a context
                                                   (it makes --policy static split the
                                                   GPU) until it is killed
"""
import hashlib
import json
import sys
import time

import torch

HIDDEN, VOCAB, ROWS = 4096, 128256, 8


def lmhead(trials):
    torch.manual_seed(0)
    weights = {dt: (torch.randn(VOCAB, HIDDEN, device="cuda") * 0.02).to(dt)
               for dt in (torch.bfloat16, torch.float16)}
    base = torch.randn(ROWS, HIDDEN, device="cuda")
    for t in range(trials):
        h = hashlib.sha256()
        tokens = []
        for dt, w in weights.items():
            x = (base + t * 1e-3).to(dt)
            logits = x @ w.t()
            probs = torch.softmax(logits.float(), dim=-1)
            tok = torch.argmax(probs, dim=-1)
            h.update(logits.view(torch.int16).cpu().numpy().tobytes())
            h.update(probs.cpu().numpy().tobytes())
            tokens += tok.tolist()
        print(json.dumps({"trial": t, "digest": h.hexdigest()[:32], "tokens": tokens}),
              flush=True)
    print("done", flush=True)


def idle():
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    print("ready", flush=True)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    if sys.argv[1] == "lmhead":
        lmhead(int(sys.argv[2]) if len(sys.argv) > 2 else 100)
    else:
        idle()
