"""Issue 9's determinism target, trial by trial: decode tokens and training losses, to
compare a run beside a neighbour under each policy with a run alone natively
(bench/coloc/determinism.sh).

Usage: python3 trials.py decode N    N greedy generations by jobs.py's decoder (bf16),
                                     32 new tokens each, from a prompt of its own
       python3 trials.py train N     N runs of 10 Adam steps of a small GPT-2 from the
                                     same initial weights, under PyTorch's deterministic
                                     settings

One JSON line per trial, {"trial", "digest", "tokens"} (for train, the losses as
float.hex()), then "done".
"""
import hashlib
import json
import os
import sys

import torch

import jobs


def line(trial, values):
    d = hashlib.sha256(" ".join(str(v) for v in values).encode()).hexdigest()[:32]
    print(json.dumps({"trial": trial, "digest": d, "tokens": values}), flush=True)


def decode(trials):
    torch.manual_seed(0)
    m = jobs.llama()
    with torch.no_grad():
        for t in range(trials):
            g = torch.Generator(device="cuda").manual_seed(100 + t)
            ids = torch.randint(0, 32000, (1, 32), device="cuda", generator=g)
            out = m.generate(ids, max_new_tokens=32, min_new_tokens=32, do_sample=False)
            line(t, out[0, 32:].tolist())


def train(trials):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.use_deterministic_algorithms(True)
    cfg = GPT2Config(n_layer=4, n_head=4, n_embd=256, n_positions=256, vocab_size=8192)
    for t in range(trials):
        torch.manual_seed(2)
        model = GPT2LMHeadModel(cfg).cuda()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        ids = torch.randint(0, cfg.vocab_size, (8, 128), device="cuda")
        losses = []
        for _ in range(10):
            opt.zero_grad(set_to_none=True)
            loss = model(ids, labels=ids).loss
            loss.backward()
            opt.step()
            losses.append(loss.item().hex())
        line(t, losses)


if __name__ == "__main__":
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    {"decode": decode, "train": train}[sys.argv[1]](int(sys.argv[2]))
    print("done", flush=True)
